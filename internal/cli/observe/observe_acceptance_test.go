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
// of 100 B), over a 10 s window.
func TestAcceptObserveRates(t *testing.T) {
	errs := map[string][]float64{}
	for i := range acceptance.Repeat(t) {
		run := observeLab(t, fmt.Sprintf("accobs%d", i), 10*time.Second)
		for _, tl := range run.result.Topics {
			for kind, rate := range map[string]float64{"fast": fastRate, "slow": slowRate} {
				if tl.Topic == fmt.Sprintf("accobs%d-%s", i, kind) {
					errs[kind] = append(errs[kind], math.Abs(tl.Produce.RecordsPerSecond.Mean-rate)/rate)
				}
			}
		}
	}
	for _, kind := range []string{"fast", "slow"} {
		acceptance.Check(t, "observe/lab/"+kind+"/records-per-second-relative-error", "", acceptance.AtMost, 0.10, errs[kind])
	}
}
