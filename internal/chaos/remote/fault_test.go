package remote

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// fakeNet records what the cluster asks of its NetFaulter.
type fakeNet struct {
	calls []string
}

func ids(bs []chaos.Broker) []int32 {
	var out []int32
	for _, b := range bs {
		out = append(out, b.ID)
	}
	return out
}

func (f *fakeNet) PlanFault(_ context.Context, b chaos.Broker, others []chaos.Broker, fl chaos.Fault) (chaos.KillPlan, error) {
	f.calls = append(f.calls, fmt.Sprintf("plan %d %v %s", b.ID, ids(others), fl))
	return chaos.KillPlan{Target: "fake"}, nil
}

func (f *fakeNet) InjectFault(_ context.Context, b chaos.Broker, others []chaos.Broker, fl chaos.Fault) (time.Time, error) {
	f.calls = append(f.calls, fmt.Sprintf("inject %d %v %s", b.ID, ids(others), fl))
	return time.Now(), nil
}

func (f *fakeNet) ClearFault(context.Context) error {
	f.calls = append(f.calls, "clear")
	return nil
}

func TestFaultWithoutFaulter(t *testing.T) {
	_, _, c := newCluster(t)
	f, err := chaos.ParseFault("delay:broker-2:10ms")
	require.NoError(t, err)
	_, err = c.PlanFault(context.Background(), 2, f)
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, chaos.FieldFault, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "the fake killer cannot degrade a broker's network")
	require.NoError(t, c.ClearFault(context.Background()), "nothing to clear")
}

// The faulter gets the broker and the others (a partition's target); the
// cluster's Cleanup clears the fault.
func TestFaultThroughFaulter(t *testing.T) {
	_, _, c := newCluster(t)
	fn := &fakeNet{}
	c.o.Faulter = fn
	ctx := context.Background()
	f, err := chaos.ParseFault("partition:broker-2")
	require.NoError(t, err)
	_, err = c.PlanFault(ctx, 2, f)
	require.NoError(t, err)
	require.NoError(t, c.InjectFault(ctx, 2, f))
	_, err = c.Cleanup(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"plan 2 [1 3] partition:broker-2", "inject 2 [1 3] partition:broker-2", "clear"}, fn.calls)
}
