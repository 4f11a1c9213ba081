package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/topology"
)

// This file is `kplan measure unavailability`'s Kafka side: a probe that
// times, per partition, when an acks=all write succeeds again after a
// broker was killed, and the checks around it.

// probeBackoff is the probe's retry backoff and metadata min age: the
// resolution of the times it reports.
const probeBackoff = 25 * time.Millisecond

// Prober writes one record at a time to every partition of a topic with
// acks=all, through one client.
type Prober struct {
	cl    *kgo.Client
	topic string
	n     int32
}

// NewProber builds the probe's client for topic's partitions 0..n-1.
// requestTimeout bounds each dial and request (a dead broker whose address
// no longer answers costs the probe at most that), so that a write is
// retried on the new leader soon after it is elected.
func NewProber(conn ConnOptions, version, topic string, n int32, requestTimeout time.Duration) (*Prober, error) {
	cl, err := NewClient(conn, version,
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerLinger(0),
		kgo.ProduceRequestTimeout(requestTimeout),
		kgo.DialTimeout(requestTimeout),
		kgo.RequestTimeoutOverhead(requestTimeout),
		kgo.MetadataMinAge(probeBackoff),
		kgo.RetryBackoffFn(func(int) time.Duration { return probeBackoff }),
		kgo.MaxBufferedRecords(int(n)*2+16),
	)
	if err != nil {
		return nil, err
	}
	return &Prober{cl: cl, topic: topic, n: n}, nil
}

// Close releases the client.
func (p *Prober) Close() { p.cl.Close() }

// Warm writes one record to every partition and waits for all of them: the
// client then holds the topic's metadata and its connections, so that the
// timed probe measures Kafka, not the client's start.
//
// A topic just created may be unknown to some broker for a while (its
// metadata is still on the way): partitions that fail are written again
// every 200 ms until ctx ends.
func (p *Prober) Warm(ctx context.Context) error {
	todo := make([]int32, p.n)
	for i := range todo {
		todo[i] = int32(i)
	}
	for {
		recs := make([]*kgo.Record, len(todo))
		for i, part := range todo {
			recs[i] = &kgo.Record{Topic: p.topic, Partition: part, Value: []byte("warm")}
		}
		var failed []int32
		var last error
		for _, r := range p.cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				failed, last = append(failed, r.Record.Partition), r.Err
			}
		}
		if len(failed) == 0 {
			return nil
		}
		todo = failed
		select {
		case <-ctx.Done():
			return fmt.Errorf("writing to every partition of %s (%d failed): %w", p.topic, len(failed), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Probe writes one record to every partition at once, each retried until
// it is acknowledged, and returns when each was, measured from since.
// A partition not acknowledged when ctx ends has a negative time, and the
// error says how many.
func (p *Prober) Probe(ctx context.Context, since time.Time) ([]time.Duration, error) {
	out := make([]time.Duration, p.n)
	for i := range out {
		out[i] = -1
	}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		lastErr error
	)
	for i := range p.n {
		wg.Add(1)
		part := i
		p.cl.Produce(ctx, &kgo.Record{Topic: p.topic, Partition: part, Value: []byte("probe")}, func(_ *kgo.Record, err error) {
			at := time.Now()
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lastErr = err
				return
			}
			out[part] = at.Sub(since)
		})
	}
	wg.Wait()
	var missing int
	for _, d := range out {
		if d < 0 {
			missing++
		}
	}
	if missing > 0 {
		return out, fmt.Errorf("%d of %d partitions of %s did not accept a write: %w", missing, p.n, p.topic, lastErr)
	}
	return out, nil
}

// PartitionLeadership is a partition's leader and replicas as a metadata
// answer reports them.
type PartitionLeadership struct {
	Leader   int32
	Replicas []int32
	ISR      []int32
}

// ScratchAdmin is the admin side of a measurement on scratch topics: their
// leadership, the active controller, their deletion, the cluster's state.
type ScratchAdmin struct {
	cl *kgo.Client
}

// NewScratchAdmin builds the admin client.
func NewScratchAdmin(conn ConnOptions, version string) (*ScratchAdmin, error) {
	cl, err := NewClient(conn, version)
	if err != nil {
		return nil, err
	}
	return &ScratchAdmin{cl: cl}, nil
}

// Close releases the client.
func (a *ScratchAdmin) Close() { a.cl.Close() }

// Snapshot reads every topic's layout (Snapshot).
func (a *ScratchAdmin) Snapshot(ctx context.Context) (*topology.Cluster, error) {
	return Snapshot(ctx, a.cl, nil)
}

// TopicLeadership asks a broker (past the client's cache) for a topic's
// partitions; ok is false when the topic does not exist.
func (a *ScratchAdmin) TopicLeadership(ctx context.Context, topic string) (parts []PartitionLeadership, ok bool, err error) {
	cl := a.cl
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, false, fmt.Errorf("metadata %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return nil, false, fmt.Errorf("metadata %s: %d topics in the answer", topic, len(resp.Topics))
	}
	t := resp.Topics[0]
	if terr := kerr.ErrorForCode(t.ErrorCode); terr != nil {
		if errors.Is(terr, kerr.UnknownTopicOrPartition) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("metadata %s: %w", topic, terr)
	}
	parts = make([]PartitionLeadership, len(t.Partitions))
	for _, p := range t.Partitions {
		if p.Partition < 0 || int(p.Partition) >= len(parts) {
			return nil, false, fmt.Errorf("metadata %s: partition %d out of range", topic, p.Partition)
		}
		leader := p.Leader
		if kerr.ErrorForCode(p.ErrorCode) != nil {
			leader = -1
		}
		parts[p.Partition] = PartitionLeadership{Leader: leader, Replicas: p.Replicas, ISR: p.ISR}
	}
	return parts, true, nil
}

// LedInSync reports whether every partition is led by leader with all its
// replicas in sync; when not, it says about the first one that is not.
func LedInSync(parts []PartitionLeadership, leader int32) (bool, string) {
	for i, p := range parts {
		if p.Leader != leader {
			return false, fmt.Sprintf("partition %d is led by %d", i, p.Leader)
		}
		for _, r := range p.Replicas {
			if !slices.Contains(p.ISR, r) {
				return false, fmt.Sprintf("partition %d has in-sync replicas %v of %v", i, p.ISR, p.Replicas)
			}
		}
	}
	return true, ""
}

// ActiveController asks the KRaft quorum (DescribeQuorum on the metadata
// log) which node leads it: killing that node also elects a new
// controller, which a broker-failure measurement keeps apart. The
// metadata answer's controller field is not it on KRaft.
func (a *ScratchAdmin) ActiveController(ctx context.Context) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return -1, fmt.Errorf("describe quorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return -1, errors.New("describe quorum: no partition in the answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, fmt.Errorf("describe quorum: %w", err)
	}
	return p.LeaderID, nil
}

// DeleteTopic deletes a topic and waits, for at most 30 s, until the
// cluster no longer lists it (DeleteTopicsAndWait); one that does not exist
// is not an error.
func (a *ScratchAdmin) DeleteTopic(ctx context.Context, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := DeleteTopicsAndWait(ctx, a.cl, topic)
	return err
}
