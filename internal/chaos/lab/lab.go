// Package lab is the chaos experiment's real cluster: the running `kplan
// lab`, Kafka brokers on this machine. A kill is SIGKILL of the broker's
// JVM; a restart starts it again. Cluster implements chaos.Cluster.
package lab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// Label is how outputs name the real lab.
const Label = "real (kplan lab: Kafka brokers on this machine)"

// Cluster is the running `kplan lab`.
type Cluster struct {
	state *localkafka.State
	admin *kgo.Client
	conn  kafka.ConnOptions
}

// New opens the lab whose state is in dir (localkafka.DefaultDir() when
// empty). Every broker must be running. Its admin client is built from conn
// (the lab's own addresses replace conn's bootstrap servers) with version's
// client id.
func New(dir string, conn kafka.ConnOptions, version string) (*Cluster, error) {
	s, err := Load(dir)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", Dir(dir), err)
	}
	return Open(s, conn, version)
}

// Dir is dir, or kplan lab's directory (localkafka.DefaultDir) when empty:
// what --lab-dir means in every verb.
func Dir(dir string) string {
	if dir == "" {
		return localkafka.DefaultDir()
	}
	return dir
}

// Load reads the state of the lab in Dir(dir): the one place verbs find
// a lab from its directory.
func Load(dir string) (*localkafka.State, error) { return localkafka.Load(Dir(dir)) }

// Open returns the lab described by s. Every broker must be running. A
// secured lab's client properties (s.ClientConfig) are used unless conn
// names a command config of its own.
func Open(s *localkafka.State, conn kafka.ConnOptions, version string) (*Cluster, error) {
	conn, err := Conn(s, conn)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", s.Dir, err)
	}
	var dead []int32
	for _, n := range s.Brokers() {
		if !n.Alive() {
			dead = append(dead, n.ID)
		}
	}
	if len(dead) > 0 {
		return nil, fmt.Errorf("lab %s: brokers %v are not running (kplan lab restart broker-N)", s.Dir, dead)
	}
	cl, err := kafka.NewClient(conn.WithSeeds(s.Bootstrap()), version, kgo.MetadataMinAge(100*time.Millisecond), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("lab client: %w", err)
	}
	return &Cluster{state: s, admin: cl, conn: conn}, nil
}

// Conn is the connection settings the lab's clients use: the caller's, with
// the lab's client properties when the lab is secured and the caller named
// none. The experiment's producers and consumers take them too.
func (l *Cluster) Conn() kafka.ConnOptions { return l.conn }

// Conn is conn with the lab's client properties when the lab is secured
// and conn names none (an explicit --command-config wins), resolved: the
// file is read here once (not again when conn came resolved), and every
// client of the lab is built from the result. Its bootstrap servers are
// conn's: callers use WithSeeds(s.Bootstrap()).
func Conn(s *localkafka.State, conn kafka.ConnOptions) (kafka.ConnOptions, error) {
	if conn.CommandConfig == "" {
		conn.CommandConfig = s.ClientConfig()
	}
	return conn.Resolve()
}

// Kind implements chaos.Cluster.
func (*Cluster) Kind() string { return "lab" }

// Label implements chaos.Cluster.
func (*Cluster) Label() string { return Label }

// Real implements chaos.Cluster.
func (*Cluster) Real() bool { return true }

// Seeds implements chaos.Cluster.
func (l *Cluster) Seeds() []string { return l.state.Bootstrap() }

// Brokers implements chaos.Cluster.
func (l *Cluster) Brokers(context.Context) ([]int32, error) {
	var ids []int32
	for _, n := range l.state.Brokers() {
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// Layout implements chaos.Cluster.
func (l *Cluster) Layout(ctx context.Context, topic string) ([][]int32, bool, error) {
	md, err := kadm.NewClient(l.admin).Metadata(ctx, topic)
	if err != nil {
		return nil, false, fmt.Errorf("metadata %s: %w", topic, err)
	}
	t, ok := md.Topics[topic]
	if !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
		return nil, false, nil
	}
	if t.Err != nil {
		return nil, false, fmt.Errorf("metadata %s: %w", topic, t.Err)
	}
	out := make([][]int32, len(t.Partitions))
	for _, p := range t.Partitions {
		if p.Partition < 0 || int(p.Partition) >= len(out) {
			return nil, false, fmt.Errorf("metadata %s: partition %d out of range", topic, p.Partition)
		}
		out[p.Partition] = slices.Clone(p.Replicas)
	}
	return out, true, nil
}

// CreateTopic implements chaos.Cluster.
func (l *Cluster) CreateTopic(ctx context.Context, topic string, assignment [][]int32) error {
	return kafka.CreateTopic(ctx, l.admin, topic, assignment, nil)
}

// Kill implements chaos.Cluster: SIGKILL of the broker's JVM.
func (l *Cluster) Kill(_ context.Context, id int32) error { return l.state.Kill(id) }

// Restart implements chaos.Cluster: start the JVM again and wait until it
// answers.
func (l *Cluster) Restart(ctx context.Context, id int32) error {
	return l.state.Restart(ctx, id, kafka.BrokersReady(l.conn.CommandConfig))
}

// ElectPreferred implements chaos.Cluster. A restarted broker must catch up
// before it is back in sync, so the election is retried until every
// partition of every topic is led by its preferred replica or ctx ends.
func (l *Cluster) ElectPreferred(ctx context.Context) error {
	var failed error
	err := clock.Poll(ctx, nil, 500*time.Millisecond, 0, func(ctx context.Context) (bool, error) {
		if _, err := kafka.ElectPreferred(ctx, l.admin); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			failed = err
			return true, err
		}
		md, err := kadm.NewClient(l.admin).Metadata(ctx)
		return err == nil && preferredLed(md), nil
	})
	if err != nil && failed == nil {
		return fmt.Errorf("preferred election: %w", err) // ctx ended
	}
	return err
}

// preferredLed reports whether every partition is led by its first replica.
func preferredLed(md kadm.Metadata) bool {
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			if len(p.Replicas) > 0 && p.Leader != p.Replicas[0] {
				return false
			}
		}
	}
	return true
}

// Close implements chaos.Cluster; the lab keeps running.
func (l *Cluster) Close() { l.admin.Close() }
