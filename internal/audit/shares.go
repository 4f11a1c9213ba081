package audit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// Partitioner names PredictShares knows beyond RoundRobin and Node, spelled
// as `kplan chaos --partitioner` spells them.
const (
	Default     = "default"
	Random      = "random"
	Hash        = "hash"
	LeastBackup = "leastbackup"
	SQF         = "sqf"
	SQFShared   = "sqf-shared"
)

// SharePartitioners lists every partitioner PredictShares knows (every one
// kplan chaos runs), in the order kplan audit prints them.
var SharePartitioners = []string{RoundRobin, Node, SQF, SQFShared, Default, Random, Hash, LeastBackup}

func knownPartitioner(name string) bool { return slices.Contains(SharePartitioners, name) }

// Regime says whether producers are held below the brokers' capacity
// (rate-capped: in-flight queues stay short) or write as fast as they can
// (queues fill). Only the shared SQF's prediction depends on it.
type Regime uint8

// Regimes.
const (
	RateCapped Regime = iota
	Saturated
)

// ShareOptions tune PredictShares.
type ShareOptions struct {
	Regime Regime
}

// PredictedShares is the expected load per broker under one partitioner.
type PredictedShares struct {
	Partitioner string `json:"partitioner"`
	// Load per broker id, in the loads' unit, for every broker of the
	// layout (0 for brokers that lead nothing written).
	Load map[int32]float64 `json:"load"`
	// Basis says in words what the prediction rests on.
	Basis string `json:"basis"`
}

// Shares returns each broker's share of the total over the given brokers
// (nil: every broker with a load entry); shares sum to 1 when the total is
// positive.
func (p PredictedShares) Shares(over []int32) map[int32]float64 {
	if over == nil {
		for id := range p.Load {
			over = append(over, id)
		}
	}
	var total float64
	for _, id := range over {
		total += p.Load[id]
	}
	out := make(map[int32]float64, len(over))
	for _, id := range over {
		if total > 0 {
			out[id] = p.Load[id] / total
		} else {
			out[id] = 0
		}
	}
	return out
}

// PredictShares computes the expected bytes per broker when one producer per
// topic, using the named partitioner, writes each topic of loads at its rate
// to the partitions of c as they are led in c (a partition whose leader is
// NoLeader or a Missing broker takes nothing: keyless partitioners skip it,
// and a keyed record bound for it waits rather than moving, so its share is
// left out). The model, partitioner by partitioner:
//
//   - roundrobin, random, leastbackup, and default and hash on keyless
//     records: every writable partition of a topic takes the same share;
//   - hash, and default on keyed records: each partition takes the mass of
//     the keys murmur2 sends to it (workload.Keys.PartitionMass);
//   - node, sqf, and sqf-shared while rate-capped: every broker leading a
//     writable partition of the topic takes the same share of it, split
//     evenly over the partitions it leads (sqf serves brokers whose queues
//     are within its slack round robin, and queues stay short below
//     capacity);
//   - sqf-shared when saturated: one tracker for every producer balances
//     the combined flow: each topic's traffic goes where the total is least
//     among the brokers leading it (water-filling, thesis Fig 6.7).
//
// An unknown partitioner is an error.
func PredictShares(c *topology.Cluster, loads []workload.Topic, name string, o ShareOptions) (PredictedShares, error) {
	if !knownPartitioner(name) {
		return PredictedShares{}, fmt.Errorf("no prediction for partitioner %q (want one of %s)", name, strings.Join(SharePartitioners, ", "))
	}
	out := PredictedShares{Partitioner: name, Load: make(map[int32]float64, len(c.Brokers)), Basis: basis(name, o)}
	ix := topology.NewIndex(c.Brokers)
	down := make([]bool, ix.Len())
	for _, b := range c.Brokers {
		out.Load[b.ID] = 0
		if j, ok := ix.Pos(b.ID); ok && b.Missing {
			down[j] = true
		}
	}
	live := func(id int32) bool {
		j, ok := ix.Pos(id)
		return ok && !down[j]
	}
	// Partition indexes per topic, in one pass (c.Partitions need not be
	// sorted for this).
	byTopic := make(map[string][]int32, len(loads))
	for _, l := range loads {
		byTopic[l.Name] = nil
	}
	for i := range c.Partitions {
		if v, ok := byTopic[c.Partitions[i].Topic]; ok {
			byTopic[c.Partitions[i].Topic] = append(v, int32(i))
		}
	}
	var fill []fillTopic
	var leader []int32
	for _, l := range loads {
		parts := byTopic[l.Name]
		if !(l.Rate > 0) || len(parts) == 0 {
			continue
		}
		n := 0
		for _, i := range parts {
			n = max(n, int(c.Partitions[i].Partition)+1)
		}
		leader = slices.Grow(leader[:0], n)[:n]
		for i := range leader {
			leader[i] = topology.NoLeader
		}
		for _, i := range parts {
			if p := &c.Partitions[i]; p.Partition >= 0 && live(p.Leader) {
				leader[p.Partition] = p.Leader
			}
		}
		switch name {
		case RoundRobin, Random, LeastBackup:
			uniform(out.Load, leader, l.Rate)
		case Default, Hash:
			if !l.Keys.Keyed() {
				uniform(out.Load, leader, l.Rate)
				continue
			}
			mass := l.Keys.PartitionMass(n)
			var served float64
			for p, id := range leader {
				if id != topology.NoLeader {
					served += mass[p]
				}
			}
			for p, id := range leader {
				if id != topology.NoLeader && served > 0 {
					out.Load[id] += l.Rate * mass[p] / served
				}
			}
		case Node, SQF:
			perBroker(out.Load, leader, l.Rate)
		case SQFShared:
			if o.Regime == RateCapped {
				perBroker(out.Load, leader, l.Rate)
				continue
			}
			if ids := leaders(leader); len(ids) > 0 {
				fill = append(fill, fillTopic{rate: l.Rate, brokers: ids})
			}
		}
	}
	if len(fill) > 0 {
		waterFill(out.Load, fill)
	}
	return out, nil
}

// leaders returns the distinct brokers leading a writable partition, sorted.
func leaders(leader []int32) []int32 {
	ids := make([]int32, 0, len(leader))
	for _, id := range leader {
		if id != topology.NoLeader {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// uniform gives every writable partition the same share of rate.
func uniform(load map[int32]float64, leader []int32, rate float64) {
	w := 0
	for _, id := range leader {
		if id != topology.NoLeader {
			w++
		}
	}
	for _, id := range leader {
		if id != topology.NoLeader {
			load[id] += rate / float64(w)
		}
	}
}

// perBroker gives every leader broker the same share of rate.
func perBroker(load map[int32]float64, leader []int32, rate float64) {
	ids := leaders(leader)
	for _, id := range ids {
		load[id] += rate / float64(len(ids))
	}
}

type fillTopic struct {
	rate    float64
	brokers []int32
}

// fillRounds bounds waterFill's balancing passes; each pass moves flow
// between the most and the least loaded leader of every topic, and the
// passes stop as soon as no move is above fillTolerance of the total.
const (
	fillRounds    = 10_000
	fillTolerance = 1e-12
)

// waterFill balances the combined flow as one join-the-shortest-queue
// tracker does in the fluid limit: every topic ends up sending only to the
// least loaded of its leader brokers (equal among themselves), which is
// the allocation of least squared load. It starts from an even split per
// topic and, topic by topic, moves flow from the topic's most loaded
// broker still receiving it to its least loaded one until the two are
// level (coordinate descent on the sum of squares, which converges to that
// allocation).
func waterFill(load map[int32]float64, topics []fillTopic) {
	flow := make([][]float64, len(topics))
	var total float64
	for i, t := range topics {
		flow[i] = make([]float64, len(t.brokers))
		for j, id := range t.brokers {
			flow[i][j] = t.rate / float64(len(t.brokers))
			load[id] += flow[i][j]
		}
		total += t.rate
	}
	for range fillRounds {
		moved := 0.0
		for i, t := range topics {
			lo, hi := 0, -1
			for j, id := range t.brokers {
				if load[id] < load[t.brokers[lo]] {
					lo = j
				}
				if flow[i][j] > 0 && (hi < 0 || load[id] > load[t.brokers[hi]]) {
					hi = j
				}
			}
			if hi < 0 || hi == lo {
				continue
			}
			d := min(flow[i][hi], (load[t.brokers[hi]]-load[t.brokers[lo]])/2)
			if d <= 0 {
				continue
			}
			flow[i][hi] -= d
			flow[i][lo] += d
			load[t.brokers[hi]] -= d
			load[t.brokers[lo]] += d
			moved = max(moved, d)
		}
		if moved <= fillTolerance*total {
			return
		}
	}
}

func basis(name string, o ShareOptions) string {
	switch name {
	case RoundRobin:
		return "each record to the next writable partition: every writable partition takes the same share"
	case Random:
		return "a uniformly random writable partition per record: every writable partition takes the same share in expectation"
	case LeastBackup:
		return "the writable partition with the fewest buffered records: with brokers equally fast every partition takes the same share in expectation"
	case Default:
		return "franz-go's uniform sticky partitioner: keyless, every writable partition takes the same share in expectation (64 KiB runs make short phases noisy); keyed, murmur2 of the key as Kafka does"
	case Hash:
		return "murmur2 of the key modulo the partition count (Kafka's rule): each partition takes its keys' mass; keyless records stick to a random partition per batch, the same share for each in expectation"
	case Node:
		return "round robin over the topic's leader brokers, then over each broker's partitions: every leader broker takes the same share of each topic"
	case SQF:
		return "one in-flight tracker per producer (one producer per topic): queues within the slack are served round robin, so every leader broker takes the same share of each topic, as node"
	case SQFShared:
		if o.Regime == RateCapped {
			return "one in-flight tracker shared by every producer, rate-capped: in-flight queues stay within the slack, so brokers are served round robin as node; the combined flow is balanced only when queues fill (kplan chaos --rate unlimited; kplan audit --saturated predicts it)"
		}
		return "one in-flight tracker shared by every producer, saturated: each topic's records go to the least-loaded of its leader brokers, balancing the combined flow where the layout allows (water-filling, thesis Fig 6.7)"
	}
	return strings.TrimSpace(name)
}
