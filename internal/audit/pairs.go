package audit

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// DefaultMinInsync is Kafka's default min.insync.replicas, what a pair
// loss is judged against when no other is given.
const DefaultMinInsync = 1

// PairLoss is the worst loss of two brokers at once for min.insync.replicas:
// the pair leaving the most partitions with fewer in-sync replicas than
// the minimum (acks=all producers then fail on them).
type PairLoss struct {
	// MinInsync is the min.insync.replicas judged against: every topic's,
	// or, when From is "cluster", the default of topics the cluster gave
	// none for (each topic's own is in Unavoidable and the counts).
	MinInsync int `json:"min_insync"`
	// From says where the minimum came from: "flag" (--min-insync),
	// "cluster" (each topic's config on a live cluster) or "default"
	// (Kafka's default, 1).
	From string `json:"min_insync_from,omitempty"`
	// Lost is the worst pair (lowest ids on ties); Pairs counts the pairs
	// of live brokers evaluated.
	Lost  [2]int32 `json:"lost"`
	Pairs int      `json:"pairs"`
	// UnderMinISR counts the partitions left under min ISR after the pair
	// is lost (Offline of them with no in-sync replica left at all);
	// AlreadyUnder of them were under it before any loss.
	UnderMinISR  int `json:"under_min_isr"`
	Offline      int `json:"offline"`
	AlreadyUnder int `json:"already_under"`
	// Unavoidable are the partitions of UnderMinISR that no placement
	// protects from every pair: with RF - 2 < min ISR some pair of brokers
	// always holds two of their replicas. Avoidable counts the others:
	// under only because their ISR is short already.
	Unavoidable []UnavoidableMinISR `json:"unavoidable"`
	Avoidable   int                 `json:"avoidable"`
	// LeastAnyPlacement is the least the worst pair can leave under min
	// ISR under any placement of the same replication factors on the live
	// brokers with full ISRs: the mean over all pairs, rounded up, which
	// the worst pair can never be below.
	LeastAnyPlacement int `json:"least_any_placement"`
	// Examples names the first partitions left under min ISR (at most
	// maxPairExamples, in partition order).
	Examples []string `json:"examples"`
}

// MinInsyncText names what the pair loss was judged against:
// "min.insync.replicas 2", or, for a live cluster's topic configs,
// "each topic's min.insync.replicas (read from the cluster; 1 where unset)".
func (pl *PairLoss) MinInsyncText() string {
	if pl.From == MinInsyncFromCluster {
		return fmt.Sprintf("each topic's min.insync.replicas (read from the cluster; %d where unset)", pl.MinInsync)
	}
	return fmt.Sprintf("min.insync.replicas %d", pl.MinInsync)
}

// UnavoidableMinISR counts the partitions under min ISR after the worst
// pair that no placement could keep above it: RF - 2 < min ISR.
type UnavoidableMinISR struct {
	RF         int `json:"rf"`
	MinInsync  int `json:"min_insync"`
	Partitions int `json:"partitions"`
}

const maxPairExamples = 10

// maxDensePairs bounds the broker count whose pair counts are kept in a
// dense n x n table (64 MiB of int32 at 4096); past it, a map holds the
// pairs that share a partition. A variable so tests can take either path.
var maxDensePairs = 4096

// WorstPairLoss returns the pair of live brokers whose loss leaves the most
// partitions with fewer live in-sync replicas than minInsync, or nil when
// fewer than three brokers are up. It never tries every pair against every
// partition: a partition with s = (live in-sync replicas) - minInsync
// below 0 counts for every pair, with s = 0 for every pair holding one of
// its in-sync replicas, with s = 1 for every pair holding two, and never
// otherwise; so per broker and per pair of in-sync replicas counts, built
// in O(partitions x RF^2), give every pair's count in O(1), and only pairs
// sharing a partition differ from the sum of their brokers' counts.
func WorstPairLoss(c *topology.Cluster, minInsync int) *PairLoss {
	return newElectModel(c).worstPair(MinInsyncs{Default: minInsync})
}

// MinInsyncs is the min.insync.replicas each topic is judged against:
// ByTopic's value for the topics it names (a live cluster's topic configs),
// Default for the others.
type MinInsyncs struct {
	Default int
	ByTopic map[string]int
}

// perTopic returns each topic's minimum, in the model's topic order.
func (mi MinInsyncs) perTopic(em *electModel) []int {
	out := make([]int, len(em.topicStart)-1)
	for ti := range out {
		out[ti] = mi.Default
		if v, ok := mi.ByTopic[em.c.Partitions[em.topicStart[ti]].Topic]; ok && v > 0 {
			out[ti] = v
		}
	}
	return out
}

// eachPartition calls fn with every partition's index and its topic's
// minimum, in partition order.
func (em *electModel) eachPartition(mins []int, fn func(i, minInsync int)) {
	for ti, m := range mins {
		for i := em.topicStart[ti]; i < em.topicStart[ti+1]; i++ {
			fn(int(i), m)
		}
	}
}

func (em *electModel) worstPair(mi MinInsyncs) *PairLoss {
	minInsync := mi.Default
	mins := mi.perTopic(em)
	ix, live := em.ix, em.live
	n := ix.Len()
	up := make([]bool, n)
	for j := range up {
		up[j] = !em.down[j]
	}
	if live < 3 {
		return nil
	}
	var (
		already int
		tallied bool             // a partition within one loss of the minimum
		single  = make([]int, n) // s = 0 partitions per in-sync broker
		dense   []int32
		sparse  map[uint64]int32
		isr     []int
	)
	if n <= maxDensePairs {
		dense = make([]int32, n*n)
	} else {
		sparse = map[uint64]int32{}
	}
	add := func(a, b int, d int32) {
		if a > b {
			a, b = b, a
		}
		if dense != nil {
			dense[a*n+b] += d
		} else {
			sparse[uint64(a)<<32|uint64(b)] += d
		}
	}
	em.eachPartition(mins, func(i, minInsync int) {
		isr = em.liveISR(i, isr[:0])
		switch s := len(isr) - minInsync; {
		case s < 0:
			already++
		case s == 0:
			tallied = true
			// Under once any in-sync replica is lost: count it once per
			// broker, less once for each pair holding two (counted twice).
			for k, a := range isr {
				single[a]++
				for _, b := range isr[k+1:] {
					add(a, b, -1)
				}
			}
		case s == 1:
			tallied = true
			for k, a := range isr {
				for _, b := range isr[k+1:] {
					add(a, b, 1)
				}
			}
		}
	})
	if already == 0 && !tallied {
		// No partition within one loss of the minimum: no pair takes any
		// under; the first pair stands for all.
		pl := &PairLoss{MinInsync: minInsync, Pairs: live * (live - 1) / 2, Unavoidable: []UnavoidableMinISR{}, Examples: []string{}}
		first := -1
		for j := range n {
			if up[j] && first < 0 {
				first = j
			} else if up[j] {
				pl.Lost = [2]int32{ix.ID(first), ix.ID(j)}
				break
			}
		}
		pl.LeastAnyPlacement = em.leastAnyPlacement(mins)
		return pl
	}
	best, ba, bb := -1, -1, -1
	consider := func(a, b, v int) {
		if a > b {
			a, b = b, a
		}
		if best < 0 {
			best, ba, bb = v, a, b
			return
		}
		ida, idb := ix.ID(a), ix.ID(b)
		if v > best || (v == best && (ida < ix.ID(ba) || (ida == ix.ID(ba) && idb < ix.ID(bb)))) {
			best, ba, bb = v, a, b
		}
	}
	if dense != nil {
		for a := range n {
			if !up[a] {
				continue
			}
			row := dense[a*n : (a+1)*n]
			for b := a + 1; b < n; b++ {
				if up[b] {
					consider(a, b, single[a]+single[b]+int(row[b]))
				}
			}
		}
	} else {
		for k, d := range sparse {
			consider(int(k>>32), int(uint32(k)), single[k>>32]+single[uint32(k)]+int(d))
		}
		// The best pair sharing nothing: the two largest single counts not
		// in the map.
		order := make([]int, 0, live)
		for j := range n {
			if up[j] {
				order = append(order, j)
			}
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(single[b], single[a]) })
		for x, a := range order {
			if x+1 < len(order) && single[a]+single[order[x+1]] < best {
				break
			}
			for _, b := range order[x+1:] {
				k := uint64(min(a, b))<<32 | uint64(max(a, b))
				if _, shared := sparse[k]; !shared {
					consider(a, b, single[a]+single[b])
					break
				}
			}
		}
	}
	pl := &PairLoss{MinInsync: minInsync, Lost: [2]int32{ix.ID(ba), ix.ID(bb)}, Pairs: live * (live - 1) / 2, AlreadyUnder: already,
		Unavoidable: []UnavoidableMinISR{}, Examples: []string{}}
	pl.describe(em, mins, ba, bb)
	return pl
}

// liveISR appends the positions of partition i's live in-sync replicas.
func (em *electModel) liveISR(i int, out []int) []int {
	for k := em.off[i]; k < em.off[i+1]; k++ {
		if em.elig[k] {
			out = append(out, int(em.rep[k]))
		}
	}
	return out
}

// describe fills the worst pair's figures by one pass over the partitions,
// and the least any placement could leave under min ISR.
func (pl *PairLoss) describe(em *electModel, mins []int, a, b int) {
	type key struct{ rf, m int }
	unavoidable := map[key]int{}
	var isr []int
	em.eachPartition(mins, func(i, m int) {
		r := int(em.off[i+1] - em.off[i])
		isr = em.liveISR(i, isr[:0])
		left := 0
		for _, j := range isr {
			if j != a && j != b {
				left++
			}
		}
		if left >= m {
			return
		}
		pl.UnderMinISR++
		if left == 0 {
			pl.Offline++
		}
		if r-2 < m {
			unavoidable[key{r, m}]++
		} else {
			pl.Avoidable++
		}
		if len(pl.Examples) < maxPairExamples {
			pl.Examples = append(pl.Examples, em.c.Partitions[i].Key().String())
		}
	})
	for _, k := range slices.SortedFunc(maps.Keys(unavoidable), func(x, y key) int {
		return cmp.Or(cmp.Compare(x.rf, y.rf), cmp.Compare(x.m, y.m))
	}) {
		pl.Unavoidable = append(pl.Unavoidable, UnavoidableMinISR{RF: k.rf, MinInsync: k.m, Partitions: unavoidable[k]})
	}
	pl.LeastAnyPlacement = em.leastAnyPlacement(mins)
}

// leastAnyPlacement is the least number of partitions the worst pair of
// live brokers can leave under min ISR m, whatever the placement of the
// same replication factors with full ISRs: the mean over the pairs, since
// the worst is never below it. A partition of RF r is under after the
// pair when m > r (always), m == r (the pair holds one of its replicas) or
// m == r - 1 (the pair holds two).
func (em *electModel) leastAnyPlacement(mins []int) int {
	live := em.live
	pairs := float64(live) * float64(live-1) / 2
	if pairs == 0 {
		return 0
	}
	var hit float64 // partitions x pairs leaving them under
	em.eachPartition(mins, func(i, m int) {
		r := int(em.off[i+1] - em.off[i])
		switch {
		case m > r:
			hit += pairs
		case m == r && r <= live:
			rest := float64(live - r)
			hit += pairs - rest*(rest-1)/2
		case m == r-1:
			hit += float64(r) * float64(r-1) / 2
		}
	})
	// A tolerance keeps an exact integer mean from rounding up.
	return int(math.Ceil(hit/pairs - 1e-9))
}
