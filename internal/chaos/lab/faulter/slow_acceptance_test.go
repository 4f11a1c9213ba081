//go:build acceptance

package faulter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/acceptance"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/stats"
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

// slowParts are every partitioner the slow-broker workload compares
// (chaos/slow-broker-4.yaml), franz-go's default first, and franz-go's
// sticky partitioner: hash, franz-go's StickyKeyPartitioner, which sticks
// keyless records (as these are) to one random partition per batch.
var slowParts = []string{"default", "hash", "kip794", "leastbackup", "node", "sqf", "sqf-shared"}

// slowCond is one condition of the slow-broker acceptance: saturated or
// rate-capped producers (1MB/s each), judged at rest ("before") or with the
// broker slow ("fault").
type slowCond struct {
	name  string
	rate  int64
	phase string
}

var slowConds = []slowCond{
	{"saturated/at-rest", 0, "before"}, {"saturated/slow", 0, "fault"},
	{"rate-capped/at-rest", 1_000_000, "before"}, {"rate-capped/slow", 1_000_000, "fault"},
}

// slowFigures holds one repetition's figures by condition, partitioner
// and figure ("tput": acknowledged MB/s, "p99": produce p99 in ms).
type slowFigures map[string]map[string]map[string]float64

// measureSlow runs every partitioner of slowParts, one chaos run each (its
// topics deleted after it: six saturated partitioners in one run write
// about 15 GB), saturated and rate-capped, and returns their figures.
func measureSlow(t *testing.T, lab *labtest.Lab, rep int) slowFigures {
	t.Helper()
	out := slowFigures{}
	for _, rate := range []int64{0, 1_000_000} {
		for _, name := range slowParts {
			res := slowRun(t, lab, slowExp{topic: fmt.Sprintf("accslow%d%s%d", rep, name, rate/1000), spec: "broker-2:bandwidth=2MB/s",
				partitioners: []string{name}, sequential: true, rate: rate, warmup: 3 * time.Second, phase: 10 * time.Second})
			for _, c := range slowConds {
				if c.rate != rate {
					continue
				}
				ph := phaseOf(t, res, name, c.phase)
				require.Zero(t, res.Partitioners[0].Lost, "%s %s: acknowledged records lost", name, c.name)
				if out[c.name] == nil {
					out[c.name] = map[string]map[string]float64{}
				}
				out[c.name][name] = map[string]float64{"tput": ph.ThroughputMBps, "p99": ph.LatencyMS.P99}
			}
			dropTopics(t, lab, res)
		}
	}
	return out
}

// ratioTable is the markdown table of every partitioner's throughput and
// p99 over the default's in each condition: the mean over the repetitions
// and its 95% interval.
func ratioTable(t *testing.T, reps []slowFigures) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("| condition | partitioner | throughput / default (95% CI) | p99 / default (95% CI) | default: MB/s, p99 ms (means) |\n|---|---|---|---|---|\n")
	ci := func(xs []float64) string {
		iv, err := stats.MeanCI(xs, acceptance.Level)
		if err != nil {
			return fmt.Sprintf("%.2f", xs[0])
		}
		return fmt.Sprintf("%.2fx (%.2f-%.2f)", iv.Mean, iv.Low, iv.High)
	}
	for _, c := range slowConds {
		for _, name := range slowParts[1:] {
			var tput, p99, dt, dp []float64
			for _, r := range reps {
				d, p := r[c.name]["default"], r[c.name][name]
				tput, p99 = append(tput, p["tput"]/d["tput"]), append(p99, p["p99"]/d["p99"])
				dt, dp = append(dt, d["tput"]), append(dp, d["p99"])
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f, %.0f |\n", c.name, name, ci(tput), ci(p99), mean(dt), mean(dp))
		}
	}
	return b.String()
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// bestOf is the best of sqf's and node's figure over the default's: the
// larger ratio when higher is better, the smaller one otherwise.
func bestOf(f map[string]map[string]float64, figure string, higher bool) float64 {
	sqf, node := f["sqf"][figure]/f["default"][figure], f["node"][figure]/f["default"][figure]
	if higher {
		return max(sqf, node)
	}
	return min(sqf, node)
}

// TestAcceptLabSlowBroker is issue 24's acceptance on the 4-broker lab with
// broker 2 capped at 2MB/s (chaos/slow-broker-4.yaml's set-up, shorter):
// every partitioner of the workload against franz-go's default, saturated
// and rate-capped (1MB/s per producer), at rest and with the broker slow,
// ACCEPT_REPEAT times, one partitioner after another. The goals are checked
// on the best of sqf and node: at least 1.5x the default's throughput
// saturated with the broker slow and at least 0.97x at rest, at most 0.6x
// its produce p99 rate-capped with the broker slow. Every other ratio is
// logged as a table (mean and 95% interval) for docs/partitioners.md.
func TestAcceptLabSlowBroker(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 4})
	var reps []slowFigures
	var slowTput, restTput, slowP99 []float64
	for i := range acceptance.Repeat(t) {
		f := measureSlow(t, lab, i)
		reps = append(reps, f)
		slowTput = append(slowTput, bestOf(f["saturated/slow"], "tput", true))
		restTput = append(restTput, bestOf(f["saturated/at-rest"], "tput", true))
		slowP99 = append(slowP99, bestOf(f["rate-capped/slow"], "p99", false))
		t.Logf("run %d: %v", i+1, f)
		t.Logf("run %d: slow throughput %.2fx, at rest %.2fx, rate-capped slow p99 %.2fx the default's (best of sqf, node)", i+1, slowTput[i], restTput[i], slowP99[i])
	}
	t.Logf("every partitioner over franz-go's default, %d repetitions:\n%s", len(reps), ratioTable(t, reps))
	acceptance.Check(t, "slow-broker-4/saturated/slow-throughput-vs-default", "x", acceptance.AtLeast, 1.5, slowTput)
	acceptance.Check(t, "slow-broker-4/saturated/at-rest-throughput-vs-default", "x", acceptance.AtLeast, 0.97, restTput)
	acceptance.Check(t, "slow-broker-4/rate-capped/slow-p99-vs-default", "x", acceptance.AtMost, 0.6, slowP99)
}

// TestAcceptLabSlowBrokerSQFSlack is the rate-capped slow phase of
// TestAcceptLabSlowBroker with sqf's slack at 8 records (80 KiB of these
// 10 KiB records) instead of the default 64: at 1MB/s per producer (100
// records/s) a backlog of 64 records on the capped broker takes longer to
// build than a phase lasts, so with the default slack sqf serves every
// broker round robin, as node does. The figure is sqf's produce p99 over
// franz-go's default's, each in its own run as in TestAcceptLabSlowBroker,
// ACCEPT_REPEAT times, against the same goal (at most 0.6x).
func TestAcceptLabSlowBrokerSQFSlack(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 4})
	var ratios []float64
	for i := range acceptance.Repeat(t) {
		p99 := map[string]float64{}
		for _, name := range []string{"default", "sqf"} {
			res := slowRun(t, lab, slowExp{topic: fmt.Sprintf("accslack%d%s", i, name), spec: "broker-2:bandwidth=2MB/s",
				partitioners: []string{name}, sequential: true, rate: 1_000_000, warmup: 3 * time.Second, phase: 10 * time.Second, sqfSlack: 8})
			require.Zero(t, res.Partitioners[0].Lost, "%s: acknowledged records lost", name)
			slow := phaseOf(t, res, name, "fault")
			p99[name] = slow.LatencyMS.P99
			t.Logf("run %d: %s slow: %.2f MB/s, p99 %.1f ms, shares %v", i+1, name, slow.ThroughputMBps, slow.LatencyMS.P99, slow.Shares)
			dropTopics(t, lab, res)
		}
		ratios = append(ratios, p99["sqf"]/p99["default"])
	}
	acceptance.Check(t, "slow-broker-4/rate-capped/slow-p99-sqf-slack-8-vs-default", "x", acceptance.AtMost, 0.6, ratios)
}
