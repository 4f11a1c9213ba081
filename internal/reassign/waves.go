package reassign

import (
	"cmp"
	"slices"
)

// Wave summarises one wave of a split plan.
type Wave struct {
	Wave          int `json:"wave"`
	Partitions    int `json:"partitions"`
	ReplicasMoved int `json:"replicas_moved"`
	LeaderChanges int `json:"leader_changes"`
	// MaxIn and MaxOut are the most replicas one broker receives or gives
	// up in the wave.
	MaxIn  int `json:"max_in"`
	MaxOut int `json:"max_out"`
}

// SplitWaves splits the plan's changes into waves to run one after another:
// waves > 0 asks for that many, maxMoves > 0 caps the replica moves per
// wave (a partition is never split, so a partition with more moves than the
// cap gets a wave of its own). Each change goes to the wave where it raises
// the busiest involved broker's traffic least, so every wave spreads its
// copying over the brokers as evenly as the changes allow. Empty waves are
// dropped. The result is stored in p.Summary.Waves too.
func SplitWaves(p *Plan, waves, maxMoves int) [][]Change {
	if len(p.Changes) == 0 || waves <= 0 && maxMoves <= 0 {
		return nil
	}
	total := 0
	for _, c := range p.Changes {
		total += c.Moves
	}
	capacity := maxMoves
	if waves > 0 {
		capacity = max(1, (total+waves-1)/waves)
		if maxMoves > 0 {
			capacity = min(capacity, maxMoves)
		}
	}
	order := make([]int, len(p.Changes))
	for i := range order {
		order[i] = i
	}
	// Biggest first; leader-only changes last, spread by leader.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p.Changes[b].Moves, p.Changes[a].Moves) })
	type load struct {
		moves, leaders int
		in, out        map[int32]int
		lead           map[int32]int
	}
	var ws []*load
	var members [][]int
	newWave := func() int {
		ws = append(ws, &load{in: map[int32]int{}, out: map[int32]int{}, lead: map[int32]int{}})
		members = append(members, nil)
		return len(ws) - 1
	}
	if waves > 0 {
		for range waves {
			newWave()
		}
	}
	for _, ci := range order {
		c := &p.Changes[ci]
		ins, outs := moved(c)
		best, bestCost := -1, 0
		for wi, l := range ws {
			if c.Moves > 0 && l.moves > 0 && l.moves+c.Moves > capacity && (maxMoves > 0 || waves <= 0) {
				continue // full (with --waves alone a wave may overflow)
			}
			cost := 0
			for _, b := range ins {
				cost = max(cost, l.in[b]+1)
			}
			for _, b := range outs {
				cost = max(cost, l.out[b]+1)
			}
			if c.Moves == 0 {
				cost = l.lead[c.New.Replicas[0]] + 1
			}
			// Prefer the emptiest wave among equals, then the earliest.
			cost = cost*1_000_000 + l.moves + l.leaders
			if best < 0 || cost < bestCost {
				best, bestCost = wi, cost
			}
		}
		if best < 0 {
			best = newWave()
		}
		l := ws[best]
		l.moves += c.Moves
		if c.LeaderChange {
			l.leaders++
			l.lead[c.New.Replicas[0]]++
		}
		for _, b := range ins {
			l.in[b]++
		}
		for _, b := range outs {
			l.out[b]++
		}
		members[best] = append(members[best], ci)
	}
	var out [][]Change
	p.Summary.Waves = nil
	for wi, m := range members {
		if len(m) == 0 {
			continue
		}
		slices.Sort(m) // changes are sorted by topic and partition
		wave := make([]Change, len(m))
		for j, ci := range m {
			wave[j] = p.Changes[ci]
		}
		out = append(out, wave)
		l := ws[wi]
		s := Wave{Wave: len(out), Partitions: len(m), ReplicasMoved: l.moves, LeaderChanges: l.leaders}
		for _, v := range l.in {
			s.MaxIn = max(s.MaxIn, v)
		}
		for _, v := range l.out {
			s.MaxOut = max(s.MaxOut, v)
		}
		p.Summary.Waves = append(p.Summary.Waves, s)
	}
	return out
}

// moved returns the brokers that gain and lose a replica in a change.
func moved(c *Change) (ins, outs []int32) {
	for _, r := range c.New.Replicas {
		if !slices.Contains(c.Old.Replicas, r) {
			ins = append(ins, r)
		}
	}
	for _, r := range c.Old.Replicas {
		if !slices.Contains(c.New.Replicas, r) {
			outs = append(outs, r)
		}
	}
	return ins, outs
}
