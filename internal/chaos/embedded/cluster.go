package embedded

import (
	"context"
	"slices"
)

// Label is how outputs name the embedded cluster.
const Label = "simulated (embedded kfake)"

// Cluster adapts Embedded to chaos.Cluster.
type Cluster struct{ *Embedded }

// NewCluster starts an embedded cluster of brokers 1..n; version is kplan's.
func NewCluster(n int, version string) (*Cluster, error) {
	e, err := New(n, version)
	if err != nil {
		return nil, err
	}
	return &Cluster{e}, nil
}

// Kind implements chaos.Cluster.
func (*Cluster) Kind() string { return "embedded" }

// Label implements chaos.Cluster.
func (*Cluster) Label() string { return Label }

// Real implements chaos.Cluster: nothing real dies, and the election is
// instantaneous (Kill moves the leaders before it returns), so there is no
// failover time to measure.
func (*Cluster) Real() bool { return false }

// Seeds implements chaos.Cluster.
func (c *Cluster) Seeds() []string { return c.Addrs() }

// Brokers implements chaos.Cluster: every broker, live or killed.
func (c *Cluster) Brokers(context.Context) ([]int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int32, 0, len(c.addrs))
	for id := range c.addrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// Layout implements chaos.Cluster.
func (c *Cluster) Layout(_ context.Context, topic string) ([][]int32, bool, error) {
	a := c.Assignment(topic)
	return a, len(a) > 0, nil
}

// Kill implements chaos.Cluster.
func (c *Cluster) Kill(_ context.Context, id int32) error { return c.Embedded.Kill(id) }

// Restart implements chaos.Cluster.
func (c *Cluster) Restart(_ context.Context, id int32) error { return c.Embedded.Restart(id) }

// ElectPreferred implements chaos.Cluster.
func (c *Cluster) ElectPreferred(context.Context) error {
	_, err := c.Embedded.ElectPreferred()
	return err
}
