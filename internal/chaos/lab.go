package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// LabLabel is how outputs name the real lab.
const LabLabel = "real (kplan lab: Kafka brokers on this machine)"

// LabCluster is the running `kplan lab`: real Kafka brokers on this machine.
// A kill is SIGKILL of the broker's JVM; a restart starts it again.
type LabCluster struct {
	state *localkafka.State
	admin *kgo.Client
}

// NewLabCluster opens the lab whose state is in dir (localkafka.DefaultDir()
// when empty). Every broker must be running.
func NewLabCluster(dir string) (*LabCluster, error) {
	if dir == "" {
		dir = localkafka.DefaultDir()
	}
	s, err := localkafka.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", dir, err)
	}
	return OpenLab(s)
}

// OpenLab returns the lab described by s. Every broker must be running.
func OpenLab(s *localkafka.State) (*LabCluster, error) {
	var dead []int32
	for _, n := range s.Brokers() {
		if !n.Alive() {
			dead = append(dead, n.ID)
		}
	}
	if len(dead) > 0 {
		return nil, fmt.Errorf("lab %s: brokers %v are not running (kplan lab restart broker-N)", s.Dir, dead)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Bootstrap()...), kgo.MetadataMinAge(100*time.Millisecond), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("lab client: %w", err)
	}
	return &LabCluster{state: s, admin: cl}, nil
}

// Kind implements Cluster.
func (*LabCluster) Kind() string { return "lab" }

// Label implements Cluster.
func (*LabCluster) Label() string { return LabLabel }

// Real implements Cluster.
func (*LabCluster) Real() bool { return true }

// Seeds implements Cluster.
func (l *LabCluster) Seeds() []string { return l.state.Bootstrap() }

// Brokers implements Cluster.
func (l *LabCluster) Brokers(context.Context) ([]int32, error) {
	var ids []int32
	for _, n := range l.state.Brokers() {
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// Layout implements Cluster.
func (l *LabCluster) Layout(ctx context.Context, topic string) ([][]int32, bool, error) {
	m, err := fetchMeta(ctx, l.admin, []string{topic})
	if err != nil {
		return nil, false, err
	}
	parts, ok := m.topics[topic]
	if !ok {
		return nil, false, nil
	}
	out := make([][]int32, len(parts))
	for p, pm := range parts {
		out[p] = slices.Clone(pm.replicas)
	}
	return out, true, nil
}

// CreateTopic implements Cluster.
func (l *LabCluster) CreateTopic(ctx context.Context, topic string, assignment [][]int32) error {
	return kafka.CreateTopic(ctx, l.admin, topic, assignment, nil)
}

// Kill implements Cluster: SIGKILL of the broker's JVM.
func (l *LabCluster) Kill(_ context.Context, id int32) error { return l.state.Kill(id) }

// Restart implements Cluster: start the JVM again and wait until it answers.
func (l *LabCluster) Restart(ctx context.Context, id int32) error {
	return l.state.Restart(ctx, id, kafka.WaitBrokers)
}

// ElectPreferred implements Cluster. A restarted broker must catch up before
// it is back in sync, so the election is retried until every partition of
// every topic is led by its preferred replica or ctx ends.
func (l *LabCluster) ElectPreferred(ctx context.Context) error {
	for {
		if _, err := kafka.ElectPreferred(ctx, l.admin); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		m, err := fetchMeta(ctx, l.admin, nil)
		if err == nil && preferredLed(m) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("preferred election: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// preferredLed reports whether every partition is led by its first replica.
func preferredLed(m *clusterMeta) bool {
	for _, parts := range m.topics {
		for _, p := range parts {
			if len(p.replicas) > 0 && p.leader != p.replicas[0] {
				return false
			}
		}
	}
	return true
}

// Close implements Cluster; the lab keeps running.
func (l *LabCluster) Close() { l.admin.Close() }
