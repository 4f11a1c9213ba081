//go:build acceptance

package e2e

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/acceptance"
	"github.com/kplan-dev/kplan/internal/chaos"
)

// TestAcceptOverlapFix measures issue 13's L2 figures, ACCEPT_REPEAT runs
// of the whole pipeline (each on topics of its own): before the fix the
// overlap workload measures max/mean of at least 1.20 with round robin and
// franz-go's default, round robin within 2 points of the prediction; after
// it at most 1.05 with both, within 2 points.
func TestAcceptOverlapFix(t *testing.T) {
	fig := map[string][]float64{}
	for i := range acceptance.Repeat(t) {
		before, after := overlapFix(t, fmt.Sprintf("accl2x%d", i), false)
		for when, res := range map[string]*chaos.Result{"before": before, "after": after} {
			for _, p := range res.Partitioners {
				ph := p.Phases["before"]
				require.NotNil(t, ph, p.Name)
				fig[when+"/"+p.Name+"/max-over-mean"] = append(fig[when+"/"+p.Name+"/max-over-mean"], *ph.MaxOverMean)
				fig[when+"/"+p.Name+"/max-error"] = append(fig[when+"/"+p.Name+"/max-error"], *ph.MaxErrorPts)
			}
		}
	}
	for _, p := range []string{"roundrobin", "default"} {
		acceptance.Check(t, "e2e/overlap-fix/before/"+p+"/max-over-mean", "", acceptance.AtLeast, 1.20, fig["before/"+p+"/max-over-mean"])
		acceptance.Check(t, "e2e/overlap-fix/after/"+p+"/max-over-mean", "", acceptance.AtMost, 1.05, fig["after/"+p+"/max-over-mean"])
		acceptance.Check(t, "e2e/overlap-fix/after/"+p+"/max-error", "points", acceptance.AtMost, 2, fig["after/"+p+"/max-error"])
	}
	acceptance.Check(t, "e2e/overlap-fix/before/roundrobin/max-error", "points", acceptance.AtMost, 2, fig["before/roundrobin/max-error"])
}

// TestAcceptFaultSQFAvoidsSlowBroker measures issue 15's figures,
// ACCEPT_REPEAT runs with broker 2's packets delayed 200 ms: before the
// fault both partitioners spread evenly (broker 2 within 8 points of a
// third), round robin ignores the latency (within 5 points of a third in
// the fault phase), and sqf sends broker 2 at least 15 points less than
// round robin does (see TestFaultSQFAvoidsSlowBroker for the margin).
func TestAcceptFaultSQFAvoidsSlowBroker(t *testing.T) {
	var rrOff, sqfLess []float64
	beforeOff := map[string][]float64{}
	for i := range acceptance.Repeat(t) {
		res := faultRun(t, fmt.Sprintf("accfault%d", i), false)
		share := map[string]float64{}
		for _, p := range res.Partitioners {
			share[p.Name] = p.Phases["fault"].Shares["2"]
			beforeOff[p.Name] = append(beforeOff[p.Name], math.Abs(p.Phases["before"].Shares["2"]-1.0/3))
		}
		rrOff = append(rrOff, math.Abs(share["roundrobin"]-1.0/3))
		sqfLess = append(sqfLess, share["roundrobin"]-share["sqf"])
	}
	for _, p := range []string{"roundrobin", "sqf"} {
		acceptance.Check(t, "e2e/fault-delay-broker-2/"+p+"/before/broker-2-off-a-third", "share", acceptance.AtMost, 0.08, beforeOff[p])
	}
	acceptance.Check(t, "e2e/fault-delay-broker-2/roundrobin/fault/broker-2-off-a-third", "share", acceptance.AtMost, 0.05, rrOff)
	acceptance.Check(t, "e2e/fault-delay-broker-2/roundrobin-minus-sqf/fault/broker-2-share", "share", acceptance.AtLeast, 0.15, sqfLess)
}
