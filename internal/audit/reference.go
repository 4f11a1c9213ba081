package audit

import "github.com/kplan-dev/kplan/internal/topology"

// The thesis's Algorithms 1-3 as written (Burato 2019, §3.5), kept as
// reference implementations that property tests compare the fast ones with.

// literalMaxGroups is GETMAXGROUPS: each topic is compared with every group
// found so far.
func literalMaxGroups(names []string, sets []topology.Bitset) []Group {
	var m []Group
outer:
	for i, s := range sets {
		if s.Empty() {
			continue
		}
		for g := range m {
			if m[g].Brokers.Equal(s) {
				m[g].Topics = append(m[g].Topics, names[i])
				continue outer
			}
		}
		m = append(m, Group{Brokers: s, Topics: []string{names[i]}})
	}
	return number(m)
}

// literalDPO is DPO with the intersection: every pair of groups.
func literalDPO(m []Group) []Overlap {
	var p []Overlap
	for i := 0; i < len(m); i++ {
		for j := i + 1; j < len(m); j++ {
			if in := m[i].Brokers.And(m[j].Brokers); !in.Empty() {
				p = append(p, Overlap{A: m[i].ID, B: m[j].ID, Shared: in})
			}
		}
	}
	return p
}

// literalDPO2 is DPO2: R maps nodes to groups, P keeps nodes with more
// than one.
func literalDPO2(m []Group, nodes int) []BrokerView {
	r := make([][]int, nodes)
	for _, t := range m {
		for n := 0; n < nodes; n++ {
			if t.Brokers.Has(n) {
				r[n] = append(r[n], t.ID)
			}
		}
	}
	var p []BrokerView
	for n, rn := range r {
		if len(rn) > 1 {
			p = append(p, BrokerView{Broker: n, Groups: rn})
		}
	}
	return p
}
