package topology

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// GenOptions describe a synthetic layout for Generate.
type GenOptions struct {
	// Brokers is the number of brokers; ids run FirstID..FirstID+Brokers-1.
	Brokers int
	// FirstID is the first broker id (Kafka clusters often start at 1 or 1001).
	FirstID int32
	// Topics is the number of topics, named topic-00000, topic-00001, ...
	Topics int
	// Partitions is the total number of partitions over all topics; every
	// topic gets at least one.
	Partitions int
	// ReplicationFactor is the number of replicas per partition.
	ReplicationFactor int
	// Racks, when above 0, spreads brokers round robin over racks rack-0..
	// and places replicas rack-aware, as Kafka does.
	Racks int
	// Skew is the Zipf exponent of the partition counts over topics: 0
	// gives every topic the same count (±1), 1 makes topic i's count
	// proportional to 1/(i+1).
	Skew float64
	// Cells splits the brokers into this many disjoint cells and places
	// each topic inside one cell, so topics of different cells never
	// overlap; 0 or 1 means one cell, the whole cluster.
	Cells int
	// Scatter is the fraction (0..1) of topics whose replicas go to
	// brokers drawn at random from the whole cluster instead of Kafka's
	// round-robin placement: the more scatter, the more partial overlap.
	Scatter float64
	// Uneven is the fraction (0..1) of topics whose partitions are packed
	// onto fewer leader brokers than partitions, unevenly (thesis Fig 3.8).
	Uneven float64
	// Sizes, when set, draws every partition's SizeBytes from it (after
	// placement, in partition order, so the placement of a seed is the
	// same with or without sizes); nil leaves sizes unknown (-1).
	Sizes *SizeDist
}

// Validate checks the options.
func (o GenOptions) Validate() error {
	switch {
	case o.Brokers < 1:
		return errors.New("brokers: want at least 1")
	case o.Topics < 1:
		return errors.New("topics: want at least 1")
	case o.Partitions < o.Topics:
		return fmt.Errorf("partitions: want at least one per topic (%d)", o.Topics)
	case o.ReplicationFactor < 1:
		return errors.New("replication-factor: want at least 1")
	case o.Cells < 0 || o.Cells > o.Brokers:
		return fmt.Errorf("cells: want 0..%d (the broker count)", o.Brokers)
	case o.ReplicationFactor > o.Brokers/max(o.Cells, 1):
		return fmt.Errorf("replication-factor: %d is above the %d brokers of a cell", o.ReplicationFactor, o.Brokers/max(o.Cells, 1))
	case o.Racks < 0:
		return errors.New("racks: want 0 or more")
	case o.Skew < 0 || math.IsNaN(o.Skew) || math.IsInf(o.Skew, 0):
		return errors.New("skew: want 0 or more")
	case !(o.Scatter >= 0 && o.Scatter <= 1):
		return errors.New("scatter: want a fraction in 0..1")
	case !(o.Uneven >= 0 && o.Uneven <= 1):
		return errors.New("uneven: want a fraction in 0..1")
	case o.FirstID < 0 || int64(o.FirstID)+int64(o.Brokers) > math.MaxInt32:
		return errors.New("first-id: broker ids out of range")
	}
	return nil
}

// Generate builds a synthetic layout from o with rng, deterministically for
// a given seed. Topics are placed as Kafka's AdminUtils places a new topic
// (a random start broker, leaders round robin from it, followers at a random
// shift), inside their cell; Scatter and Uneven topics deviate as
// described in GenOptions. Leaders are the first replicas.
func Generate(o GenOptions, rng *rand.Rand) (*Cluster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{Brokers: make([]Broker, o.Brokers), Partitions: make([]Partition, 0, o.Partitions)}
	for i := range c.Brokers {
		c.Brokers[i].ID = o.FirstID + int32(i)
		if o.Racks > 0 {
			c.Brokers[i].Rack = "rack-" + strconv.Itoa(i%o.Racks)
		}
	}
	cells := max(o.Cells, 1)
	cellSize := o.Brokers / cells
	counts := partitionCounts(o.Topics, o.Partitions, o.Skew)
	width := len(strconv.Itoa(o.Topics - 1))
	// One backing array for every replica list: two million partitions cost
	// one allocation, not two million.
	backing := make([]int32, 0, o.Partitions*o.ReplicationFactor)
	ordered := make([][]Broker, cells) // each cell in rack-interleaved order
	for t := range o.Topics {
		name := fmt.Sprintf("topic-%0*d", width, t)
		cell := c.Brokers[(t%cells)*cellSize : (t%cells+1)*cellSize]
		if ordered[t%cells] == nil {
			ordered[t%cells] = rackOrder(cell)
		}
		var place func(p int) []int32
		switch {
		case rng.Float64() < o.Scatter:
			place = scatterPlacer(c.Brokers, o.ReplicationFactor, o.Racks > 0, rng)
		case rng.Float64() < o.Uneven && counts[t] > 2 && len(cell) > 2:
			place = unevenPlacer(cell, counts[t], o.ReplicationFactor, rng)
		default:
			place = kafkaPlacer(ordered[t%cells], o.ReplicationFactor, o.Racks > 0, rng)
		}
		for p := range counts[t] {
			start := len(backing)
			backing = append(backing, place(p)...)
			reps := backing[start:len(backing):len(backing)]
			c.Partitions = append(c.Partitions, Partition{Topic: name, Partition: int32(p), Replicas: reps, Leader: reps[0], SizeBytes: -1})
		}
	}
	if o.Sizes != nil {
		for i := range c.Partitions {
			c.Partitions[i].SizeBytes = o.Sizes.Draw(rng)
		}
	}
	return c, nil
}

// partitionCounts splits total over n topics, at least one each, with a
// Zipf-like weight 1/(i+1)^skew, largest remainders first.
func partitionCounts(n, total int, skew float64) []int {
	w := make([]float64, n)
	sum := 0.0
	for i := range w {
		w[i] = 1 / math.Pow(float64(i+1), skew)
		sum += w[i]
	}
	counts := make([]int, n)
	spare := total - n // one each first
	given := 0
	rem := make([]float64, n)
	for i := range counts {
		exact := float64(spare) * w[i] / sum
		counts[i] = 1 + int(exact)
		given += int(exact)
		rem[i] = exact - math.Floor(exact)
	}
	// Hand out what rounding left, to the largest remainders (ties to the
	// lower index), so the sum is exact.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rem[b], rem[a]) })
	for _, i := range order[:spare-given] {
		counts[i]++
	}
	return counts
}

// rackOrder interleaves brokers by rack (r0, r1, r2, r0, ...) as Kafka's
// rack-aware assignment does; without racks it returns brokers unchanged.
func rackOrder(brokers []Broker) []Broker {
	byRack := map[string][]Broker{}
	var racks []string
	for _, b := range brokers {
		if _, ok := byRack[b.Rack]; !ok {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	if len(racks) <= 1 {
		return brokers
	}
	out := make([]Broker, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

// kafkaPlacer is AdminUtils.assignReplicasToBrokers: partition p's first
// replica is broker (start+p) mod n; follower j sits at a shift of
// 1+(shift+j) mod (n-1) from it, the shift growing by one every n
// partitions. With racks, a follower skips brokers in racks already used
// until every rack holds a replica.
func kafkaPlacer(brokers []Broker, rf int, racks bool, rng *rand.Rand) func(int) []int32 {
	n := len(brokers)
	start, shift := rng.IntN(n), rng.IntN(n)
	buf := make([]int32, rf)
	nRacks := 0
	if racks {
		seen := map[string]bool{}
		for _, b := range brokers {
			seen[b.Rack] = true
		}
		nRacks = len(seen)
	}
	return func(p int) []int32 {
		s := shift + p/n
		first := (start + p) % n
		buf[0] = brokers[first].ID
		var used map[string]bool
		if racks {
			used = map[string]bool{brokers[first].Rack: true}
		}
		for j := 1; j < rf; j++ {
			idx := (first + 1 + (s+j-1)%max(n-1, 1)) % n
			// Walk forward past brokers already chosen (and, with racks, past
			// racks already used while some rack is still free).
			for k := 0; k < n; k++ {
				cand := brokers[(idx+k)%n]
				if containsID(buf[:j], cand.ID) {
					continue
				}
				if racks && len(used) < nRacks && used[cand.Rack] {
					continue
				}
				idx = (idx + k) % n
				break
			}
			buf[j] = brokers[idx].ID
			if racks {
				used[brokers[idx].Rack] = true
			}
		}
		return buf
	}
}

// scatterPlacer puts each partition's replicas on distinct brokers drawn at
// random from the whole cluster (rack-distinct while racks are free).
func scatterPlacer(brokers []Broker, rf int, racks bool, rng *rand.Rand) func(int) []int32 {
	buf := make([]int32, rf)
	return func(int) []int32 {
		used := map[string]bool{}
		for j := range rf {
			for tries := 0; ; tries++ {
				b := brokers[rng.IntN(len(brokers))]
				if containsID(buf[:j], b.ID) || racks && used[b.Rack] && tries < 8*len(brokers) {
					continue
				}
				buf[j] = b.ID
				used[b.Rack] = true
				break
			}
		}
		return buf
	}
}

// unevenPlacer leads a topic's partitions from k < partitions brokers of
// the cell, the first of them taking one partition more than its share
// (thesis Fig 3.8: four partitions on three brokers).
func unevenPlacer(cell []Broker, parts, rf int, rng *rand.Rand) func(int) []int32 {
	k := min(parts-1, len(cell))
	k = max(k, 2)
	perm := rng.Perm(len(cell))
	buf := make([]int32, rf)
	return func(p int) []int32 {
		lead := perm[0]
		if p > 0 {
			lead = perm[(p-1)%k]
		}
		buf[0] = cell[lead].ID
		for j := 1; j < rf; j++ {
			for o := j; ; o++ {
				id := cell[perm[(indexOf(perm, lead)+o)%len(cell)]].ID
				if !containsID(buf[:j], id) {
					buf[j] = id
					break
				}
			}
		}
		return buf
	}
}

func indexOf(v []int, x int) int {
	for i, y := range v {
		if y == x {
			return i
		}
	}
	return -1
}

func containsID(v []int32, id int32) bool {
	for _, x := range v {
		if x == id {
			return true
		}
	}
	return false
}

// KafkaGenerate models kafka-reassign-partitions --generate: every topic
// of c placed anew over brokers as Kafka's AdminUtils places a new topic
// (a random first broker, leaders round robin from it, followers at a
// random shift; rack-aware when every broker has a rack), whatever its
// replicas were. Each topic keeps its partitions' replication factor
// (that of its first partition) and sizes. It returns a new cluster; c is
// not changed. The tool knows nothing of sizes or of the current
// assignment, so it moves most replicas: the baseline kplan's plans are
// compared with.
func KafkaGenerate(c *Cluster, brokers []Broker, rng *rand.Rand) *Cluster {
	racks := len(brokers) > 0
	for _, b := range brokers {
		racks = racks && b.Rack != ""
	}
	ordered := rackOrder(brokers)
	out := &Cluster{Brokers: slices.Clone(brokers), Partitions: make([]Partition, 0, len(c.Partitions))}
	for _, t := range c.Topics() {
		rf := min(len(t.Partitions[0].Replicas), len(brokers))
		place := kafkaPlacer(ordered, rf, racks, rng)
		for j, p := range t.Partitions {
			reps := slices.Clone(place(j))
			out.Partitions = append(out.Partitions, Partition{Topic: p.Topic, Partition: p.Partition, Replicas: reps, Leader: reps[0],
				SizeBytes: p.SizeBytes, LocalBytes: p.LocalBytes})
		}
	}
	return out
}
