// Package embedded is the chaos experiment's simulated cluster: franz-go's
// in-process kfake, reshaped to behave like the lab where it matters for a
// kill experiment (brokers 1..N, Kafka's election rule on a kill). Cluster
// adapts it to chaos.Cluster.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/topology"
)

// errRefused is what the control function answers for a killed broker (or
// during a leadership transition); kfake then closes the connection.
var errRefused = errors.New("embedded broker is down")

// Embedded is an in-process Kafka cluster (kfake) with brokers numbered 1..N
// like the lab, so broker-3 names the same broker everywhere. kfake keeps one
// copy of every partition and no replicas; Embedded records each topic's
// replica assignment itself and keeps leaders where Kafka would: on the first
// replica at creation, and on a kill only the dead broker's partitions move,
// each to its first live replica in assignment order.
type Embedded struct {
	c       *kfake.Cluster
	version string // for the client id of the clients it builds

	mu         sync.Mutex
	addrs      map[int32]string
	live       []int32 // ascending
	killed     map[int32]bool
	assign     map[string][][]int32 // topic -> partition -> replicas
	down       atomic.Pointer[map[int32]bool]
	transition atomic.Bool // refuse every request while leaders are restored
}

// New starts a cluster of brokers numbered 1..brokers; version is kplan's,
// for the client id of the admin client it builds.
func New(brokers int, version string) (*Embedded, error) {
	if brokers < 1 || brokers > 1000 {
		return nil, fmt.Errorf("embedded cluster: %d brokers (want 1 to 1000)", brokers)
	}
	// kfake numbers brokers from 0 and makes the last one the controller for
	// good (its CreateTopics handler checks that broker). Start 0..N and drop
	// 0: brokers are 1..N and broker N is the controller.
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers + 1))
	if err != nil {
		return nil, fmt.Errorf("embedded cluster: %w", err)
	}
	e := &Embedded{c: c, version: version, addrs: map[int32]string{}, killed: map[int32]bool{}, assign: map[string][][]int32{}}
	e.down.Store(&map[int32]bool{})
	for i, addr := range c.ListenAddrs() { // in node order before any removal
		if i > 0 {
			e.addrs[int32(i)] = addr
			e.live = append(e.live, int32(i))
		}
	}
	if err := c.RemoveNode(0); err != nil {
		c.Close()
		return nil, fmt.Errorf("embedded cluster: drop kfake's broker 0: %w", err)
	}
	c.Control(e.control)
	return e, nil
}

// control refuses every request that reaches a killed broker, including on
// connections opened before the kill (kfake's RemoveNode only closes the
// listener), and every request while leaders are being restored. It runs on
// kfake's loop for every request and stays installed.
func (e *Embedded) control(kmsg.Request) (kmsg.Response, error, bool) { //nolint:revive // kfake's control signature
	if e.transition.Load() || (*e.down.Load())[e.c.CurrentNode()] {
		e.c.KeepControl()
		return nil, errRefused, true
	}
	return nil, nil, false
}

// Close stops the cluster.
func (e *Embedded) Close() { e.c.Close() }

// Addrs returns the listen addresses of the live brokers, by broker id.
func (e *Embedded) Addrs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.live))
	for _, id := range e.live {
		out = append(out, e.addrs[id])
	}
	return out
}

// Addr returns a broker's listen address (also after it was killed).
func (e *Embedded) Addr(id int32) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.addrs[id]
}

// Brokers returns the live broker ids, ascending.
func (e *Embedded) Brokers() []int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.live)
}

// Assignment returns a topic's replica assignment as created.
func (e *Embedded) Assignment(topic string) [][]int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([][]int32, len(e.assign[topic]))
	for p, r := range e.assign[topic] {
		out[p] = slices.Clone(r)
	}
	return out
}

// Leader returns a partition's leader, or -1 if the partition does not exist.
func (e *Embedded) Leader(topic string, partition int32) int32 {
	return e.c.LeaderFor(topic, partition)
}

// CreateTopic creates topic with the replica assignment (replicas per
// partition, preferred leader first) and makes every partition's first
// replica its leader, as Kafka does.
func (e *Embedded) CreateTopic(ctx context.Context, topic string, assignment [][]int32) error {
	if len(assignment) == 0 {
		return fmt.Errorf("create topic %s: empty assignment", topic)
	}
	e.mu.Lock()
	if _, ok := e.assign[topic]; ok {
		e.mu.Unlock()
		return fmt.Errorf("create topic %s: already exists", topic)
	}
	for p, replicas := range assignment {
		if len(replicas) == 0 || len(replicas) != len(assignment[0]) {
			e.mu.Unlock()
			return fmt.Errorf("create topic %s: partition %d has %d replicas (want %d, at least 1)", topic, p, len(replicas), len(assignment[0]))
		}
		seen := map[int32]bool{}
		for _, id := range replicas {
			if _, ok := e.addrs[id]; !ok || seen[id] {
				e.mu.Unlock()
				return fmt.Errorf("create topic %s: partition %d: replica %d is unknown or repeated", topic, p, id)
			}
			seen[id] = true
		}
	}
	addrs := make([]string, 0, len(e.live))
	for _, id := range e.live {
		addrs = append(addrs, e.addrs[id])
	}
	e.mu.Unlock()

	cl, err := kafka.NewClient(kafka.ConnOptions{}.WithSeeds(addrs), e.version)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), slices.Clone(replicas)
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("create topic %s: %d topics in the response", topic, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	cp := make([][]int32, len(assignment))
	for p, r := range assignment {
		cp[p] = slices.Clone(r)
	}
	e.assign[topic] = cp
	for p, replicas := range cp {
		leader := e.firstLive(replicas)
		if leader < 0 {
			return fmt.Errorf("create topic %s: partition %d has no live replica", topic, p)
		}
		if err := e.c.MoveTopicPartition(topic, int32(p), leader); err != nil {
			return fmt.Errorf("create topic %s: lead partition %d on broker %d: %w", topic, p, leader, err)
		}
	}
	return nil
}

// firstLive returns the first replica that is alive, or -1. e.mu must be held.
func (e *Embedded) firstLive(replicas []int32) int32 {
	for _, id := range replicas {
		if !e.killed[id] {
			return id
		}
	}
	return -1
}

// Kill stops broker id as a crash would: its listener closes, every request
// reaching it on an already open connection is refused (the connection is
// closed), and it leaves the cluster's metadata. Each partition it led moves
// to the first live replica in assignment order (every kfake replica is in
// sync); every other partition keeps its leader. Kill refuses, changing
// nothing, when the broker is unknown or already dead, when it is the last
// live broker, or when a partition it leads has no other live replica.
func (e *Embedded) Kill(id int32) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.addrs[id]; !ok {
		return fmt.Errorf("kill broker %d: no such broker", id)
	}
	if e.killed[id] {
		return fmt.Errorf("kill broker %d: already killed", id)
	}
	if len(e.live) == 1 {
		return fmt.Errorf("kill broker %d: it is the last live broker", id)
	}

	// Plan Kafka's election before touching anything.
	type move struct {
		topic     string
		partition int32
		leader    int32
	}
	var plan []move
	e.killed[id] = true
	dead := func(b int32) bool { return e.killed[b] }
	for topic, parts := range e.assign {
		for p, replicas := range parts {
			// kfake keeps every replica in sync (ISR nil: all replicas).
			part := topology.Partition{Topic: topic, Partition: int32(p), Leader: e.c.LeaderFor(topic, int32(p)), Replicas: replicas}
			leader := topology.ElectAfterLoss(&part, dead)
			if leader == topology.NoLeader {
				delete(e.killed, id)
				return fmt.Errorf("kill broker %d: partition %s/%d would have no live replica", id, topic, p)
			}
			plan = append(plan, move{topic, int32(p), leader})
		}
	}

	down := map[int32]bool{}
	for k := range e.killed {
		down[k] = true
	}
	e.down.Store(&down) // from here on, the victim answers nothing

	// kfake's RemoveNode gives every partition a random new leader; hold
	// every request until Kafka's choice is restored so no client sees it.
	e.transition.Store(true)
	defer e.transition.Store(false)
	if err := e.c.RemoveNode(id); err != nil {
		return fmt.Errorf("kill broker %d: %w", id, err)
	}
	e.live = slices.DeleteFunc(e.live, func(b int32) bool { return b == id })
	for _, m := range plan {
		if err := e.c.MoveTopicPartition(m.topic, m.partition, m.leader); err != nil {
			return fmt.Errorf("kill broker %d: lead %s/%d on broker %d: %w", id, m.topic, m.partition, m.leader, err)
		}
	}
	return nil
}

// Restart brings a killed broker back on its old address, empty-handed as a
// restarted Kafka broker that has not been elected anywhere yet: every leader
// stays where it is (Kafka moves leadership back only with a preferred leader
// election, which this does not run). kfake's AddNode would pick random
// leaders for every partition; Restart restores them.
func (e *Embedded) Restart(id int32) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.killed[id] {
		return fmt.Errorf("restart broker %d: not killed", id)
	}
	_, portStr, err := net.SplitHostPort(e.addrs[id])
	if err != nil {
		return fmt.Errorf("restart broker %d: %w", id, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("restart broker %d: port %q: %w", id, portStr, err)
	}
	type lead struct {
		topic     string
		partition int32
		leader    int32
	}
	var plan []lead
	for topic, parts := range e.assign {
		for p := range parts {
			plan = append(plan, lead{topic, int32(p), e.c.LeaderFor(topic, int32(p))})
		}
	}
	e.transition.Store(true)
	defer e.transition.Store(false)
	if _, _, err := e.c.AddNode(id, port); err != nil {
		return fmt.Errorf("restart broker %d: %w", id, err)
	}
	delete(e.killed, id)
	down := map[int32]bool{}
	for k := range e.killed {
		down[k] = true
	}
	e.down.Store(&down)
	e.live = append(e.live, id)
	slices.Sort(e.live)
	for _, m := range plan {
		if err := e.c.MoveTopicPartition(m.topic, m.partition, m.leader); err != nil {
			return fmt.Errorf("restart broker %d: lead %s/%d on broker %d: %w", id, m.topic, m.partition, m.leader, err)
		}
	}
	return nil
}

// ElectPreferred moves every partition's leadership to its first live replica
// in assignment order, as Kafka's preferred leader election does, and reports
// how many partitions moved.
func (e *Embedded) ElectPreferred() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	moved := 0
	for topic, parts := range e.assign {
		for p, replicas := range parts {
			want := e.firstLive(replicas)
			if want < 0 || e.c.LeaderFor(topic, int32(p)) == want {
				continue
			}
			if err := e.c.MoveTopicPartition(topic, int32(p), want); err != nil {
				return moved, fmt.Errorf("preferred election %s/%d on broker %d: %w", topic, p, want, err)
			}
			moved++
		}
	}
	return moved, nil
}
