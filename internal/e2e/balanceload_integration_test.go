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
// an error, and the layout was skewed before (the hot topic's brokers take
// most of the bytes in).
func TestBalanceLoadLab(t *testing.T) {
	lab := labtest.Shared(t)
	f := balanceLoadRun(t, lab, "load", threeBrokerLoad)
	t.Logf("%+v", f)
	assert.Greater(t, f.InBefore, 1.2, "brokers 1-2 take the hot topic's bytes in")
	assert.Positive(t, f.InAfter)
	assert.Positive(t, f.OutAfter)
}
