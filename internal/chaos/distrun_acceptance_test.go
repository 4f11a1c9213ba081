//go:build acceptance

package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/acceptance"
)

// TestAcceptDistributedSkewedClocks measures what the clock correction
// buys on the embedded cluster, ACCEPT_REPEAT times: with one worker's
// clock 3 s ahead of the coordinator's and the other's 3 s behind, the
// before phase's end-to-end p95 (half the records would be 3 s off on
// uncorrected clocks) stays under 1 s for every partitioner, and each
// skew is measured within 50 ms.
func TestAcceptDistributedSkewedClocks(t *testing.T) {
	var p95, uncertainty []float64
	for range acceptance.Repeat(t) {
		res, outs, _ := runDistributed(t, 2, nil, nil, 3*time.Second, -3*time.Second)
		for i, o := range outs {
			require.NoError(t, o.err, "worker %d", i)
		}
		require.NotNil(t, res.Workers)
		worst := 0.0
		for _, w := range res.Workers.Workers {
			require.NotNil(t, w.Clock, "worker %d", w.Index)
			worst = max(worst, w.Clock.UncertaintyMS)
		}
		uncertainty = append(uncertainty, worst)
		worst = 0
		for _, p := range res.Partitioners {
			before := p.Phases["before"]
			require.NotNil(t, before, p.Name)
			worst = max(worst, before.E2ELatencyMS.P95)
		}
		p95 = append(p95, worst)
	}
	acceptance.Check(t, "chaos/workers-clocks-3s-apart/embedded/before-e2e-p95", "ms", acceptance.AtMost, 1000, p95)
	acceptance.Check(t, "chaos/workers-clocks-3s-apart/embedded/skew-uncertainty", "ms", acceptance.AtMost, 50, uncertainty)
}
