//go:build integration

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestBalanceLoadLab is make test's short run of issue 22's sequence on the
// shared 3-broker lab (TestAcceptBalanceLoad measures it with
// repetitions): a hot topic on brokers 1-2 read by two consumer groups, a
// cold one on broker 3; kplan observe, kplan reassign --balance load, kplan
// reassign apply under the traffic, kplan observe again. It checks what
// must always hold: both snapshots have observed load on every broker, the
// plan applies (exit 0), the traffic and the consumer groups run without
// an error. How skewed the layout was before and how even after are
// measured statistics: TestAcceptBalanceLoad's figures, not make test's.
func TestBalanceLoadLab(t *testing.T) {
	lab := labtest.Shared(t)
	f := balanceLoadRun(t, lab, "load", threeBrokerLoad)
	t.Logf("%+v", f)
	assert.Positive(t, f.InBefore)
	assert.Positive(t, f.OutBefore)
	assert.Positive(t, f.InAfter)
	assert.Positive(t, f.OutAfter)
}
