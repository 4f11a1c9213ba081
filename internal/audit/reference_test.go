package audit

import (
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

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

// literalWhatIf simulates losing broker b from scratch, the slow way: apply
// Kafka's election to every partition, recompute every topic's set and the
// max groups with the literal algorithm, and compare every pair of groups.
func literalWhatIf(c *topology.Cluster, by By, b int32) WhatIf {
	after := c.Clone()
	w := WhatIf{Broker: b, OfflinePartitions: []string{}, SingleISR: []string{}, Elections: []Election{}}
	down := map[int32]bool{b: true}
	for _, br := range c.Brokers {
		if br.Missing {
			down[br.ID] = true
		}
	}
	dead := func(r int32) bool { return down[r] }
	for _, br := range c.Brokers {
		if !down[br.ID] {
			w.LiveBrokers++
		}
	}
	for _, p := range c.Partitions {
		if len(p.Replicas) > w.LiveBrokers {
			if w.RFAboveBrokers == 0 {
				w.rfAboveExample = p.Key().String()
			}
			w.RFAboveBrokers++
		}
	}
	for i := range after.Partitions {
		p := &after.Partitions[i]
		if !slices.Contains(p.Replicas, b) {
			continue
		}
		live := 0
		for _, r := range p.Replicas {
			if !dead(r) && p.InSync(r) && !slices.Contains(p.Offline, r) {
				live++
			}
		}
		if live == 1 && p.Leader != topology.NoLeader {
			w.SingleISR = append(w.SingleISR, p.Key().String())
		}
		if p.Leader == b {
			p.Leader = topology.ElectAfterLoss(&c.Partitions[i], dead)
			w.Elections = append(w.Elections, Election{Topic: p.Topic, Partition: p.Partition, NewLeader: p.Leader})
			if p.Leader == topology.NoLeader {
				w.OfflinePartitions = append(w.OfflinePartitions, p.Key().String())
			} else {
				w.LeadersMoved++
			}
		}
		if by == ByReplicas {
			p.Replicas = slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return r == b })
		}
	}
	w.OfflineCount, w.SingleISRCount = len(w.OfflinePartitions), len(w.SingleISR)
	w.OfflinePartitions = w.OfflinePartitions[:min(len(w.OfflinePartitions), MaxListed)]
	w.SingleISR = w.SingleISR[:min(len(w.SingleISR), MaxListed)]
	ix := topology.NewIndex(c.Brokers)
	leaders := make([]int, ix.Len())
	for _, p := range after.Partitions {
		if j, ok := ix.Pos(p.Leader); ok {
			leaders[j]++
		}
	}
	bi, _ := ix.Pos(b)
	// Max/mean over the brokers up after the loss.
	sum := 0
	for j, n := range leaders {
		if j != bi && !down[ix.ID(j)] {
			sum += n
			if n > w.LeadersMax {
				w.LeadersMax, w.BusiestBroker = n, ix.ID(j)
			}
		}
	}
	if sum > 0 {
		w.LeadersMaxOverMean = round3(float64(w.LeadersMax) * float64(w.LiveBrokers) / float64(sum))
	}
	names, before := TopicSets(c, ix, by)
	_, now := TopicSets(after, ix, by)
	past := map[string]topology.Bitset{}
	for i, n := range names {
		past[n] = before[i]
		if by == ByLeaders && !now[i].Empty() && !slices.Equal(now[i].And(before[i]), now[i]) {
			w.TopicsGainingBrokers++
		}
	}
	groups := literalMaxGroups(names, now)
	union := make([]topology.Bitset, len(groups))
	for i, g := range groups {
		union[i] = ix.NewSet()
		for _, t := range g.Topics {
			union[i] = or(union[i], past[t])
		}
	}
	for i := range groups {
		for j := i + 1; j < len(groups); j++ {
			if groups[i].Brokers.Intersects(groups[j].Brokers) && !union[i].Intersects(union[j]) {
				w.NewOverlaps++
			}
		}
	}
	return w
}

func or(a, b topology.Bitset) topology.Bitset {
	out := a.Clone()
	for i := range out {
		out[i] |= b[i]
	}
	return out
}
