// Package remote is the chaos experiment's cluster for any Kafka cluster
// kplan reaches by --bootstrap-server: Kafka's metadata says which brokers
// there are and where, and a chaos.Killer (Chaos Mesh, docker, any command)
// hurts them on their platform, and a NetFaulter (Chaos Mesh) degrades
// their network. Every client is built by internal/kafka, so TLS, mTLS and
// SASL from --command-config hold. Cluster implements chaos.Cluster,
// chaos.KillReporter and chaos.Faulter.
package remote

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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Defaults of Options' timeouts.
const (
	DefaultLeaveTimeout  = 2 * time.Minute
	DefaultRejoinTimeout = 5 * time.Minute
)

// Options configure a Cluster.
type Options struct {
	// Conn reaches the cluster: bootstrap servers and --command-config.
	Conn kafka.ConnOptions
	// Version is kplan's version, for the client id.
	Version string
	// Killer hurts the brokers.
	Killer chaos.Killer
	// Faulter, when set, degrades their network (--fault); nil when the
	// killer has no network faults (a --fault is then a usage error).
	Faulter NetFaulter
	// LeaveTimeout bounds the wait, after the killer's Kill, for Kafka's
	// metadata to stop listing the broker; RejoinTimeout the wait, after
	// its Restore, for the broker to be back in every ISR of the experiment
	// topics. 0 means the defaults.
	LeaveTimeout, RejoinTimeout time.Duration
	// KeepTopics keeps the experiment topics this cluster created at
	// Cleanup instead of deleting them.
	KeepTopics bool
	// Poll is the metadata polling interval; 0 means 50 ms.
	Poll time.Duration
}

// Cluster is a Kafka cluster reached by its bootstrap servers, with a
// killer for its brokers.
type Cluster struct {
	o     Options
	seeds []string
	admin *kgo.Client

	mu       sync.Mutex
	known    map[int32]chaos.Broker // every broker seen, live or killed
	topics   []string               // experiment topics (created or reused)
	created  []string               // of them, those this cluster created
	killTime time.Time
	logSeen  int // killer log lines already returned by KillerLog
}

// New connects to the cluster and reads its brokers. A cluster that does
// not answer is a runtime error; a bootstrap list that names nothing is a
// usage error of field "bootstrap-server".
func New(ctx context.Context, o Options) (*Cluster, error) {
	if o.Killer == nil {
		return nil, errkind.Usagef("killer", "no killer")
	}
	if o.LeaveTimeout <= 0 {
		o.LeaveTimeout = DefaultLeaveTimeout
	}
	if o.RejoinTimeout <= 0 {
		o.RejoinTimeout = DefaultRejoinTimeout
	}
	if o.Poll <= 0 {
		o.Poll = 50 * time.Millisecond
	}
	var seeds []string
	for s := range strings.SplitSeq(o.Conn.BootstrapServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, errkind.Usagef("bootstrap-server", "no address given")
	}
	// One bounded call first: a cluster that does not answer, or refuses
	// the TLS or SASL settings, fails within the connection timeout with
	// kafka.ConnError's one line naming the address.
	ping := kafka.NewAdmin(o.Conn, o.Version)
	err := ping.Ping(ctx)
	ping.Close()
	if err != nil {
		return nil, err
	}
	cl, err := kafka.NewClient(o.Conn, o.Version, kgo.MetadataMinAge(100*time.Millisecond), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	c := &Cluster{o: o, seeds: seeds, admin: cl, known: map[int32]chaos.Broker{}}
	if _, err := c.liveBrokers(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return c, nil
}

// metadata asks a broker for metadata directly, past the client's cache:
// the kill and the restore watch it change. An empty topics asks for
// brokers only.
func (c *Cluster) metadata(ctx context.Context, topics []string) (*kmsg.MetadataResponse, error) {
	return kafka.MetadataRequest(topics).RequestWith(ctx, c.admin)
}

// Kind implements chaos.Cluster: the bootstrap servers.
func (c *Cluster) Kind() string { return strings.Join(c.seeds, ",") }

// Label implements chaos.Cluster.
func (c *Cluster) Label() string {
	return fmt.Sprintf("real (Kafka at %s; brokers killed by %s)", c.Kind(), c.o.Killer.Name())
}

// Real implements chaos.Cluster.
func (*Cluster) Real() bool { return true }

// Seeds implements chaos.Cluster.
func (c *Cluster) Seeds() []string { return slices.Clone(c.seeds) }

// Killer returns the cluster's killer.
func (c *Cluster) Killer() chaos.Killer { return c.o.Killer }

// liveBrokers asks Kafka for the brokers it lists now and remembers them.
func (c *Cluster) liveBrokers(ctx context.Context) ([]chaos.Broker, error) {
	md, err := c.metadata(ctx, []string{})
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", c.Kind(), err)
	}
	out := make([]chaos.Broker, 0, len(md.Brokers))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range md.Brokers {
		br := chaos.Broker{ID: b.NodeID, Host: b.Host, Port: b.Port}
		if b.Rack != nil {
			br.Rack = *b.Rack
		}
		c.known[b.NodeID] = br
		out = append(out, br)
	}
	slices.SortFunc(out, func(a, b chaos.Broker) int { return int(a.ID) - int(b.ID) })
	return out, nil
}

// Brokers implements chaos.Cluster: every broker seen, live or killed.
func (c *Cluster) Brokers(ctx context.Context) ([]int32, error) {
	if _, err := c.liveBrokers(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int32, 0, len(c.known))
	for id := range c.known {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// Broker returns what Kafka's metadata says of broker id (its advertised
// host and port and its rack), from a fresh answer when the broker is live
// and from the last one seen otherwise.
func (c *Cluster) Broker(ctx context.Context, id int32) (chaos.Broker, error) {
	live, err := c.liveBrokers(ctx)
	if err != nil {
		return chaos.Broker{}, err
	}
	for _, b := range live {
		if b.ID == id {
			return b, nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.known[id]; ok {
		return b, nil
	}
	ids := make([]int32, 0, len(live))
	for _, b := range live {
		ids = append(ids, b.ID)
	}
	return chaos.Broker{}, errkind.Usagef("kill", "broker-%d: no such broker (brokers %v)", id, ids)
}

// Layout implements chaos.Cluster. The topic becomes one of the
// experiment's (Restart waits for the broker in its ISR).
func (c *Cluster) Layout(ctx context.Context, topic string) ([][]int32, bool, error) {
	md, err := c.metadata(ctx, []string{topic})
	if err != nil {
		return nil, false, fmt.Errorf("metadata %s: %w", topic, err)
	}
	if len(md.Topics) != 1 {
		return nil, false, fmt.Errorf("metadata %s: %d topics in the answer", topic, len(md.Topics))
	}
	t := md.Topics[0]
	terr := kerr.ErrorForCode(t.ErrorCode)
	if errors.Is(terr, kerr.UnknownTopicOrPartition) {
		return nil, false, nil
	}
	if terr != nil {
		return nil, false, fmt.Errorf("metadata %s: %w", topic, terr)
	}
	out := make([][]int32, len(t.Partitions))
	for _, p := range t.Partitions {
		if p.Partition < 0 || int(p.Partition) >= len(out) {
			return nil, false, fmt.Errorf("metadata %s: partition %d out of range", topic, p.Partition)
		}
		out[p.Partition] = slices.Clone(p.Replicas)
	}
	c.addTopic(topic, false)
	return out, true, nil
}

func (c *Cluster) addTopic(topic string, created bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.topics, topic) {
		c.topics = append(c.topics, topic)
	}
	if created && !slices.Contains(c.created, topic) {
		c.created = append(c.created, topic)
	}
}

// CreateTopic implements chaos.Cluster: an explicit assignment on existing
// brokers; Cleanup deletes the topic unless KeepTopics.
// MinInsync reads min.insync.replicas of topics, and broker's value as the
// default for topics not created yet (kafka.MinInsync).
func (c *Cluster) MinInsync(ctx context.Context, topics []string, broker int32) (map[string]int, int, error) {
	return kafka.MinInsync(ctx, c.admin, topics, broker)
}

func (c *Cluster) CreateTopic(ctx context.Context, topic string, assignment [][]int32) error {
	if err := kafka.CreateTopic(ctx, c.admin, topic, assignment, nil); err != nil {
		return err
	}
	c.addTopic(topic, true)
	return nil
}

// Created returns the topics this cluster created.
func (c *Cluster) Created() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.created)
}

// Kill implements chaos.Cluster: the killer checks its target and kills
// it, then Kafka must stop listing the broker within LeaveTimeout.
func (c *Cluster) Kill(ctx context.Context, id int32) error {
	b, err := c.Broker(ctx, id)
	if err != nil {
		return err
	}
	if _, err := c.o.Killer.Plan(ctx, b); err != nil {
		return err
	}
	at, err := c.o.Killer.Kill(ctx, b)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.killTime = at
	c.mu.Unlock()
	return c.waitLeft(ctx, id)
}

// waitLeft waits until Kafka's metadata no longer lists broker id.
func (c *Cluster) waitLeft(ctx context.Context, id int32) error {
	wctx, cancel := context.WithTimeout(ctx, c.o.LeaveTimeout)
	defer cancel()
	var lastErr error
	err := clock.Poll(wctx, nil, c.o.Poll, 0, func(ctx context.Context) (bool, error) {
		live, err := c.liveBrokers(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		return !slices.ContainsFunc(live, func(b chaos.Broker) bool { return b.ID == id }), nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	why := "Kafka still lists it"
	if lastErr != nil {
		why = lastErr.Error()
	}
	return fmt.Errorf("broker %d did not leave the cluster within %v after the %s killer's kill (%s): %w", id, c.o.LeaveTimeout, c.o.Killer.Name(), why, err)
}

// Restart implements chaos.Cluster: the killer restores the broker, then
// Kafka must list it and have it in every ISR of the experiment topics
// within RejoinTimeout.
func (c *Cluster) Restart(ctx context.Context, id int32) error {
	c.mu.Lock()
	b, ok := c.known[id]
	c.mu.Unlock()
	if !ok {
		return errkind.Usagef("kill", "broker-%d: no such broker", id)
	}
	if err := c.o.Killer.Restore(ctx, b); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, c.o.RejoinTimeout)
	defer cancel()
	err := clock.Poll(wctx, nil, c.o.Poll, 0, func(ctx context.Context) (bool, error) {
		ok, err := c.inEveryISR(ctx, id)
		return err == nil && ok, nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("broker %d not back in every ISR of the experiment topics within %v after the restore: %w", id, c.o.RejoinTimeout, err)
}

// inEveryISR reports whether broker id is listed and in the ISR of every
// partition of the experiment topics that it replicates.
func (c *Cluster) inEveryISR(ctx context.Context, id int32) (bool, error) {
	c.mu.Lock()
	topics := slices.Clone(c.topics)
	c.mu.Unlock()
	md, err := c.metadata(ctx, topics)
	if err != nil {
		return false, err
	}
	if !slices.ContainsFunc(md.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == id }) {
		return false, nil
	}
	for _, td := range md.Topics {
		if td.ErrorCode != 0 {
			continue
		}
		for _, p := range td.Partitions {
			if slices.Contains(p.Replicas, id) && !slices.Contains(p.ISR, id) {
				return false, nil
			}
		}
	}
	return true, nil
}

// ElectPreferred implements chaos.Cluster for the experiment topics only
// (the rest of the cluster is not kplan's to move), retried until each of
// their partitions is led by its preferred replica or ctx ends.
func (c *Cluster) ElectPreferred(ctx context.Context) error {
	c.mu.Lock()
	topics := slices.Clone(c.topics)
	c.mu.Unlock()
	if len(topics) == 0 {
		return nil
	}
	adm := kadm.NewClient(c.admin)
	err := clock.Poll(ctx, nil, 500*time.Millisecond, 0, func(ctx context.Context) (bool, error) {
		md, err := c.metadata(ctx, topics)
		if err == nil && preferredLed(md, topics) {
			return true, nil
		}
		if err == nil {
			// Name every partition: a topic with no partitions in the set
			// elects nothing. Partitions already led by their preferred
			// replica answer ELECTION_NOT_NEEDED; a broker still catching
			// up answers PREFERRED_LEADER_NOT_AVAILABLE: both are retried
			// by reading the metadata again.
			set := kadm.TopicsSet{}
			for _, td := range md.Topics {
				for _, p := range td.Partitions {
					if td.Topic != nil {
						set.Add(*td.Topic, p.Partition)
					}
				}
			}
			_, _ = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("preferred election of the experiment topics: %w", err)
	}
	return nil
}

func preferredLed(md *kmsg.MetadataResponse, topics []string) bool {
	if len(md.Topics) != len(topics) {
		return false
	}
	for _, td := range md.Topics {
		if td.ErrorCode != 0 {
			return false
		}
		for _, p := range td.Partitions {
			if len(p.Replicas) > 0 && p.Leader != p.Replicas[0] {
				return false
			}
		}
	}
	return true
}

// KillTime implements chaos.KillReporter.
func (c *Cluster) KillTime() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killTime
}

// KillerLog implements chaos.KillReporter: the killer's log since the
// previous call, so that each run of a --repeat has its own lines.
func (c *Cluster) KillerLog() []string {
	all := c.o.Killer.Log()
	c.mu.Lock()
	defer c.mu.Unlock()
	from := min(c.logSeen, len(all))
	c.logSeen = len(all)
	if from == len(all) {
		return nil
	}
	return all[from:]
}

// Cleanup removes what the experiment left: the killer's objects, and the
// topics this cluster created unless KeepTopics. Call it with a context
// that Ctrl-C does not cancel; it tries everything and joins the errors.
// The names of the topics deleted are returned.
func (c *Cluster) Cleanup(ctx context.Context) ([]string, error) {
	var errs []error
	if err := c.ClearFault(ctx); err != nil {
		errs = append(errs, fmt.Errorf("clear the network fault: %w", err))
	}
	if err := c.o.Killer.Cleanup(ctx); err != nil {
		errs = append(errs, fmt.Errorf("%s cleanup: %w", c.o.Killer.Name(), err))
	}
	var deleted []string
	if created := c.Created(); !c.o.KeepTopics && len(created) > 0 {
		// Deleted means gone: it waits until no broker lists them.
		var err error
		deleted, err = kafka.DeleteTopicsAndWait(ctx, c.admin, created...)
		if err != nil {
			errs = append(errs, err)
		}
		c.mu.Lock()
		c.created = slices.DeleteFunc(c.created, func(t string) bool { return slices.Contains(deleted, t) })
		c.mu.Unlock()
	}
	return deleted, errors.Join(errs...)
}

// Close implements chaos.Cluster; the cluster keeps running.
func (c *Cluster) Close() { c.admin.Close() }

// Snapshot reads the cluster's live layout, every topic but Kafka's
// internal ones, for a dry run's what-if.
func (c *Cluster) Snapshot(ctx context.Context) (*topology.Cluster, error) {
	return kafka.Snapshot(ctx, c.admin, nil)
}
