//go:build acceptance

package chaos_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	accept "github.com/kplan-dev/kplan/internal/acceptance"
)

// TestAcceptWorkersKillSkew measures issue 25's figures: three `kplan
// worker` processes produce with roundrobin and node while the coordinator
// kills broker 3 (layout 1,2;2,3;3,1: broker 3's partition moves to broker
// 1). Over the merged records of the three workers, roundrobin gives
// broker 1 two shares after the kill (max/mean >= 1.25) while node keeps
// the survivors even (<= 1.05); before the kill both are even (<= 1.05).
// Worker 1's clock is 2 s behind: the before phase's end-to-end p95 stays
// under 1 s and its skew is measured within 100 ms.
// ACCEPT_REPEAT runs, each with --restore so the next starts whole.
func TestAcceptWorkersKillSkew(t *testing.T) {
	lab := labForRemote(t)
	t.Cleanup(func() { restartDead(t, lab) })
	self, err := os.Executable()
	require.NoError(t, err)
	skews := map[string][]float64{}
	var p95, uncertainty []float64
	for i := range accept.Repeat(t) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		run := fmt.Sprintf("acw%d-%d", os.Getpid(), i)
		// Worker 1's clock 2 s behind the coordinator's: the clock
		// correction's figures come from the same runs.
		workers := startWorkers(ctx, t, self, lab, run, 3, func(i int) []string {
			if i == 1 {
				return []string{"--clock-skew", "-2s"}
			}
			return nil
		}, nil)
		res, _ := runCoordinator(ctx, t, self, "chaos", "--cluster", "lab", "--lab-dir", lab.State.Dir,
			"--topic", fmt.Sprintf("accw%d", i), "--workers", "3", "--run", run, "--kill", "broker-3", "--restore",
			"--partitioner", "roundrobin,node", "--warmup", "4s", "--phase-duration", "8s", "-o", "json")
		for j, w := range workers {
			<-w.done
			require.NoError(t, w.cmd.Wait(), "worker %d; stderr:\n%s", j, w.errOut.String())
		}
		cancel()
		require.NotNil(t, res.Workers)
		for _, w := range res.Workers.Workers {
			require.Empty(t, w.Missed, "worker %d", w.Index)
			require.NotNil(t, w.Clock, "worker %d", w.Index)
		}
		uncertainty = append(uncertainty, res.Workers.Workers[1].Clock.UncertaintyMS)
		worstP95 := 0.0
		for _, p := range res.Partitioners {
			worstP95 = max(worstP95, p.Phases["before"].E2ELatencyMS.P95)
		}
		p95 = append(p95, worstP95)
		for _, p := range res.Partitioners {
			require.Zero(t, p.Lost, p.Name)
			for _, ph := range []string{"before", "after"} {
				x := p.Phases[ph]
				require.NotNil(t, x, "%s %s", p.Name, ph)
				require.NotNil(t, x.MaxOverMean, "%s %s", p.Name, ph)
				skews[p.Name+"/"+ph] = append(skews[p.Name+"/"+ph], *x.MaxOverMean)
			}
		}
		restartDead(t, lab)
	}
	name := func(k string) string { return "chaos/workers-3-kill-broker-3/" + k + "/max-over-mean" }
	accept.Check(t, name("roundrobin/before"), "", accept.AtMost, 1.05, skews["roundrobin/before"])
	accept.Check(t, name("roundrobin/after"), "", accept.AtLeast, 1.25, skews["roundrobin/after"])
	accept.Check(t, name("node/before"), "", accept.AtMost, 1.05, skews["node/before"])
	accept.Check(t, name("node/after"), "", accept.AtMost, 1.05, skews["node/after"])
	// A third of the records are worker 1's, 2 s too late on an
	// uncorrected clock; the few sent just before the kill wait out the
	// failover, so the p95, not the max.
	accept.Check(t, "chaos/workers-3-kill-broker-3/clock-2s-behind/before-e2e-p95", "ms", accept.AtMost, 1000, p95)
	accept.Check(t, "chaos/workers-3-kill-broker-3/clock-2s-behind/skew-uncertainty", "ms", accept.AtMost, 100, uncertainty)
}
