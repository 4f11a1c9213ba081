// Package kafka is kplan's one franz-go client: connection options, a live
// snapshot of a cluster into the topology model, and the admin calls the lab
// and the verbs need.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// NewClient builds a franz-go client with ClientID "kplan/"+version.
func NewClient(opts ConnOptions, version string, extra ...kgo.Opt) (*kgo.Client, error) {
	cl, _, err := newClient(opts, version, extra...)
	return cl, err
}

// newClient builds the client and returns the properties it used (the
// PLAINTEXT defaults without a command config). Options Resolve returned
// are used as they are; others are resolved here, reading their command
// config.
func newClient(opts ConnOptions, version string, extra ...kgo.Opt) (*kgo.Client, Properties, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, Properties{SecurityProtocol: "PLAINTEXT"}, err
	}
	props := opts.conn.props
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if opts.BootstrapServers == "" {
		opts.BootstrapServers = props.BootstrapServers
	}
	security := opts.conn.securityOpts(timeout)
	var seeds []string
	for s := range strings.SplitSeq(opts.BootstrapServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, props, errkind.Usagef("", "--bootstrap-server: no address given (or bootstrap.servers in --command-config)")
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("kplan/" + version),
		kgo.DialTimeout(timeout),
		kgo.RequestTimeoutOverhead(timeout),
		kgo.RetryTimeout(timeout),
		kgo.MetadataMinAge(100 * time.Millisecond),
	}
	base = append(base, security...)
	cl, err := kgo.NewClient(append(base, extra...)...)
	if err != nil {
		return nil, props, errkind.Usagef("", "kafka client: %w", err)
	}
	return cl, props, nil
}

// WaitBrokers returns nil once every broker in want answers metadata and
// is listed as a live broker, of the cluster clusterID ("" for any: see
// localkafka.Ready); it makes one attempt per call.
func WaitBrokers(ctx context.Context, clusterID string, bootstrap []string, want []int32) error {
	return BrokersReady("")(ctx, clusterID, bootstrap, want)
}

// BrokersReady is WaitBrokers through the client properties at
// commandConfig ("" for none): a secured lab's readiness check.
// The file is read once, at the first check, however many times the
// check polls.
func BrokersReady(commandConfig string) func(ctx context.Context, clusterID string, bootstrap []string, want []int32) error {
	var (
		once     sync.Once
		resolved ConnOptions
		err      error
	)
	return func(ctx context.Context, clusterID string, bootstrap []string, want []int32) error {
		once.Do(func() { resolved, err = ConnOptions{CommandConfig: commandConfig, Timeout: 2 * time.Second}.Resolve() })
		if err != nil {
			return err
		}
		return waitBrokers(ctx, resolved.WithSeeds(bootstrap), clusterID, want)
	}
}

func waitBrokers(ctx context.Context, conn ConnOptions, clusterID string, want []int32) error {
	cl, err := NewClient(conn, "lab")
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	bs, err := adm.ListBrokers(ctx)
	if err != nil {
		return err
	}
	have := bs.NodeIDs()
	for _, id := range want {
		if !slices.Contains(have, id) {
			return fmt.Errorf("broker %d not registered yet (have %v)", id, have)
		}
	}
	// Every listed broker must answer on its own address too, as a
	// broker of this cluster.
	for _, id := range want {
		if err := brokerOfCluster(ctx, cl, id, clusterID); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot reads brokers (with racks), leaders, replicas in assignment
// order, ISR and offline replicas of every topic the filter accepts
// (nil: all but Kafka's internal topics). A filter sees the internal topics
// too (__consumer_offsets, __transaction_state): they are real load on the
// brokers, and describe text lists them; live audits used to leave them
// out while audits of the same cluster's describe text counted them.
func Snapshot(ctx context.Context, cl *kgo.Client, topicFilter func(string) bool) (*topology.Cluster, error) {
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	c := &topology.Cluster{Live: true}
	for _, b := range md.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		c.Brokers = append(c.Brokers, topology.Broker{ID: b.NodeID, Rack: rack})
	}
	for _, t := range md.Topics {
		if t.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Topic, t.Err)
		}
		if !snapshotTopic(topicFilter, t.Topic, t.IsInternal) {
			continue
		}
		for _, p := range t.Partitions {
			c.Partitions = append(c.Partitions, topology.Partition{
				Topic: t.Topic, Partition: p.Partition, Leader: p.Leader,
				Replicas: slices.Clone(p.Replicas), ISR: nonNil(p.ISR), Offline: slices.Clone(p.OfflineReplicas), SizeBytes: -1,
			})
		}
	}
	c.Normalize()
	return c, nil
}

// snapshotTopic reports whether Snapshot keeps a topic: the filter
// decides, internal topics included; without a filter every topic but the
// internal ones (flagged so, or named "__...").
func snapshotTopic(filter func(string) bool, topic string, internal bool) bool {
	if filter == nil {
		return !internal && !strings.HasPrefix(topic, "__")
	}
	return filter(topic)
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return slices.Clone(s)
}

// CreateTopic creates topic with an explicit replica assignment
// (assignment[p] is partition p's replicas, preferred leader first).
func CreateTopic(ctx context.Context, cl *kgo.Client, topic string, assignment [][]int32, configs map[string]*string) error {
	req := kmsgCreateTopic(topic, assignment, configs)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("create topic %s: %d topics in the answer", topic, len(resp.Topics))
	}
	if err := kerrErr(resp.Topics[0].ErrorCode); err != nil {
		msg := ""
		if resp.Topics[0].ErrorMessage != nil {
			msg = ": " + *resp.Topics[0].ErrorMessage
		}
		return fmt.Errorf("create topic %s: %w%s", topic, err, msg)
	}
	return nil
}

// ElectPreferred runs a preferred leader election for every partition and
// returns how many partitions the controller elected (a partition already
// led by its preferred replica does not count).
func ElectPreferred(ctx context.Context, cl *kgo.Client) (int, error) {
	res, err := electPreferred(ctx, cl, nil)
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, ps := range res {
		for _, r := range ps {
			if r.Err == nil {
				moved++
			}
		}
	}
	return moved, nil
}

// ElectPreferredPartitions runs a preferred leader election for keys only
// (none when keys is empty). The map holds each partition the controller
// refused with its error (a *kerr.Error); a partition already led by its
// preferred replica (ELECTION_NOT_NEEDED) is not a refusal, nor in the map.
func ElectPreferredPartitions(ctx context.Context, cl *kgo.Client, keys []topology.Key) (map[topology.Key]error, error) {
	refused := map[topology.Key]error{}
	if len(keys) == 0 {
		return refused, nil
	}
	set := kadm.TopicsSet{}
	for _, k := range keys {
		set.Add(k.Topic, k.Partition)
	}
	res, err := electPreferred(ctx, cl, set)
	if err != nil {
		return nil, err
	}
	return electRefusals(keys, res), nil
}

// electRefusals picks from the controller's answer the partitions of keys
// it refused (or did not answer for); ELECTION_NOT_NEEDED is no refusal.
func electRefusals(keys []topology.Key, res kadm.ElectLeadersResults) map[topology.Key]error {
	refused := map[topology.Key]error{}
	for _, k := range keys {
		r, ok := res[k.Topic][k.Partition]
		switch {
		case !ok:
			refused[k] = errors.New("no answer from the controller")
		case r.Err == nil || errors.Is(r.Err, kerr.ElectionNotNeeded):
		case r.ErrMessage != "":
			refused[k] = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		default:
			refused[k] = r.Err
		}
	}
	return refused
}

// electPreferred elects the preferred leaders of set (nil: every
// partition).
func electPreferred(ctx context.Context, cl *kgo.Client, set kadm.TopicsSet) (kadm.ElectLeadersResults, error) {
	res, err := kadm.NewClient(cl).ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		return nil, fmt.Errorf("preferred election: %w", err)
	}
	return res, nil
}
