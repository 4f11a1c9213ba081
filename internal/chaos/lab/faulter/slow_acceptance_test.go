//go:build acceptance

package faulter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/acceptance"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// dropTopics deletes res's topics: saturated runs of 10 KiB records write
// gigabytes (one repetition left 22 GB in the lab's directory and filled
// the disk of a 2-core machine), and a lab run keeps its topics.
func dropTopics(t *testing.T, lab *labtest.Lab, res *chaos.Result) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	var topics []string
	for _, p := range res.Partitioners {
		topics = append(topics, p.Topic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	require.NoError(t, err)
}

// phaseOf returns the named partitioner's phase of res.
func phaseOf(t *testing.T, res *chaos.Result, name, phase string) *chaos.PhaseResult {
	t.Helper()
	for _, p := range res.Partitioners {
		if p.Name == name {
			require.NotNil(t, p.Phases[phase], "%s %s", name, phase)
			return p.Phases[phase]
		}
	}
	t.Fatalf("no partitioner %s", name)
	return nil
}

// bestOf is the best of sqf's and node's figure over the default's in one
// phase of res: the larger ratio when higher is better, the smaller one
// otherwise.
func bestOf(t *testing.T, res *chaos.Result, phase string, higher bool, of func(*chaos.PhaseResult) float64) float64 {
	t.Helper()
	def := of(phaseOf(t, res, "default", phase))
	sqf, node := of(phaseOf(t, res, "sqf", phase))/def, of(phaseOf(t, res, "node", phase))/def
	if higher {
		return max(sqf, node)
	}
	return min(sqf, node)
}

// TestAcceptLabSlowBroker is issue 24's goal on the 4-broker lab with
// broker 2 capped at 2MB/s (chaos/slow-broker-4.yaml's set-up, shorter):
// saturated, sqf or node reaches at least 1.5x franz-go's default's
// throughput with the broker slow and at least 0.97x at rest; rate-capped
// (1MB/s per producer), at most 0.6x its produce p99 with the broker slow.
// ACCEPT_REPEAT times each, one partitioner after another. Measured once
// (2026-11-26, a loaded 2-core machine): 1.55x, 1.12x and 0.63x the
// default's in the first repetition; the second ran out of disk (the
// topics are now deleted after each run).
func TestAcceptLabSlowBroker(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 4})
	parts := []string{"default", "node", "sqf"}
	tput := func(p *chaos.PhaseResult) float64 { return p.ThroughputMBps }
	p99 := func(p *chaos.PhaseResult) float64 { return p.LatencyMS.P99 }
	var slowTput, restTput, slowP99 []float64
	for i := range acceptance.Repeat(t) {
		sat := slowRun(t, lab, slowExp{topic: fmt.Sprintf("accslow%d", i), spec: "broker-2:bandwidth=2MB/s", partitioners: parts,
			sequential: true, warmup: 3 * time.Second, phase: 10 * time.Second})
		slowTput = append(slowTput, bestOf(t, sat, "fault", true, tput))
		restTput = append(restTput, bestOf(t, sat, "before", true, tput))
		dropTopics(t, lab, sat)
		capped := slowRun(t, lab, slowExp{topic: fmt.Sprintf("accslowcap%d", i), spec: "broker-2:bandwidth=2MB/s", partitioners: parts,
			sequential: true, rate: 1_000_000, warmup: 3 * time.Second, phase: 10 * time.Second})
		slowP99 = append(slowP99, bestOf(t, capped, "fault", false, p99))
		dropTopics(t, lab, capped)
		t.Logf("run %d: slow throughput %.2fx, at rest %.2fx, rate-capped slow p99 %.2fx the default's (best of sqf, node)", i+1, slowTput[i], restTput[i], slowP99[i])
	}
	acceptance.Check(t, "slow-broker-4/saturated/slow-throughput-vs-default", "x", acceptance.AtLeast, 1.5, slowTput)
	acceptance.Check(t, "slow-broker-4/saturated/at-rest-throughput-vs-default", "x", acceptance.AtLeast, 0.97, restTput)
	acceptance.Check(t, "slow-broker-4/rate-capped/slow-p99-vs-default", "x", acceptance.AtMost, 0.6, slowP99)
}
