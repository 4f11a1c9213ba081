//go:build integration

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestFaultSQFAvoidsSlowBroker is issue 15's acceptance run `kplan chaos
// --cluster lab --fault delay:broker-2:200ms --partitioner roundrobin,sqf`
// at small sizes: with broker 2's packets delayed 200 ms, sqf sends
// measurably less to it than round robin does, and the fault is cleared
// before the recovered phase.
//
// The margin: round robin puts every third record on broker 2's partition
// whatever its latency, so its share of the fault phase's records is 1/3
// (± about 1/sqrt(n), under a point here). sqf gives broker 2 a record only
// while broker 2's in-flight count is within the slack (64 records) of the
// least loaded broker's; by Little's law broker 2 then takes at most about
// (64 + the fast brokers' in-flight) / 0.2 s, a few hundred records/s of
// the 10,000 records/s a 1 MB/s producer of 100-byte records sends: a few
// percent. Asking for 15 points less than round robin (about 18% or less)
// leaves room for a fast broker holding several times more in flight than
// it should (acks=all makes broker 1 wait for broker 2's fetches too) and
// for a machine shared with other work.
//
// Measured on the merged tree (2026-11-24, 2 cores, 24 GiB, `kplan chaos
// --cluster lab --fault delay:broker-2:200ms --partitioner roundrobin,sqf
// --rate 1MB/s --warmup 2s --phase-duration 8s --restore`): broker 2's
// share of the fault phase 33.3% under round robin, 1.3% under sqf (which
// also starves broker 1, whose partition waits for broker 2's fetches at
// acks=all); a first run on a scratch merge of the two halves measured
// 8.6% and 7.7%, with leadership moved to broker 3, before the lab's
// delay process was finished.
//
// Only invariants are checked here (the fault named in the result, cleared
// before the recovered phase, no prediction under it, nothing lost), with
// short phases; the shares are acceptance figures:
// TestAcceptFaultSQFAvoidsSlowBroker.
func TestFaultSQFAvoidsSlowBroker(t *testing.T) {
	faultRun(t, "fault-sqf", true)
}

// faultRun runs `kplan chaos --fault delay:broker-2:200ms` with roundrobin
// and sqf on the binary's lab, checks what must hold, and returns the
// result. short runs 1 s warm-up and 3 s phases.
func faultRun(t *testing.T, topic string, short bool) *chaos.Result {
	t.Helper()
	// This binary's lab has 4 brokers (the overlap tests'); the layout
	// keeps to brokers 1-3, one partition led by each.
	lab := labtest.Start(t, labtest.Options{Brokers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	warmup, phase := "2s", "8s"
	if short {
		warmup, phase = "1s", "3s"
	}

	res := chaosResult(t, ctx, "chaos", "--cluster", "lab", "--lab-dir", lab.State.Dir,
		"--fault", "delay:broker-2:200ms", "--partitioner", "roundrobin,sqf", "--topic", topic,
		"--assignment", "1,2;2,3;3,1",
		"--rate", "1MB/s", "--warmup", warmup, "--phase-duration", phase, "--restore")

	require.NotNil(t, res.Fault, "the result says which fault ran")
	assert.Equal(t, "delay:broker-2:200ms", res.Fault.Fault)
	assert.Equal(t, int32(2), res.Fault.Broker)
	assert.Equal(t, []string{"fault"}, res.Fault.Phases)
	require.NotNil(t, res.Fault.ClearedAtS, "--restore clears it before the recovered phase")
	assert.Equal(t, int32(-1), res.KilledBroker, "a fault, no kill")

	for _, p := range res.Partitioners {
		f := p.Phases["fault"]
		require.NotNil(t, f, p.Name)
		assert.Equal(t, chaos.NoPredictionUnderFault, f.NoPrediction, p.Name)
		assert.Nil(t, f.PredictedShare, "%s: no predicted number under a fault", p.Name)
		skew := "-"
		if f.MaxOverMean != nil {
			skew = fmt.Sprintf("%.2f", *f.MaxOverMean)
		}
		t.Logf("%-10s fault phase: leaders %v, broker 2's share %.1f%%, shares %v, max/mean %s, produce p99 %.1f ms, never acked %d", p.Name, f.Leaders, 100*f.Shares["2"], f.Shares, skew, f.LatencyMS.P99, p.NeverAcked)
		require.NotNil(t, p.Phases["before"], p.Name)
		require.NotNil(t, p.Phases["recovered"], p.Name)
		assert.Zero(t, p.Lost, p.Name)
	}
	return res
}
