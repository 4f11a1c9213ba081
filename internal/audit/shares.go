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
	KIP794      = "kip794"
)

// SharePartitioners lists every partitioner PredictShares knows (every one
// kplan chaos runs), in the order kplan audit prints them.
var SharePartitioners = []string{RoundRobin, Node, SQF, SQFShared, Default, Random, Hash, LeastBackup, KIP794}

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
//   - roundrobin, random, leastbackup, and default, kip794 and hash on
//     keyless records: every writable partition of a topic takes the same
//     share;
//   - hash, and default and kip794 on keyed records: each partition takes the mass of
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
	m, err := predictMany(c, loads, []string{name}, o, nil)
	if err != nil {
		return PredictedShares{}, err
	}
	return m.shares[0], nil
}

// many is predictMany's answer: one PredictedShares per name, and the
// live brokers leading a partition of a written topic (SkewBrokers).
type many struct {
	shares []PredictedShares
	over   []int32
}

// predictMany predicts every partitioner of names over one pass of c's
// partitions: each topic's writable leaders are found once and every
// partitioner's rule applied to them. With lost, those brokers count as
// down and every partition led by a broker that is down elects its leader
// as AfterLoss does, without copying c.
func predictMany(c *topology.Cluster, loads []workload.Topic, names []string, o ShareOptions, lost []int32) (many, error) {
	for _, name := range names {
		if !knownPartitioner(name) {
			return many{}, fmt.Errorf("no prediction for partitioner %q (want one of %s)", name, strings.Join(SharePartitioners, ", "))
		}
	}
	ix := topology.NewIndex(c.Brokers)
	down := make([]bool, ix.Len())
	for j, b := range c.Brokers {
		down[j] = b.Missing || slices.Contains(lost, b.ID)
	}
	dead := func(id int32) bool {
		j, ok := ix.Pos(id)
		return !ok || down[j]
	}
	load := make([][]float64, len(names))
	fill := make([][]fillTopic, len(names))
	for k := range names {
		load[k] = make([]float64, ix.Len())
	}
	leads := make([]bool, ix.Len())
	byTopic := topicRuns(c, loads)
	// One entry per partition of the topic (never per partition number: a
	// single partition numbered 2147483647 must not size an array).
	var leader []int32 // per partition: the leader's index position, or -1
	var number []int32 // per partition: its number
	var mass []float64
	for _, l := range loads {
		runs := byTopic[l.Name]
		if !(l.Rate > 0) || len(runs) == 0 {
			continue
		}
		leader, number = leader[:0], number[:0]
		for _, r := range runs {
			for i := r[0]; i < r[1]; i++ {
				p := &c.Partitions[i]
				if p.Partition < 0 {
					continue
				}
				leader, number = append(leader, -1), append(number, p.Partition)
				id := p.Leader
				if len(lost) > 0 && id != topology.NoLeader && dead(id) {
					id = topology.ElectAfterLoss(p, dead)
				}
				if j, ok := ix.Pos(id); ok && !down[j] {
					leader[len(leader)-1] = int32(j)
					leads[j] = true
				}
			}
		}
		ids := leaders(leader)
		mass = mass[:0]
		for k, name := range names {
			switch name {
			case RoundRobin, Random, LeastBackup:
				uniform(load[k], leader, l.Rate)
			case Default, Hash, KIP794:
				if !l.Keys.Keyed() {
					uniform(load[k], leader, l.Rate)
					continue
				}
				if len(mass) == 0 {
					mass = l.Keys.PartitionMass(len(leader))
				}
				keyed(load[k], leader, number, mass, l.Rate)
			case Node, SQF:
				perBroker(load[k], ids, l.Rate)
			case SQFShared:
				if o.Regime == RateCapped {
					perBroker(load[k], ids, l.Rate)
					continue
				}
				if len(ids) > 0 {
					fill[k] = append(fill[k], fillTopic{rate: l.Rate, brokers: ids})
				}
			}
		}
	}
	var out many
	for k, name := range names {
		if len(fill[k]) > 0 {
			waterFill(load[k], fill[k])
		}
		s := PredictedShares{Partitioner: name, Load: make(map[int32]float64, ix.Len()), Basis: basis(name, o)}
		for j, v := range load[k] {
			s.Load[ix.ID(j)] = v
		}
		out.shares = append(out.shares, s)
	}
	for j, b := range c.Brokers {
		if leads[j] {
			out.over = append(out.over, b.ID)
		}
	}
	return out, nil
}

// topicRuns returns, for every topic named in loads, the runs [from, to)
// of c.Partitions holding its partitions: one run per topic when the
// partitions are sorted, as Normalize leaves them, and still right when
// they are not. One map access per run, not per partition.
func topicRuns(c *topology.Cluster, loads []workload.Topic) map[string][][2]int {
	runs := make(map[string][][2]int, len(loads))
	for _, l := range loads {
		runs[l.Name] = nil
	}
	for i := 0; i < len(c.Partitions); {
		j := i + 1
		for j < len(c.Partitions) && c.Partitions[j].Topic == c.Partitions[i].Topic {
			j++
		}
		if v, ok := runs[c.Partitions[i].Topic]; ok {
			runs[c.Partitions[i].Topic] = append(v, [2]int{i, j})
		}
		i = j
	}
	return runs
}

// leaders returns the distinct brokers (index positions) leading a
// writable partition, sorted.
func leaders(leader []int32) []int32 {
	ids := make([]int32, 0, len(leader))
	for _, j := range leader {
		if j >= 0 {
			ids = append(ids, j)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// uniform gives every writable partition the same share of rate.
func uniform(load []float64, leader []int32, rate float64) {
	w := 0
	for _, j := range leader {
		if j >= 0 {
			w++
		}
	}
	for _, j := range leader {
		if j >= 0 {
			load[j] += rate / float64(w)
		}
	}
}

// keyed gives every writable partition the mass of the keys murmur2 sends
// to it: key mod the topic's partition count, so number is the partition's
// number and a partition numbered past the count takes no key. A record
// whose key hashes to an unwritable partition (offline, or a number the
// topic lacks) fails or waits in the producer: Kafka's hash partitioner
// never sends it to another partition, so its mass is lost, not spread.
func keyed(load []float64, leader, number []int32, mass []float64, rate float64) {
	for i, j := range leader {
		if j >= 0 && int(number[i]) < len(mass) {
			load[j] += rate * mass[number[i]]
		}
	}
}

// perBroker gives every leader broker the same share of rate.
func perBroker(load []float64, ids []int32, rate float64) {
	for _, j := range ids {
		load[j] += rate / float64(len(ids))
	}
}

type fillTopic struct {
	rate    float64
	brokers []int32 // index positions
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
func waterFill(load []float64, topics []fillTopic) {
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
	case KIP794:
		return "the Java producer's default (KIP-794): keyless, 16 KiB to one partition, then a draw weighted against queues, so every writable partition takes the same share in expectation while brokers are equally fast; keyed, murmur2 of the key"
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
