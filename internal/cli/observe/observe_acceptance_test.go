//go:build acceptance

package observe

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/acceptance"
)

// TestAcceptObserveRates measures issue 22's observe figure, ACCEPT_REPEAT
// runs (each on topics of its own): kplan observe reports each written
// topic's rate within 10% of the rate kplan's workload engine wrote it at,
// for a fast topic (600 records/s of 1000 B) and a slow one (20 records/s
// of 100 B), over a 10 s window; the fast topic's bytes per record is
// within half of its 1000-byte value either way (size and offset deltas are
// read a moment apart), and its bytes/s at least 20 times the slow one's
// (the statistics TestObserveLab checked in make test before).
func TestAcceptObserveRates(t *testing.T) {
	errs := map[string][]float64{}
	var bpr, apart []float64
	for i := range acceptance.Repeat(t) {
		run := observeLab(t, fmt.Sprintf("accobs%d", i), 10*time.Second)
		byName := map[string]float64{}
		for _, tl := range run.result.Topics {
			byName[tl.Topic] = tl.Produce.BytesPerSecond.Mean
			if tl.Topic == fmt.Sprintf("accobs%d-fast", i) {
				bpr = append(bpr, tl.Produce.BytesPerRecord/fastSize)
			}
			for kind, rate := range map[string]float64{"fast": fastRate, "slow": slowRate} {
				if tl.Topic == fmt.Sprintf("accobs%d-%s", i, kind) {
					errs[kind] = append(errs[kind], math.Abs(tl.Produce.RecordsPerSecond.Mean-rate)/rate)
				}
			}
		}
		apart = append(apart, byName[fmt.Sprintf("accobs%d-fast", i)]/byName[fmt.Sprintf("accobs%d-slow", i)])
	}
	acceptance.Check(t, "observe/lab/fast/bytes-per-record-over-value", "", acceptance.AtLeast, 0.5, bpr)
	acceptance.Check(t, "observe/lab/fast/bytes-per-record-over-value-max", "", acceptance.AtMost, 1.5, bpr)
	acceptance.Check(t, "observe/lab/fast-over-slow/bytes-per-second", "", acceptance.AtLeast, 20, apart)
	for _, kind := range []string{"fast", "slow"} {
		acceptance.Check(t, "observe/lab/"+kind+"/records-per-second-relative-error", "", acceptance.AtMost, 0.10, errs[kind])
	}
}
