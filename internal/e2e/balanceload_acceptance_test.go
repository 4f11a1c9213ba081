//go:build acceptance

package e2e

import (
	"fmt"
	"testing"

	"github.com/kplan-dev/kplan/internal/acceptance"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// countApart is how far apart the count-balanced plan must leave the
// brokers for the test to mean anything (max/mean).
const countApart = 1.5

// TestAcceptBalanceLoad is issue 22's proof on real brokers, ACCEPT_REPEAT
// runs on a 4-broker lab, each on topics of its own: a hot topic (2 MB/s
// of 1000-byte records, read by two consumer groups) whose 8 partitions
// all live on brokers 1 and 2, a cold one (100 records/s of 50 bytes:
// rates and record sizes 20x apart) on brokers 3 and 4, so partition sizes
// end more than 50x apart (a figure, partition-size-ratio).
// kplan observe measures the cluster, kplan reassign --balance load
// --tolerance 0.1 plans from the snapshot, kplan reassign apply executes
// the plan while the traffic goes on, and kplan observe measures again:
// bytes in and bytes out per broker within 10% of the mean (the upper end
// of the 95% interval of max/mean at most 1.10), where the count-balanced
// plan on the same snapshot leaves them at least 1.5x apart.
func TestAcceptBalanceLoad(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 4})
	var figs []balanceLoadFigures
	for i := range acceptance.Repeat(t) {
		f := balanceLoadRun(t, lab, fmt.Sprintf("accload%d", i), fourBrokerLoad)
		t.Logf("run %d: %+v", i+1, f)
		figs = append(figs, f)
	}
	col := func(get func(balanceLoadFigures) float64) []float64 {
		var out []float64
		for _, f := range figs {
			out = append(out, get(f))
		}
		return out
	}
	acceptance.Check(t, "e2e/balance-load/after/bytes-in/max-over-mean", "", acceptance.AtMost, 1+loadTolerance, col(func(f balanceLoadFigures) float64 { return f.InAfter }))
	acceptance.Check(t, "e2e/balance-load/after/bytes-out/max-over-mean", "", acceptance.AtMost, 1+loadTolerance, col(func(f balanceLoadFigures) float64 { return f.OutAfter }))
	acceptance.Check(t, "e2e/balance-load/count-plan/bytes-in/max-over-mean", "", acceptance.AtLeast, countApart, col(func(f balanceLoadFigures) float64 { return f.CountIn }))
	acceptance.Check(t, "e2e/balance-load/partition-size-ratio", "", acceptance.AtLeast, 50, col(func(f balanceLoadFigures) float64 { return f.SizeRatio }))
}
