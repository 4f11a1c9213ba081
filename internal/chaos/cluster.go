package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/kafka"
)

// Cluster is what an experiment runs against. Each kind of cluster has its
// own adapter package (internal/chaos/embedded, internal/chaos/lab, ...):
// this package only experiments. Implementations must be safe for use from
// one goroutine at a time.
type Cluster interface {
	// Kind is "embedded", "lab" or a bootstrap address, as reported in JSON.
	Kind() string
	// Label says in words what the cluster is, printed in every output.
	Label() string
	// Real reports whether killing a broker kills a real process, so the
	// safety checks apply and the failover is an election worth timing (a
	// simulated cluster moves its leaders before Kill returns).
	Real() bool
	// Seeds returns bootstrap addresses for clients.
	Seeds() []string
	// Brokers returns every broker id the cluster knows, live or killed.
	Brokers(ctx context.Context) ([]int32, error)
	// Layout returns a topic's replica assignment, or ok false if the topic
	// does not exist.
	Layout(ctx context.Context, topic string) (assignment [][]int32, ok bool, err error)
	// CreateTopic creates a topic with an explicit replica assignment.
	CreateTopic(ctx context.Context, topic string, assignment [][]int32) error
	// Kill stops a broker as a crash would.
	Kill(ctx context.Context, id int32) error
	// Restart brings a killed broker back and waits until it answers.
	Restart(ctx context.Context, id int32) error
	// ElectPreferred moves leadership back to preferred replicas.
	ElectPreferred(ctx context.Context) error
	// Close releases what the cluster holds (the embedded cluster stops).
	Close()
}

// KillReporter is implemented by a cluster whose kills a Killer performs
// (internal/chaos/remote): Run times the failover from the kill time the
// killer reports and puts its log into the result.
type KillReporter interface {
	// KillTime is when the last kill took effect, as the killer reports
	// it; zero when unknown.
	KillTime() time.Time
	// KillerLog is the killer's log so far (Killer.Log).
	KillerLog() []string
}

// partMeta is one partition as a metadata answer reports it.
type partMeta struct {
	leader   int32
	replicas []int32
	isr      []int32
}

// clusterMeta is a metadata answer: live brokers and the topics asked for.
type clusterMeta struct {
	brokers []int32 // ascending
	topics  map[string][]partMeta
}

// fetchMeta asks one broker for metadata directly (no client cache). nil
// topics asks for every topic.
func fetchMeta(ctx context.Context, cl *kgo.Client, topics []string) (*clusterMeta, error) {
	req := kmsg.NewPtrMetadataRequest() // every topic
	if topics != nil {
		req = kafka.MetadataRequest(topics)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	m := &clusterMeta{topics: map[string][]partMeta{}}
	for _, b := range resp.Brokers {
		m.brokers = append(m.brokers, b.NodeID)
	}
	slices.Sort(m.brokers)
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				continue
			}
			return nil, fmt.Errorf("metadata %s: %w", *t.Topic, err)
		}
		parts := make([]partMeta, len(t.Partitions))
		for _, p := range t.Partitions {
			if int(p.Partition) >= len(parts) || p.Partition < 0 {
				return nil, fmt.Errorf("metadata %s: partition %d out of range", *t.Topic, p.Partition)
			}
			leader := p.Leader
			if errors.Is(kerr.ErrorForCode(p.ErrorCode), kerr.LeaderNotAvailable) {
				leader = -1
			}
			parts[p.Partition] = partMeta{leader: leader, replicas: p.Replicas, isr: p.ISR}
		}
		m.topics[*t.Topic] = parts
	}
	return m, nil
}

// leaders returns the distinct leaders of a topic's partitions, ascending.
func (m *clusterMeta) leaders(topic string) []int32 {
	var out []int32
	for _, p := range m.topics[topic] {
		if p.leader >= 0 && !slices.Contains(out, p.leader) {
			out = append(out, p.leader)
		}
	}
	slices.Sort(out)
	return out
}

// allLed reports whether every partition of topics has a leader that is a
// live broker other than dead.
func (m *clusterMeta) allLed(topics []string, dead int32) bool {
	for _, t := range topics {
		parts, ok := m.topics[t]
		if !ok || len(parts) == 0 {
			return false
		}
		for _, p := range parts {
			if p.leader < 0 || p.leader == dead || !slices.Contains(m.brokers, p.leader) {
				return false
			}
		}
	}
	return true
}
