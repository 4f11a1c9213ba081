package reassign

import "slices"

// spreadTopics runs after shed: no topic may end more concentrated on a
// broker than max(1.5 times its fair share, its concentration before the
// plan) when a swap at no extra move fixes it. Shed moved replicas off
// every over-target broker; for a broker still holding too many of topic
// t, one of those moves is undone (a replica of another topic u returns to
// the broker from where shed put it) and a replica of t takes its place
// there: the moves stay as many, the counts per broker stay the same.
func (w *work) spreadTopics() {
	n := w.n()
	nt := len(w.tname)
	caps := make([]int32, nt)
	// wide: topics of at least 4 replicas per broker, the ones swapAny
	// spreads (a smaller topic's cap is within a replica or two of its
	// share, and scanning for it costs more than it gains).
	wide := make([]bool, nt)
	before := make([]int32, n)
	current := 0
	for _, b := range w.c.Brokers {
		if !b.Missing {
			current++
		}
	}
	if current == 0 {
		return
	}
	var bad []int
	for t := range nt {
		first, last := int(w.tstart[t]), int(w.tstart[t+1])
		total := int(w.off[last] - w.off[first])
		k := len(w.cells[w.tcell[t]])
		fair := float64(total) / float64(k)
		var most int32
		for i := first; i < last; i++ {
			for _, r := range w.c.Partitions[i].Replicas {
				b := w.pos[r]
				before[b]++
				most = max(most, before[b])
			}
		}
		for i := first; i < last; i++ {
			for _, r := range w.c.Partitions[i].Replicas {
				before[w.pos[r]] = 0
			}
		}
		fairBefore := float64(total) / float64(current)
		c := max(int32(1.5*fair), int32(float64(most)*fair/fairBefore), int32(ceilDiv(total, k)))
		caps[t] = c
		wide[t] = fair >= 4
		row := w.tc[t*n : (t+1)*n]
		if slices.ContainsFunc(row, func(x int32) bool { return x > c }) {
			bad = append(bad, t)
		}
	}
	if len(bad) == 0 {
		return
	}
	var on *brokerParts // partitions per broker, built when first needed
	var failed []int32  // per broker, 1 + the topic swapAny last failed for
	budget := w.lower / 100
	for _, t := range bad {
		row := w.tc[t*n : (t+1)*n]
		first, last := int(w.tstart[t]), int(w.tstart[t+1])
		for i := first; i < last; i++ {
			for s := w.off[i]; s < w.off[i+1]; s++ {
				b := w.slots[s]
				if row[b] <= caps[t] || !w.mayLeave(i, t, b) {
					continue
				}
				if w.swapOut(i, s, b, t, caps) {
					continue
				}
				if !wide[t] || failed != nil && failed[b] == int32(t)+1 {
					continue // no swap for this topic on b: no other partition will find one either, mostly
				}
				if on == nil {
					on = w.newBrokerParts()
					failed = make([]int32, n)
				}
				if d := w.swapAny(i, s, b, t, caps, on, budget); d != noSwap {
					budget -= d
				} else {
					failed[b] = int32(t) + 1
				}
			}
		}
	}
}

// noSwap is swapAny's answer when it found no swap.
const noSwap = -1 << 30

// brokerParts is swapAny's index of the partitions per broker (kept up to
// date by swapAny; swapOut's moves leave entries that slotOf no longer
// finds) and, per broker, how many of its entries it did not hold before
// the plan: handing one of those back to another broker saves a move, so
// without them no swap with the broker saves one.
type brokerParts struct {
	on    [][]int32
	moved []int32
}

func (w *work) newBrokerParts() *brokerParts {
	p := &brokerParts{on: w.byBroker(), moved: make([]int32, w.n())}
	for d, list := range p.on {
		for _, j := range list {
			if !w.origHas(int(j), int32(d)) {
				p.moved[d]++
			}
		}
	}
	return p
}

// remove takes partition j off broker d's entries, add puts it on.
func (p *brokerParts) remove(w *work, j int, d int32) {
	k := len(p.on[d])
	p.on[d] = slices.DeleteFunc(p.on[d], func(v int32) bool { return v == int32(j) })
	if !w.origHas(j, d) {
		p.moved[d] -= int32(k - len(p.on[d]))
	}
}

func (p *brokerParts) add(w *work, j int, d int32) {
	p.on[d] = append(p.on[d], int32(j))
	if !w.origHas(j, d) {
		p.moved[d]++
	}
}

// swapAny is swapOut's fallback when no move of shed can be undone: it
// exchanges partition i's replica on broker b (topic t, slot s) with a
// replica of another topic's partition j on a broker d in the same cell
// with room for t, so every broker keeps its count. j's topic must stay
// within its cap on b, both partitions within the rack rules, and the
// moves it adds within budget (the swap that adds the fewest wins). A
// broker none of whose partitions can add few enough moves is not
// scanned. It returns the moves added, or noSwap.
func (w *work) swapAny(i int, s, b int32, t int, caps []int32, on *brokerParts, budget int) int {
	n := w.n()
	row := w.tc[t*n : (t+1)*n]
	bestJ, bestD, bestDelta := -1, int32(-1), noSwap
	cell := w.cellOf[b]
	for d := range int32(n) {
		if d == b || !w.target[d] || w.cellOf[d] != cell || row[d]+1 > caps[t] || row[d]+1 >= row[b] || w.holds(i, d) || !w.rackFree(i, d, s) || !w.mayTake(i, d) {
			continue
		}
		di := w.movesAdded(i, b, d)
		// The fewest moves a swap with d adds: j's part is -1 at best,
		// and only for a partition d did not hold before the plan.
		least := di
		if on.moved[d] > 0 {
			least--
		}
		if least > budget || bestJ >= 0 && least >= bestDelta {
			continue
		}
		for _, j32 := range on.on[d] {
			j := int(j32)
			u := int(w.ptopic[j])
			if u == t || w.tc[u*n+int(b)]+1 > caps[u] || w.holds(j, b) || !w.mayTake(j, b) || !w.mayLeave(j, u, d) {
				continue
			}
			sj := w.slotOf(j, d)
			if sj < 0 || !w.rackFree(j, b, sj) {
				continue
			}
			delta := di + w.movesAdded(j, d, b)
			if delta > budget || bestJ >= 0 && delta >= bestDelta {
				continue
			}
			bestJ, bestD, bestDelta = j, d, delta
			if delta <= 0 {
				break
			}
		}
		if bestJ >= 0 && bestDelta <= 1 {
			break // within one move of the best: the scan costs more than the move
		}
	}
	if bestJ < 0 {
		return noSwap
	}
	d := bestD
	sj := w.slotOf(bestJ, d)
	w.put(bestJ, sj, b)
	w.put(i, s, d)
	on.remove(w, bestJ, d)
	on.add(w, i, d)
	on.remove(w, i, b)
	on.add(w, bestJ, b)
	return bestDelta
}

// movesAdded is the change in moves when partition i's replica goes from
// broker from to broker to: a replica on a broker that did not hold it
// before the plan is a move.
func (w *work) movesAdded(i int, from, to int32) int {
	d := 0
	if !w.origHas(i, to) {
		d++
	}
	if !w.origHas(i, from) {
		d--
	}
	return d
}

// shedMove is one replica shed moved: partition i to broker to.
type shedMove struct {
	i, to int32
}

// swapOut moves partition i's replica in slot s off broker b (topic t) to
// a broker d with room for t, undoing a move of shed that took a replica
// of another topic from b to d (d did not hold it before the plan). It
// reports whether it did.
func (w *work) swapOut(i int, s, b int32, t int, caps []int32) bool {
	n := w.n()
	row := w.tc[t*n : (t+1)*n]
	for k, m := range w.shedLog[b] {
		j, d := int(m.i), m.to
		if j < 0 || row[d]+1 > caps[t] || row[d]+1 >= row[b] || w.holds(i, d) || !w.rackFree(i, d, s) || !w.mayTake(i, d) {
			continue
		}
		u := int(w.ptopic[j])
		if u == t || w.tc[u*n+int(b)]+1 > caps[u] || w.holds(j, b) || !w.mayTake(j, b) || w.origHas(j, d) {
			continue
		}
		sj := w.slotOf(j, d)
		if sj < 0 || !w.rackFree(j, b, sj) {
			continue
		}
		w.put(j, sj, b)
		w.put(i, s, d)
		w.shedLog[b][k].i = -1 // undone
		return true
	}
	return false
}
