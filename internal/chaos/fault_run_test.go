package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// faultyCluster is the embedded cluster with a Faulter that records its
// calls: the lab's and Chaos Mesh's faults are tested with them.
type faultyCluster struct {
	Cluster
	mu        sync.Mutex
	calls     []string
	injectErr error
}

func (c *faultyCluster) record(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, s)
}

func (c *faultyCluster) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func (c *faultyCluster) PlanFault(_ context.Context, id int32, f Fault) (KillPlan, error) {
	c.record(fmt.Sprintf("plan %d %s", id, f))
	return KillPlan{Target: fmt.Sprintf("broker %d", id), Steps: []string{f.Describe(id)}}, nil
}

func (c *faultyCluster) InjectFault(_ context.Context, id int32, f Fault) error {
	c.record(fmt.Sprintf("inject %d %s", id, f))
	return c.injectErr
}

func (c *faultyCluster) ClearFault(context.Context) error {
	c.record("clear")
	return nil
}

func newFaulty(t *testing.T) *faultyCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &faultyCluster{Cluster: c}
}

func faultConfig(t *testing.T, fault string) Config {
	t.Helper()
	cfg := shortConfig()
	f, err := ParseFault(fault)
	require.NoError(t, err)
	cfg.Fault = &f
	cfg.Target = Target{Kind: TargetNone}
	return cfg
}

// The embedded cluster cannot degrade a network: --fault on it is a usage
// error naming the field, before anything runs.
func TestFaultNeedsFaulter(t *testing.T) {
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	defer c.Close()
	_, err = Run(context.Background(), c, faultConfig(t, "delay:broker-2:100ms"))
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, FieldFault, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "cannot degrade a broker's network")
}

func TestFaultUnknownBroker(t *testing.T) {
	c := newFaulty(t)
	_, err := Run(context.Background(), c, faultConfig(t, "delay:broker-7:100ms"))
	require.Error(t, err)
	assert.Equal(t, FieldFault, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "no such broker")
	assert.Empty(t, c.Calls(), "nothing injected")
}

// With --restore the fault is cleared in the restore phase, before the
// recovered phase; the fault phase has no prediction, the recovered one has.
func TestFaultRestore(t *testing.T) {
	c := newFaulty(t)
	cfg := faultConfig(t, "delay:broker-2:100ms:10ms")
	cfg.Restore = true
	res, err := Run(context.Background(), c, cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"plan 2 delay:broker-2:100ms:10ms", "inject 2 delay:broker-2:100ms:10ms", "clear"}, c.Calls(), "cleared once, before the recovered phase; not again at cleanup")
	require.NotNil(t, res.Fault)
	assert.Equal(t, "delay:broker-2:100ms:10ms", res.Fault.Fault)
	assert.Equal(t, int32(2), res.Fault.Broker)
	assert.Equal(t, []string{"fault"}, res.Fault.Phases)
	require.NotNil(t, res.Fault.ClearedAtS)
	assert.Greater(t, *res.Fault.ClearedAtS, res.Fault.InjectedAtS)
	assert.Equal(t, int32(-1), res.KilledBroker)
	for _, p := range res.Partitioners {
		for _, ph := range []string{"before", "fault", "recovered"} {
			require.NotNil(t, p.Phases[ph], "%s %s", p.Name, ph)
		}
		assert.Nil(t, p.Phases["after"], p.Name)
		f := p.Phases["fault"]
		assert.Equal(t, NoPredictionUnderFault, f.NoPrediction, p.Name)
		assert.Nil(t, f.PredictedShare, p.Name)
		assert.NotEmpty(t, f.Shares, "%s: measured shares during the fault", p.Name)
		assert.Positive(t, f.Acked, p.Name)
		assert.Empty(t, p.Phases["recovered"].NoPrediction, p.Name)
		assert.NotNil(t, p.Phases["recovered"].PredictedShare, p.Name)
	}
}

// Without --restore the fault is cleared when the run ends, and with a
// kill besides, the kill comes with the fault in force.
func TestFaultThenKill(t *testing.T) {
	c := newFaulty(t)
	cfg := faultConfig(t, "loss:broker-1:10%")
	cfg.Target = Target{Kind: TargetBroker, Broker: 3}
	res, err := Run(context.Background(), c, cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"plan 1 loss:broker-1:10%", "inject 1 loss:broker-1:10%", "clear"}, c.Calls())
	assert.Contains(t, res.Notes, "fault loss:broker-1:10% cleared at the end of the run")
	assert.Equal(t, int32(3), res.KilledBroker)
	require.NotNil(t, res.Fault)
	assert.Nil(t, res.Fault.ClearedAtS)
	assert.Equal(t, []string{"fault", "failover", "after"}, res.Fault.Phases)
	for _, p := range res.Partitioners {
		assert.Equal(t, NoPredictionUnderFault, p.Phases["after"].NoPrediction, "%s: the after phase ran under the fault", p.Name)
		assert.NotNil(t, p.Phases["before"].PredictedShare, p.Name)
	}
}

// A failed injection is still cleared at cleanup (it may be half in force).
func TestFaultInjectFails(t *testing.T) {
	c := newFaulty(t)
	c.injectErr = errors.New("iptables: no such chain")
	_, err := Run(context.Background(), c, faultConfig(t, "partition:broker-2"))
	require.Error(t, err)
	assert.ErrorContains(t, err, "inject partition:broker-2: iptables: no such chain")
	assert.Equal(t, []string{"plan 2 partition:broker-2", "inject 2 partition:broker-2", "clear"}, c.Calls())
}

// Ctrl-C during the fault phase: the fault is cleared by the cleanup.
func TestFaultInterrupted(t *testing.T) {
	c := newFaulty(t)
	cfg := faultConfig(t, "delay:broker-2:50ms")
	cfg.Phase = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.Progress = func(p Progress) {
		if p.Phase == "fault" {
			cancel()
		}
	}
	res, err := Run(ctx, c, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.Equal(t, []string{"plan 2 delay:broker-2:50ms", "inject 2 delay:broker-2:50ms", "clear"}, c.Calls())
}

// A second Ctrl-C cuts the cleanup short: the fault is not cleared and the
// result says it may still be in force.
func TestFaultAbort(t *testing.T) {
	c := newFaulty(t)
	cfg := faultConfig(t, "delay:broker-2:50ms")
	cfg.Phase = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abort := make(chan struct{})
	cfg.Abort = abort
	var once sync.Once
	cfg.Progress = func(p Progress) {
		if p.Phase == "fault" {
			once.Do(func() { close(abort) })
			cancel()
		}
	}
	res, err := Run(ctx, c, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.Equal(t, []string{"plan 2 delay:broker-2:50ms", "inject 2 delay:broker-2:50ms"}, c.Calls())
	assert.Contains(t, res.Notes, "cleanup cut short: the fault delay:broker-2:50ms may still be in force; clear it by hand (kplan lab net --clear, kplan chaos cleanup)")
}

// Sequential legs each inject the fault and clear it before the next leg
// (with a kill as well: before the broker's restart); the last leg's goes
// at cleanup.
func TestFaultSequential(t *testing.T) {
	c := newFaulty(t)
	cfg := faultConfig(t, "delay:busiest:20ms")
	cfg.Sequential = true
	cfg.Target = Target{Kind: TargetBroker, Broker: 3}
	res, err := Run(context.Background(), c, cfg)
	require.NoError(t, err)
	calls := c.Calls()
	require.Len(t, calls, 6, "%v", calls)
	for i, want := range []string{"plan", "inject", "clear", "plan", "inject", "clear"} {
		assert.Contains(t, calls[i], want, "%v", calls)
	}
	require.Len(t, res.Partitioners, 2)
	for _, p := range res.Partitioners {
		assert.NotNil(t, p.Phases["fault"], p.Name)
		assert.NotNil(t, p.Phases["after"], p.Name)
	}

	// Without a kill, the same between legs.
	c = newFaulty(t)
	cfg = faultConfig(t, "loss:broker-2:1%")
	cfg.Sequential = true
	_, err = Run(context.Background(), c, cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"plan 2 loss:broker-2:1%", "inject 2 loss:broker-2:1%", "clear", "plan 2 loss:broker-2:1%", "inject 2 loss:broker-2:1%", "clear"}, c.Calls())
}
