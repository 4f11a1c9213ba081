package remote

import (
	"context"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// NetFaulter injects network faults on the brokers' platform
// (chaosmesh.Networker: a NetworkChaos). others are the cluster's other
// brokers, which a partition cuts the broker off from.
type NetFaulter interface {
	PlanFault(ctx context.Context, b chaos.Broker, others []chaos.Broker, f chaos.Fault) (chaos.KillPlan, error)
	InjectFault(ctx context.Context, b chaos.Broker, others []chaos.Broker, f chaos.Fault) (time.Time, error)
	ClearFault(ctx context.Context) error
}

var _ chaos.Faulter = (*Cluster)(nil)

// faulter returns the cluster's NetFaulter or the usage error of a killer
// that has none.
func (c *Cluster) faulter() (NetFaulter, error) {
	if c.o.Faulter == nil {
		return nil, errkind.Usagef(chaos.FieldFault, "the %s killer cannot degrade a broker's network (chaos-mesh can, with a NetworkChaos)", c.o.Killer.Name())
	}
	return c.o.Faulter, nil
}

// others returns every broker seen but id.
func (c *Cluster) others(ctx context.Context, id int32) ([]chaos.Broker, error) {
	if _, err := c.liveBrokers(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []chaos.Broker
	for bid, b := range c.known {
		if bid != id {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b chaos.Broker) int { return int(a.ID) - int(b.ID) })
	return out, nil
}

// PlanFault implements chaos.Faulter: the faulter checks its target (the
// broker's pod is this broker) and returns its manifest.
func (c *Cluster) PlanFault(ctx context.Context, id int32, f chaos.Fault) (chaos.KillPlan, error) {
	fl, err := c.faulter()
	if err != nil {
		return chaos.KillPlan{}, err
	}
	b, err := c.Broker(ctx, id)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	others, err := c.others(ctx, id)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	return fl.PlanFault(ctx, b, others, f)
}

// InjectFault implements chaos.Faulter: it returns once the platform
// reports the fault in force. It does not wait for Kafka to notice: the
// fault phase measures what Kafka and the producers do about it.
func (c *Cluster) InjectFault(ctx context.Context, id int32, f chaos.Fault) error {
	fl, err := c.faulter()
	if err != nil {
		return err
	}
	b, err := c.Broker(ctx, id)
	if err != nil {
		return err
	}
	others, err := c.others(ctx, id)
	if err != nil {
		return err
	}
	_, err = fl.InjectFault(ctx, b, others, f)
	return err
}

// ClearFault implements chaos.Faulter: every fault the faulter injected
// goes. A cluster without a faulter has nothing to clear.
func (c *Cluster) ClearFault(ctx context.Context) error {
	if c.o.Faulter == nil {
		return nil
	}
	return c.o.Faulter.ClearFault(ctx)
}
