package reassign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/kplan-dev/kplan/internal/topology"
)

// layout describes a generated cluster.
type layout struct {
	brokers  int
	firstID  int32
	racks    int
	topics   int
	minParts int
	maxParts int
	rf       int
	// skew: broker weights are exp(skew·N(0,1)); 0 places uniformly.
	skew float64
}

// generate builds a layout whose replicas are drawn per broker weight
// (distinct brokers per partition; distinct racks when racks >= rf), first
// replica leading. It is the test and benchmark generator for this package.
func generate(rng *rand.Rand, l layout) *topology.Cluster {
	c := &topology.Cluster{}
	weights := make([]float64, l.brokers)
	cum := make([]float64, l.brokers)
	total := 0.0
	for i := range l.brokers {
		b := topology.Broker{ID: l.firstID + int32(i)}
		if l.racks > 0 {
			b.Rack = fmt.Sprintf("rack-%d", i%l.racks)
		}
		c.Brokers = append(c.Brokers, b)
		weights[i] = math.Exp(l.skew * rng.NormFloat64())
		total += weights[i]
		cum[i] = total
	}
	rackAware := l.racks >= l.rf
	pick := func() int {
		x := rng.Float64() * total
		return sort.SearchFloat64s(cum, x)
	}
	for t := range l.topics {
		name := fmt.Sprintf("topic-%04d", t)
		np := l.minParts + rng.IntN(l.maxParts-l.minParts+1)
		for p := range np {
			reps := make([]int32, 0, l.rf)
			for len(reps) < l.rf {
				b := min(pick(), l.brokers-1)
				id := l.firstID + int32(b)
				if slices.Contains(reps, id) {
					continue
				}
				if rackAware && slices.ContainsFunc(reps, func(r int32) bool { return int(r-l.firstID)%l.racks == b%l.racks }) {
					continue
				}
				reps = append(reps, id)
			}
			c.Partitions = append(c.Partitions, topology.Partition{Topic: name, Partition: int32(p), Replicas: reps, Leader: reps[0], SizeBytes: -1})
		}
	}
	c.Normalize()
	return c
}

// kafkaGenerate re-implements what kafka-reassign-partitions --generate
// does: for every topic, AdminUtils.assignReplicasToBrokers over the target
// brokers (sorted by id) with a random start index and a random replica
// shift, rack-aware when every broker has a rack (Kafka's
// server-common org.apache.kafka.admin.AdminUtils).
func kafkaGenerate(rng *rand.Rand, c *topology.Cluster, brokers []topology.Broker, rf int) *topology.Cluster {
	out := &topology.Cluster{Brokers: slices.Clone(brokers)}
	for _, t := range c.Topics() {
		r := rf
		if r == 0 {
			r = len(t.Partitions[0].Replicas)
		}
		assign := assignReplicasToBrokers(rng, brokers, len(t.Partitions), r)
		for i, p := range t.Partitions {
			out.Partitions = append(out.Partitions, topology.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: assign[i], Leader: assign[i][0], SizeBytes: p.SizeBytes})
		}
	}
	return out
}

func assignReplicasToBrokers(rng *rand.Rand, brokers []topology.Broker, nPartitions, rf int) [][]int32 {
	withRack := true
	for _, b := range brokers {
		if b.Rack == "" {
			withRack = false
		}
	}
	list := make([]int32, len(brokers))
	for i, b := range brokers {
		list[i] = b.ID
	}
	rackOf := map[int32]string{}
	numRacks := 0
	if withRack {
		byRack := map[string][]int32{}
		for _, b := range brokers {
			rackOf[b.ID] = b.Rack
			byRack[b.Rack] = append(byRack[b.Rack], b.ID)
		}
		racks := make([]string, 0, len(byRack))
		for r := range byRack {
			racks = append(racks, r)
			slices.Sort(byRack[r])
		}
		slices.Sort(racks)
		numRacks = len(racks)
		// getRackAlternatedBrokerList
		list = list[:0]
		next := map[string]int{}
		for ri := 0; len(list) < len(brokers); ri = (ri + 1) % len(racks) {
			if r := racks[ri]; next[r] < len(byRack[r]) {
				list = append(list, byRack[r][next[r]])
				next[r]++
			}
		}
	}
	n := len(list)
	startIndex := rng.IntN(n)
	nextReplicaShift := rng.IntN(n)
	replicaIndex := func(first, shift, j int) int {
		s := 1 + (shift+j)%(n-1)
		return (first + s) % n
	}
	out := make([][]int32, nPartitions)
	for p := range nPartitions {
		if p > 0 && p%n == 0 {
			nextReplicaShift++
		}
		first := (p + startIndex) % n
		reps := []int32{list[first]}
		if !withRack {
			for j := range rf - 1 {
				reps = append(reps, list[replicaIndex(first, nextReplicaShift, j)])
			}
			out[p] = reps
			continue
		}
		racksWith := map[string]bool{rackOf[list[first]]: true}
		k := 0
		for range rf - 1 {
			for {
				b := list[replicaIndex(first, nextReplicaShift*numRacks, k)]
				k++
				if (!racksWith[rackOf[b]] || len(racksWith) == numRacks) && (!slices.Contains(reps, b) || len(reps) == n) {
					reps = append(reps, b)
					racksWith[rackOf[b]] = true
					break
				}
			}
		}
		out[p] = reps
	}
	return out
}

// movesBetween counts replicas in b not in a's replica set (same partitions).
func movesBetween(a, b *topology.Cluster) int {
	moves := 0
	for i := range a.Partitions {
		for _, r := range b.Partitions[i].Replicas {
			if !slices.Contains(a.Partitions[i].Replicas, r) {
				moves++
			}
		}
	}
	return moves
}
