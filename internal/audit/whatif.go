package audit

import (
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/topology"
)

// WhatIf is what losing one broker would do to the layout.
type WhatIf struct {
	Broker int32 `json:"broker"`
	// LeadersMoved counts partitions the broker led that elect a new leader.
	LeadersMoved int `json:"leaders_moved"`
	// OfflinePartitions had no other live in-sync replica.
	OfflinePartitions []string `json:"offline_partitions"`
	// SingleISR are partitions left with exactly one in-sync replica.
	SingleISR          []string `json:"single_isr_partitions"`
	LeadersMaxOverMean float64  `json:"leaders_max_over_mean"`
	LeadersMax         int      `json:"leaders_max"`
	// Overlaps and NewOverlaps count pairs up to MaxOverlaps; past it they
	// are lower bounds (OverlapsTruncated).
	Overlaps          int   `json:"overlaps"`
	NewOverlaps       int   `json:"new_overlaps"`
	OverlapsTruncated bool  `json:"overlaps_truncated,omitempty"`
	BusiestBroker     int32 `json:"busiest_broker"`
}

// elect returns the leader Kafka would elect when lost is gone: the first
// replica in assignment order that is alive and in the ISR; NoLeader if none.
func elect(p *topology.Partition, lost int32) int32 {
	for _, r := range p.Replicas {
		if r != lost && p.InSync(r) && !slices.Contains(p.Offline, r) {
			return r
		}
	}
	return topology.NoLeader
}

// WhatIfLoss simulates losing each broker in lost (every broker when lost
// is empty). Only the partitions a broker holds change, so each loss costs
// its own partitions plus one regrouping of the topics.
func WhatIfLoss(c *topology.Cluster, by By, lost []int32) []WhatIf {
	ix := topology.NewIndex(c.Brokers)
	if len(lost) == 0 {
		for _, b := range c.Brokers {
			lost = append(lost, b.ID)
		}
	}
	names, baseSets := TopicSets(c, ix, by)
	baseGroups := MaxGroups(names, baseSets)
	baseOverlaps, _ := overlapKeys(baseGroups, ix)
	topicIdx := map[string]int{}
	for i, n := range names {
		topicIdx[n] = i
	}
	// Partitions per broker (any replica), built once.
	holds := make([][]int, ix.Len())
	baseLeaders := make([]int, ix.Len())
	for i := range c.Partitions {
		p := &c.Partitions[i]
		for _, r := range p.Replicas {
			if j, ok := ix.Pos(r); ok {
				holds[j] = append(holds[j], i)
			}
		}
		if j, ok := ix.Pos(p.Leader); ok {
			baseLeaders[j]++
		}
	}
	var out []WhatIf
	for _, b := range lost {
		bi, ok := ix.Pos(b)
		if !ok {
			continue
		}
		w := WhatIf{Broker: b, OfflinePartitions: []string{}, SingleISR: []string{}}
		leaders := slices.Clone(baseLeaders)
		leaders[bi] = 0
		touched := map[int]bool{}
		for _, pi := range holds[bi] {
			p := &c.Partitions[pi]
			isr := 0
			for _, r := range p.Replicas {
				if r != b && p.InSync(r) {
					isr++
				}
			}
			if p.Leader == b {
				w.LeadersMoved++
				nl := elect(p, b)
				if nl == topology.NoLeader {
					w.OfflinePartitions = append(w.OfflinePartitions, p.Key().String())
				} else if j, ok := ix.Pos(nl); ok {
					leaders[j]++
				}
				touched[topicIdx[p.Topic]] = true
			} else if by == ByReplicas {
				touched[topicIdx[p.Topic]] = true
			}
			if isr == 1 && p.Leader != topology.NoLeader {
				w.SingleISR = append(w.SingleISR, p.Key().String())
			}
		}
		// Leader skew over the surviving brokers.
		sum := 0
		for j, n := range leaders {
			if j == bi {
				continue
			}
			sum += n
			if n > w.LeadersMax {
				w.LeadersMax, w.BusiestBroker = n, ix.ID(j)
			}
		}
		if sum > 0 && ix.Len() > 1 {
			w.LeadersMaxOverMean = round3(float64(w.LeadersMax) * float64(ix.Len()-1) / float64(sum))
		}
		// Regroup with the touched topics' sets recomputed.
		sets := baseSets
		if len(touched) > 0 {
			sets = slices.Clone(baseSets)
			for ti := range touched {
				sets[ti] = lostSet(c, ix, names[ti], b, by)
			}
		}
		groups := MaxGroups(names, sets)
		keys, truncated := overlapKeys(groups, ix)
		w.Overlaps, w.OverlapsTruncated = len(keys), truncated
		for k := range keys {
			if !baseOverlaps[k] {
				w.NewOverlaps++
			}
		}
		slices.Sort(w.OfflinePartitions)
		slices.Sort(w.SingleISR)
		out = append(out, w)
	}
	return out
}

// lostSet recomputes a topic's broker set after losing broker b.
func lostSet(c *topology.Cluster, ix *topology.Index, topic string, b int32, by By) topology.Bitset {
	s := ix.NewSet()
	i, _ := slices.BinarySearchFunc(c.Partitions, topic, func(p topology.Partition, t string) int {
		return strings.Compare(p.Topic, t)
	})
	for ; i < len(c.Partitions) && c.Partitions[i].Topic == topic; i++ {
		p := &c.Partitions[i]
		if by == ByReplicas {
			for _, r := range p.Replicas {
				if j, ok := ix.Pos(r); ok && r != b {
					s.Set(j)
				}
			}
			continue
		}
		l := p.Leader
		if l == b {
			l = elect(p, b)
		}
		if j, ok := ix.Pos(l); ok {
			s.Set(j)
		}
	}
	return s
}

// overlapKeys identifies overlapping pairs by their groups' topic lists, so
// overlaps before and after a loss can be compared although IDs shift.
func overlapKeys(groups []Group, ix *topology.Index) (map[string]bool, bool) {
	out := map[string]bool{}
	ovs, truncated := OverlapsUpTo(groups, ix.Len(), MaxOverlaps)
	for _, o := range ovs {
		out[groupKey(groups[o.A-1])+"|"+groupKey(groups[o.B-1])] = true
	}
	return out, truncated
}

func groupKey(g Group) string {
	k := ""
	for _, t := range g.Topics {
		k += t + "\x00"
	}
	return k
}
