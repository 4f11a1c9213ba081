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
func MaxGroups(names []string, sets []topology.Bitset) []Group {
	seed := maphash.MakeSeed()
	byHash := map[uint64][]int{} // hash -> indexes into groups
	var groups []Group
	for i, s := range sets {
		if s.Empty() {
			continue
		}
		h := s.Hash(seed)
		found := false
		for _, g := range byHash[h] {
			if groups[g].Brokers.Equal(s) {
				groups[g].Topics = append(groups[g].Topics, names[i])
				found = true
				break
			}
		}
		if !found {
			byHash[h] = append(byHash[h], len(groups))
			groups = append(groups, Group{Brokers: s, Topics: []string{names[i]}})
		}
	}
	return number(groups)
}

// number sorts each group's topics, orders groups by first topic, and
// assigns IDs 1..M, so output never depends on hashing.
func number(groups []Group) []Group {
	for i := range groups {
		slices.Sort(groups[i].Topics)
	}
	slices.SortFunc(groups, func(a, b Group) int { return cmp.Compare(a.Topics[0], b.Topics[0]) })
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
// reports whether it stopped early. A randomly placed cluster can overlap
// in almost every pair of its groups (hundreds of millions of pairs on
// 1,000 brokers), which no one can read and no machine should hold.
func OverlapsUpTo(groups []Group, n, limit int) ([]Overlap, bool) {
	var out []Overlap
	truncated := false
	view := brokerGroups(groups, n)
scan:
	for b, gs := range view {
		for i := 0; i < len(gs); i++ {
			for j := i + 1; j < len(gs); j++ {
				x, y := groups[gs[i]-1].Brokers, groups[gs[j]-1].Brokers
				// Report each pair once: at the lowest broker it shares,
				// found without allocating or remembering pairs.
				if firstCommon(x, y) == b {
					if limit > 0 && len(out) == limit {
						truncated = true
						break scan
					}
					out = append(out, Overlap{A: gs[i], B: gs[j], Shared: x.And(y)})
				}
			}
		}
	}
	slices.SortFunc(out, func(x, y Overlap) int {
		if c := cmp.Compare(x.A, y.A); c != 0 {
			return c
		}
		return cmp.Compare(x.B, y.B)
	})
	return out, truncated
}

// firstCommon returns the lowest index in both sets, or -1.
func firstCommon(x, y topology.Bitset) int {
	for w := range x {
		if c := x[w] & y[w]; c != 0 {
			return w*64 + bits.TrailingZeros64(c)
		}
	}
	return -1
}

// brokerGroups maps each dense broker index to the IDs of the groups whose
// broker set holds it, in increasing ID order.
func brokerGroups(groups []Group, n int) [][]int {
	view := make([][]int, n)
	for _, g := range groups {
		for _, b := range g.Brokers.Indexes() {
			view[b] = append(view[b], g.ID)
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
