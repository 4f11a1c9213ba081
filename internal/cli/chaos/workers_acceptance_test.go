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
// ACCEPT_REPEAT runs, each with --restore so the next starts whole.
func TestAcceptWorkersKillSkew(t *testing.T) {
	lab := labForRemote(t)
	t.Cleanup(func() { restartDead(t, lab) })
	self, err := os.Executable()
	require.NoError(t, err)
	skews := map[string][]float64{}
	for i := range accept.Repeat(t) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		run := fmt.Sprintf("acw%d-%d", os.Getpid(), i)
		workers := startWorkers(ctx, t, self, lab, run, 3, nil, nil)
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
		}
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
}
