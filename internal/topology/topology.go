// Package topology is kplan's model of a Kafka cluster's layout: brokers with
// racks, and partitions with their leader, ordered replicas, ISR and offline
// replicas. Broker sets are bitsets over a dense broker index, so any number
// of brokers with sparse ids (e.g. 1737..1962) costs n/64 words per set.
//
// The package is pure: no I/O beyond io.Reader/io.Writer codecs, no Kafka
// client. audit, reassign and chaos all work on this model.
package topology

import (
	"cmp"
	"fmt"
	"slices"
)

// NoLeader marks a partition without a live leader (offline).
const NoLeader int32 = -1

// Broker is one Kafka broker.
type Broker struct {
	ID   int32  `json:"id"`
	Rack string `json:"rack,omitempty"`
	// Missing is true when replicas name the broker but the cluster's own
	// broker list (a live cluster's metadata, a layout file's "brokers")
	// does not: it is down, fenced or gone. Normalize adds such brokers so
	// every replica resolves, and marks them so that nothing counts them
	// as live.
	Missing bool `json:"missing,omitempty"`
}

// Partition is one topic-partition and where its replicas live.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Replicas in assignment order; the first is the preferred leader.
	Replicas []int32 `json:"replicas"`
	// Leader is the current leader, or NoLeader when offline.
	Leader int32 `json:"leader"`
	// ISR is the in-sync replica set; nil when unknown (offline inputs),
	// in which case every replica counts as in sync.
	ISR []int32 `json:"isr,omitempty"`
	// Offline lists replicas known to be offline (live input only).
	Offline []int32 `json:"offline_replicas,omitempty"`
	// LogDirs as given in a reassignment file; kept, never interpreted.
	LogDirs []string `json:"log_dirs,omitempty"`
	// SizeBytes is the partition's size on its leader, or -1 when unknown.
	// A layout file gives it as "size_bytes"; a live cluster's comes from
	// DescribeLogDirs. `kplan reassign --balance bytes` counts it as the
	// replica's weight on its broker's disk.
	SizeBytes int64 `json:"size_bytes,omitempty"`
	// LocalBytes is what a new follower copies when it is smaller than
	// SizeBytes: a tiered topic's local tail (KIP-405 with KIP-1023, a new
	// follower fetches from the leader's local log start). 0 means not
	// known to be tiered: a new follower copies SizeBytes. (A tiered
	// partition always keeps its active segment locally, so its local
	// bytes are above 0 unless it is empty.) A layout file gives it as
	// "local_bytes".
	LocalBytes int64 `json:"local_bytes,omitempty"`
}

// CopyBytes returns the bytes a new replica of p copies: LocalBytes when
// set and below SizeBytes, else SizeBytes (-1 when unknown).
func (p *Partition) CopyBytes() int64 {
	if p.LocalBytes > 0 && p.SizeBytes >= 0 && p.LocalBytes < p.SizeBytes {
		return p.LocalBytes
	}
	return p.SizeBytes
}

// Cluster is a layout: brokers and partitions, both sorted.
type Cluster struct {
	// Brokers sorted by id. Brokers named only in replica lists are added
	// by Normalize (marked Missing when the input listed its brokers).
	Brokers []Broker `json:"brokers"`
	// Partitions sorted by topic, then partition.
	Partitions []Partition `json:"partitions"`
	// Live is true when the layout came from a running cluster, so ISR,
	// leaders and offline replicas are facts rather than assumptions.
	Live bool `json:"live,omitempty"`
}

// Key identifies a partition.
type Key struct {
	Topic     string
	Partition int32
}

// String formats the key as topic-partition, as Kafka's tools do.
func (k Key) String() string { return fmt.Sprintf("%s-%d", k.Topic, k.Partition) }

// Key returns the partition's key.
func (p *Partition) Key() Key { return Key{p.Topic, p.Partition} }

// InSync reports whether broker b is in the partition's ISR (every replica
// is when the ISR is unknown).
func (p *Partition) InSync(b int32) bool {
	if p.ISR == nil {
		return slices.Contains(p.Replicas, b)
	}
	return slices.Contains(p.ISR, b)
}

// Clone returns a deep copy of the partition.
func (p Partition) Clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.Offline = slices.Clone(p.Offline)
	p.LogDirs = slices.Clone(p.LogDirs)
	return p
}

// Clone returns a deep copy of the cluster.
func (c *Cluster) Clone() *Cluster {
	out := &Cluster{Brokers: slices.Clone(c.Brokers), Live: c.Live, Partitions: make([]Partition, len(c.Partitions))}
	for i := range c.Partitions {
		out.Partitions[i] = c.Partitions[i].Clone()
	}
	return out
}

// Normalize sorts brokers and partitions and adds a Broker entry for every
// id named in a replica list but not listed as a broker. When the cluster
// listed brokers of its own (a live cluster's metadata lists the brokers
// that are up), the added ones are marked Missing; an input without a
// broker list (Kafka's reassignment JSON, kafka-topics --describe) only
// names brokers through replicas, so none is missing. Call it after
// building a Cluster by hand.
func (c *Cluster) Normalize() {
	listed := len(c.Brokers) > 0
	known := make(map[int32]bool, len(c.Brokers))
	for _, b := range c.Brokers {
		known[b.ID] = true
	}
	for i := range c.Partitions {
		for _, r := range c.Partitions[i].Replicas {
			if !known[r] {
				known[r] = true
				c.Brokers = append(c.Brokers, Broker{ID: r, Missing: listed})
			}
		}
	}
	slices.SortFunc(c.Brokers, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(c.Partitions, ComparePartitions)
}

// ComparePartitions orders partitions by topic, then partition number.
func ComparePartitions(a, b Partition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// Topic is a view of one topic's partitions inside a Cluster.
type Topic struct {
	Name string
	// Partitions is a sub-slice of Cluster.Partitions (shared, not copied).
	Partitions []Partition
}

// Topics returns the cluster's topics in name order. It requires the
// partitions to be sorted (Normalize) and shares their memory.
func (c *Cluster) Topics() []Topic {
	var out []Topic
	for i := 0; i < len(c.Partitions); {
		j := i + 1
		for j < len(c.Partitions) && c.Partitions[j].Topic == c.Partitions[i].Topic {
			j++
		}
		out = append(out, Topic{Name: c.Partitions[i].Topic, Partitions: c.Partitions[i:j]})
		i = j
	}
	return out
}

// Broker returns the broker with id and whether it exists.
func (c *Cluster) Broker(id int32) (Broker, bool) {
	i, ok := slices.BinarySearchFunc(c.Brokers, id, func(b Broker, id int32) int { return cmp.Compare(b.ID, id) })
	if !ok {
		return Broker{}, false
	}
	return c.Brokers[i], true
}

// Find returns the index of a partition in c.Partitions, or -1.
func (c *Cluster) Find(k Key) int {
	i, ok := slices.BinarySearchFunc(c.Partitions, k, func(p Partition, k Key) int {
		if x := cmp.Compare(p.Topic, k.Topic); x != 0 {
			return x
		}
		return cmp.Compare(p.Partition, k.Partition)
	})
	if !ok {
		return -1
	}
	return i
}

// LiveBrokers counts the brokers not Missing.
func (c *Cluster) LiveBrokers() int {
	n := 0
	for _, b := range c.Brokers {
		if !b.Missing {
			n++
		}
	}
	return n
}

// HasRacks reports whether every broker has a rack.
func (c *Cluster) HasRacks() bool {
	if len(c.Brokers) == 0 {
		return false
	}
	for _, b := range c.Brokers {
		if b.Rack == "" {
			return false
		}
	}
	return true
}
