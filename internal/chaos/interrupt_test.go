package chaos

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos/embedded"
)

// interrupting is an embedded cluster that interrupts the run (cancels its
// context, as Ctrl-C or SIGTERM does through internal/app's signal context)
// when phase at begins, and with second also closes Abort (the second
// signal). The kill and the restart interrupt from inside the cluster call,
// so the failover and restore phases are hit however short they are; its
// Restart honours a cancelled context, as a real cluster's does.
type interrupting struct {
	*embedded.Cluster
	at     Phase
	second bool
	cancel context.CancelFunc
	abort  chan struct{}
	once   sync.Once
}

func (c *interrupting) fire() {
	c.once.Do(func() {
		if c.second {
			close(c.abort)
		}
		c.cancel()
	})
}

func (c *interrupting) Kill(ctx context.Context, id int32) error {
	err := c.Cluster.Kill(ctx, id)
	if c.at == PhaseFailover {
		c.fire()
	}
	return err
}

func (c *interrupting) Restart(ctx context.Context, id int32) error {
	if c.at == PhaseRestore {
		c.fire()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.Cluster.Restart(ctx, id)
}

// TestInterruptEveryPhase interrupts a run with --restore in each phase,
// once (the cleanup runs) and twice (the cleanup is cut short). Once: the
// run returns context.Canceled with the partial result marked interrupted,
// the killed broker is back and the loss check ran (nothing lost). Twice:
// a killed broker stays down and the result says so, and says the loss
// check was skipped.
func TestInterruptEveryPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiments")
	}
	for _, ph := range []Phase{PhaseWarmup, PhaseBefore, PhaseFailover, PhaseAfter, PhaseRestore} {
		for _, second := range []bool{false, true} {
			name := ph.String()
			if second {
				name += "/twice"
			}
			t.Run(name, func(t *testing.T) {
				e, err := embedded.NewCluster(3, "test")
				require.NoError(t, err)
				defer e.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				c := &interrupting{Cluster: e, at: ph, second: second, cancel: cancel, abort: make(chan struct{})}
				cfg := shortConfig()
				cfg.Restore = true
				cfg.Abort = c.abort
				cfg.Phase = 2 * time.Second // the progress ticker (250 ms) sees every measured phase
				cfg.Progress = func(p Progress) {
					if p.Phase == ph.String() && ph != PhaseFailover && ph != PhaseRestore {
						c.fire()
					}
				}
				res, err := Run(ctx, c, cfg)
				require.ErrorIs(t, err, context.Canceled)
				require.NotNil(t, res, "the partial result")
				assert.True(t, res.Interrupted)
				assert.Contains(t, res.Notes, "interrupted: the figures cover the phases that ran")
				killed := ph >= PhaseFailover
				if killed {
					assert.Equal(t, int32(3), res.KilledBroker)
				} else {
					assert.Equal(t, int32(-1), res.KilledBroker, "no kill before the failover phase")
				}
				if ph >= PhaseBefore {
					for _, p := range res.Partitioners {
						assert.NotNil(t, p.Phases[PhaseBefore.String()], "%s: the before phase is reported", p.Name)
					}
				}
				if !second {
					assert.Equal(t, []int32{1, 2, 3}, e.Embedded.Brokers(), "the killed broker is restarted")
					if killed {
						assert.Contains(t, res.Notes, "broker 3 restarted after the interruption", "the cleanup restarted it")
					}
					for _, p := range res.Partitioners {
						assert.Zero(t, p.Lost, p.Name)
						assert.Positive(t, p.Acked, p.Name)
					}
					assert.NotContains(t, res.Notes, "cleanup cut short: the loss check was skipped; lost counts are upper bounds")
					return
				}
				assert.Contains(t, res.Notes, "cleanup cut short: the loss check was skipped; lost counts are upper bounds")
				if killed {
					assert.Equal(t, []int32{1, 2}, e.Embedded.Brokers(), "the cleanup was cut short: broker 3 stays down")
					assert.Contains(t, res.Notes, "broker 3 is still down", "the result says what was left")
				} else {
					assert.Equal(t, []int32{1, 2, 3}, e.Embedded.Brokers())
				}
			})
		}
	}
}
