// Package audit finds where a layout will skew broker load: node-topic max
// groups and their partial overlaps (Burato, 2019, ch. 3), computed with
// bitsets over a dense broker index. It is pure: a topology.Cluster in,
// values out, nothing printed.
package audit

import (
	"cmp"
	"hash/maphash"
	"math/bits"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// By selects which brokers define a topic's broker set N(t).
type By int

const (
	// ByLeaders uses the brokers leading at least one partition (the thesis's N(t)).
	ByLeaders By = iota
	// ByReplicas uses every broker holding a replica (followers carry replication load).
	ByReplicas
)

// TopicSets returns every topic's name and broker set, in topic order.
// Offline partitions (no leader) add nothing under ByLeaders.
func TopicSets(c *topology.Cluster, ix *topology.Index, by By) ([]string, []topology.Bitset) {
	topics := c.Topics()
	names := make([]string, len(topics))
	sets := make([]topology.Bitset, len(topics))
	for i, t := range topics {
		names[i] = t.Name
		s := ix.NewSet()
		for _, p := range t.Partitions {
			if by == ByReplicas {
				for _, r := range p.Replicas {
					if j, ok := ix.Pos(r); ok {
						s.Set(j)
					}
				}
			} else if j, ok := ix.Pos(p.Leader); ok {
				s.Set(j)
			}
		}
		sets[i] = s
	}
	return names, sets
}

// Group is a node-topic max group: all topics sharing one broker set.
type Group struct {
	// ID numbers groups 1..M in the order of their first topic's name.
	ID      int
	Brokers topology.Bitset
	// Topics, in name order.
	Topics []string
}

// MaxGroups groups topics with identical broker sets (Algorithm 1,
// GETMAXGROUPS) by hashing the bitsets: O(T·n/64) instead of O(T·M·n).
// Topics with an empty set (e.g. every partition offline) form no group.
// Groups share the sets' memory.
func MaxGroups(names []string, sets []topology.Bitset) []Group {
	key := hashKey()
	head := make(map[uint64]int32, len(sets)/4+1) // hash -> first group with it
	var next []int32                              // group -> next group with the same hash, or -1
	var rep []int32                               // group -> its first topic
	var count []int32                             // group -> topics
	groupOf := make([]int32, len(sets))
	for i, s := range sets {
		groupOf[i] = -1
		if s.Empty() {
			continue
		}
		h := hashSet(key, s)
		first, ok := head[h]
		g := int32(-1)
		if ok {
			for x := first; x >= 0; x = next[x] {
				if sets[rep[x]].Equal(s) {
					g = x
					break
				}
			}
		}
		if g < 0 {
			g = int32(len(rep))
			rep = append(rep, int32(i))
			count = append(count, 0)
			if ok {
				next = append(next, first)
			} else {
				next = append(next, -1)
			}
			head[h] = g
		}
		groupOf[i] = g
		count[g]++
	}
	// Every group's topics in one backing array, in input order.
	backing := make([]string, 0, len(sets))
	groups := make([]Group, len(rep))
	start := make([]int, len(rep))
	off := 0
	for g, n := range count {
		start[g] = off
		off += int(n)
	}
	backing = backing[:off]
	fill := slices.Clone(start)
	for i, g := range groupOf {
		if g >= 0 {
			backing[fill[g]] = names[i]
			fill[g]++
		}
	}
	for g := range groups {
		groups[g] = Group{Brokers: sets[rep[g]], Topics: backing[start[g]:fill[g]:fill[g]]}
	}
	return number(groups)
}

// hashKey returns a fresh per-process key for hashSet.
func hashKey() uint64 { return maphash.Comparable(maphash.MakeSeed(), "kplan.audit") }

// hashSet hashes a set's words under key (multiply-xorshift), for grouping
// equal sets without comparing every pair.
func hashSet(key uint64, s topology.Bitset) uint64 {
	h := key
	for _, w := range s {
		h ^= w
		h *= 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	return h
}

// number sorts each group's topics, orders groups by first topic, and
// assigns IDs 1..M, so output never depends on hashing. Input in name
// order (as TopicSets gives it) is already sorted: nothing moves.
func number(groups []Group) []Group {
	for i := range groups {
		if !slices.IsSorted(groups[i].Topics) {
			slices.Sort(groups[i].Topics)
		}
	}
	byFirst := func(a, b Group) int { return cmp.Compare(a.Topics[0], b.Topics[0]) }
	if !slices.IsSortedFunc(groups, byFirst) {
		slices.SortFunc(groups, byFirst)
	}
	for i := range groups {
		groups[i].ID = i + 1
	}
	return groups
}

// Overlap is a pair of max groups whose broker sets intersect.
type Overlap struct {
	A, B   int // group IDs, A < B
	Shared topology.Bitset
}

// Overlaps finds every overlapping pair (Algorithm 2, DPO, with the shared
// brokers) through a broker-to-groups index, so the cost follows the number
// of overlaps rather than M². n is the number of brokers.
func Overlaps(groups []Group, n int) []Overlap {
	out, _ := OverlapsUpTo(groups, n, 0)
	return out
}

// OverlapsUpTo is Overlaps stopping after limit pairs (0: no limit); it
// reports whether it stopped early, having listed the first limit pairs in
// (A, B) order. A randomly placed cluster can overlap in almost every pair
// of its groups (hundreds of millions of pairs on 1,000 brokers), which no
// one can read and no machine should hold.
//
// For each group A it collects the groups B > A met on any of A's brokers
// (a stamp per group drops repeats), so the work is the sum over brokers of
// their group count squared, never M².
func OverlapsUpTo(groups []Group, n, limit int) ([]Overlap, bool) {
	view := brokerGroups(groups, n)
	// seen marks the groups B > A met on A's brokers (bit B); scanning its
	// words from the lowest to the highest mark yields them in order
	// without sorting, and clears them for the next A.
	seen := make(topology.Bitset, len(groups)/64+1)
	// First the pairs, as B IDs per A in one flat list (ends[i] closes
	// group i's run), then the result sized once: no slice of two-pointer
	// structs regrows.
	var bs []int32
	ends := make([]int, len(groups))
	truncated := false
	for ai := range groups {
		a := &groups[ai]
		lo, hi := len(groups)+1, 0
		for wi, w := range a.Brokers {
			for w != 0 {
				b := wi*64 + bits.TrailingZeros64(w)
				w &= w - 1
				gs := view[b]
				// IDs are increasing: skip those up to A.
				k, _ := slices.BinarySearch(gs, a.ID+1)
				if k < len(gs) {
					lo, hi = min(lo, gs[k]), max(hi, gs[len(gs)-1])
				}
				for _, g := range gs[k:] {
					seen.Set(g)
				}
			}
		}
		for wi := lo / 64; lo <= hi && wi <= hi/64; wi++ {
			w := seen[wi]
			seen[wi] = 0
			for w != 0 {
				bs = append(bs, int32(wi*64+bits.TrailingZeros64(w)))
				w &= w - 1
			}
		}
		if limit > 0 && len(bs) > limit {
			bs, truncated = bs[:limit], true
			ends[ai] = limit
			ends = ends[:ai+1]
			break
		}
		ends[ai] = len(bs)
	}
	if len(bs) == 0 {
		return nil, truncated
	}
	words := len(groups[0].Brokers)
	slab := make([]uint64, len(bs)*words)
	out := make([]Overlap, len(bs))
	i := 0
	for ai, end := range ends {
		x := groups[ai].Brokers
		for ; i < end; i++ {
			y := groups[bs[i]-1].Brokers
			shared := topology.Bitset(slab[i*words : (i+1)*words : (i+1)*words])
			for w := range shared {
				shared[w] = x[w] & y[w]
			}
			out[i] = Overlap{A: groups[ai].ID, B: int(bs[i]), Shared: shared}
		}
	}
	return out, truncated
}

// brokerGroups maps each dense broker index to the IDs of the groups whose
// broker set holds it, in increasing ID order, all in one backing array.
func brokerGroups(groups []Group, n int) [][]int {
	count := make([]int, n+1)
	for _, g := range groups {
		for wi, w := range g.Brokers {
			for w != 0 {
				count[wi*64+bits.TrailingZeros64(w)+1]++
				w &= w - 1
			}
		}
	}
	for b := 1; b <= n; b++ {
		count[b] += count[b-1]
	}
	backing := make([]int, count[n])
	fill := slices.Clone(count[:n])
	for _, g := range groups {
		for wi, w := range g.Brokers {
			for w != 0 {
				b := wi*64 + bits.TrailingZeros64(w)
				backing[fill[b]] = g.ID
				fill[b]++
				w &= w - 1
			}
		}
	}
	view := make([][]int, n)
	for b := range view {
		if count[b+1] > count[b] {
			view[b] = backing[count[b]:count[b+1]:count[b+1]]
		}
	}
	return view
}

// BrokerView is one broker touched by more than one max group.
type BrokerView struct {
	Broker int // dense index
	Groups []int
}

// BrokerViews lists every broker in more than one group (Algorithm 3, DPO2).
func BrokerViews(groups []Group, n int) []BrokerView {
	var out []BrokerView
	for b, gs := range brokerGroups(groups, n) {
		if len(gs) > 1 {
			out = append(out, BrokerView{Broker: b, Groups: gs})
		}
	}
	return out
}

// maxCountWords bounds the broker-to-groups bitsets CountOverlaps builds
// (64 MiB); past it, or when the groups are sparse enough that stamping is
// cheaper, it counts through the broker-to-groups lists instead.
const maxCountWords = 8 << 20

// OverlapsCounted lists up to limit overlapping pairs (0: all) and counts
// them all: the list's length when it is complete, else CountOverlaps,
// which needs no list. The list stopped early when count > len(list).
func OverlapsCounted(groups []Group, n, limit int) ([]Overlap, int) {
	list, truncated := OverlapsUpTo(groups, n, limit)
	if !truncated {
		return list, len(list)
	}
	return list, CountOverlaps(groups, n)
}

// CountOverlaps returns how many pairs of groups overlap, without listing
// them: a scattered two-million-partition layout has about 450 million
// such pairs, which OverlapsUpTo could not hold but this counts in about a
// second. n is the number of brokers.
func CountOverlaps(groups []Group, n int) int {
	if len(groups) < 2 {
		return 0
	}
	view := brokerGroups(groups, n)
	// Cost of stamping: each group A visits every group on each of its
	// brokers, so a broker in k groups costs k² visits (half of them past
	// A). Cost of the bitsets: each group A ORs one M-bit row per broker,
	// from A's own word on, so about M/128 words per membership.
	words := (len(groups) + 63) / 64
	stamp, rows := 0, 0
	for _, gs := range view {
		stamp += len(gs) * len(gs) / 2
		rows += len(gs)
	}
	if n*words > maxCountWords || rows*(words/2+1) >= stamp {
		return countByStamps(groups, view)
	}
	return countByBitsets(groups, view, n)
}

// countByBitsets counts overlapping pairs with one M-bit row of groups per
// broker: for each group A, the OR of its brokers' rows holds every group
// it meets.
func countByBitsets(groups []Group, view [][]int, n int) int {
	words := (len(groups) + 63) / 64
	back := make([]uint64, n*words)
	gb := make([]topology.Bitset, n)
	for b, gs := range view {
		gb[b] = back[b*words : (b+1)*words : (b+1)*words]
		for _, id := range gs {
			gb[b].Set(id - 1)
		}
	}
	acc := make(topology.Bitset, words)
	total := 0
	for ai := range groups {
		// Groups after A, met on any of A's brokers: OR their rows from
		// A's word on, then count the bits above A.
		from := (ai + 1) / 64
		if from >= words {
			break
		}
		part := acc[from:]
		clear(part)
		for wi, w := range groups[ai].Brokers {
			for w != 0 {
				row := gb[wi*64+bits.TrailingZeros64(w)][from:]
				w &= w - 1
				for i, x := range row {
					part[i] |= x
				}
			}
		}
		part[0] &^= (1 << (uint(ai+1) & 63)) - 1 // A and the groups before it
		for _, x := range part {
			total += bits.OnesCount64(x)
		}
	}
	return total
}

// countByStamps counts overlapping pairs through the broker-to-groups
// lists: for each group A, every group B > A met on one of A's brokers,
// once (a stamp per group drops repeats).
func countByStamps(groups []Group, view [][]int) int {
	stamp := make([]int32, len(groups)+1)
	total := 0
	for ai := range groups {
		a := &groups[ai]
		mark := int32(a.ID)
		for wi, w := range a.Brokers {
			for w != 0 {
				gs := view[wi*64+bits.TrailingZeros64(w)]
				w &= w - 1
				k, _ := slices.BinarySearch(gs, a.ID+1)
				for _, g := range gs[k:] {
					if stamp[g] != mark {
						stamp[g] = mark
						total++
					}
				}
			}
		}
	}
	return total
}
