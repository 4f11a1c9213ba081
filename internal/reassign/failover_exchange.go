package reassign

import "slices"

// The exchange step (phase 2d) runs after the placement step when the plan
// may add moves (Options.FailoverMoves). The placement step swaps only a
// leader's first follower, so it stops where the order passes' exact
// optimum of the sets is above the optimum: the sets themselves fall
// short. The exchange step is a local search over the sets: it exchanges
// a follower x of partition p with a follower y of partition q of the same
// topic (neither already in the other's set, rack rules kept), so every
// broker keeps its replicas and leaders and every topic its replicas per
// broker. It rates the sets by the exact best order of every single-broker
// loss (minMaxAssign per lost broker: the worst busiest survivor, then the
// sum of the busiest survivors over the losses, then the partitions no
// order keeps below each loss's busiest survivor, by a b-matching), takes
// the exchange that improves the rating most (the fewest moves on ties)
// while the moves stay within the budget, and ends when none improves.
// Then the order passes run again on the new sets, and each broker loss
// gets its exact order; the result is kept only when Kafka's election
// after the worst single-broker loss improves and no rack loss gets worse.
//
// A sweep looks at every pair of same-topic followers and rates two losses
// per pair, so the step runs only where a sweep fits exEffort, and stops
// past it in all: small clusters, never a plan of millions of partitions.

// exEffort bounds the exchange step's work: items rated over all sweeps.
const exEffort = 20_000_000

// exRating rates a placement: the worst busiest survivor over the losses,
// the sum of the busiest survivors, and the sum over the losses of the
// partitions any order leaves at their busiest survivor's level.
type exRating struct{ worst, sum, over int }

func (a exRating) less(b exRating) bool {
	if a.worst != b.worst {
		return a.worst < b.worst
	}
	if a.sum != b.sum {
		return a.sum < b.sum
	}
	return a.over < b.over
}

// exState is the exchange step's state.
type exState struct {
	w      *work
	n      int
	gc     []int   // leaders per broker
	surv   []int32 // target brokers
	byLead [][]int32
	sc     *mmScratch
	load   []int
	cand   [][]int32
	at     []int32
	surv1  []int32
	// rows are each broker loss's exact busiest survivor and the partitions
	// any order leaves above one below it (over).
	rowMax, rowOver []int
	// over's scratch: the partitions on each survivor, and the visited.
	byB    [][]int32
	mark   []bool
	effort int
}

// exSlot is one follower slot: partition p, slot s.
type exSlot struct{ p, s int32 }

// failoverExchange runs the exchange step with room more moves at most and
// returns the moves it added (negative: saved).
func (w *work) failoverExchange(room int) int {
	n := w.n()
	e := &exState{w: w, n: n, gc: make([]int, n), byLead: make([][]int32, n), sc: newMMScratch(n), load: make([]int, n)}
	for b := range n {
		if w.target[b] {
			e.surv = append(e.surv, int32(b))
		}
	}
	if len(e.surv) < 3 {
		return 0
	}
	np := len(w.c.Partitions)
	for i := range np {
		e.gc[w.lead[i]]++
		e.byLead[w.lead[i]] = append(e.byLead[w.lead[i]], int32(i))
	}
	// Followers per topic; the cost of one sweep.
	slotsOf := make([][]exSlot, len(w.tname))
	sweep := 0
	for t := range w.tname {
		for i := w.tstart[t]; i < w.tstart[t+1]; i++ {
			for s := w.off[i]; s < w.off[i+1]; s++ {
				if b := w.slots[s]; b >= 0 && b != w.lead[i] {
					slotsOf[t] = append(slotsOf[t], exSlot{i, s})
				}
			}
		}
		k := len(slotsOf[t])
		sweep += k * k / 2 * 2 * max(1, np/len(e.surv))
	}
	if sweep == 0 || sweep > exEffort {
		return 0
	}
	before := w.electionWorst()
	saved := slices.Clone(w.slots)
	e.rowMax, e.rowOver = make([]int, n), make([]int, n)
	for _, b := range e.surv {
		e.rowMax[b], e.rowOver[b] = e.row(b)
	}
	cur := e.rating()
	extra := 0
	for e.effort < exEffort {
		type choice struct {
			a, b exSlot
			r    exRating
			d    int
			ok   bool
		}
		var best choice
		for t := range slotsOf {
			ss := slotsOf[t]
			for x := range ss {
				for y := x + 1; y < len(ss); y++ {
					a, b := ss[x], ss[y]
					p, q := int(a.p), int(b.p)
					bx, by := w.slots[a.s], w.slots[b.s]
					if p == q || bx == by || w.holds(p, by) || w.holds(q, bx) ||
						!w.rackFree(p, by, a.s) || !w.rackFree(q, bx, b.s) {
						continue
					}
					d := w.exDelta(p, q, bx, by)
					if extra+d > room {
						continue
					}
					w.slots[a.s], w.slots[b.s] = by, bx
					r := e.rateWith(w.lead[p], w.lead[q])
					w.slots[a.s], w.slots[b.s] = bx, by
					if !r.less(cur) {
						continue
					}
					if !best.ok || r.less(best.r) || (r == best.r && d < best.d) {
						best = choice{a, b, r, d, true}
					}
				}
			}
		}
		if !best.ok {
			break
		}
		w.slots[best.a.s], w.slots[best.b.s] = w.slots[best.b.s], w.slots[best.a.s]
		for _, l := range []int32{w.lead[best.a.p], w.lead[best.b.p]} {
			e.rowMax[l], e.rowOver[l] = e.row(l)
		}
		cur = best.r
		extra += best.d
	}
	if extra == 0 && slices.Equal(saved, w.slots) {
		return 0
	}
	notes := len(w.notes)
	w.reorder()
	e.exactOrder()
	after := w.electionWorst()
	if after.broker >= before.broker || after.rack > before.rack {
		copy(w.slots, saved)
		w.notes = w.notes[:notes]
		return 0
	}
	// The order passes once more from the exact order: they keep broker
	// rows within their maxima while they lower rack and topic rows.
	exact := slices.Clone(w.slots)
	w.reorder()
	if again := w.electionWorst(); again.broker > after.broker || again.rack > after.rack {
		copy(w.slots, exact)
	}
	return extra
}

// reorder runs the order passes again (on the slots' sets), keeping one
// copy of each note.
func (w *work) reorder() {
	notes := len(w.notes)
	w.orderFollowers()
	for _, s := range w.notes[notes:] {
		if !slices.Contains(w.notes[:notes], s) {
			w.notes = append(w.notes[:notes], s)
			notes++
		}
	}
	w.notes = w.notes[:notes]
}

// exDelta is the moves exchanging x (on p) and y (on q) adds.
func (w *work) exDelta(p, q int, x, y int32) int {
	d := 0
	for _, c := range []struct {
		i          int
		gain, lose int32
	}{{p, y, x}, {q, x, y}} {
		if !w.origHas(c.i, c.gain) {
			d++
		}
		if !w.origHas(c.i, c.lose) {
			d--
		}
	}
	return d
}

// exactOrder writes, for every lost broker whose election leaves a busier
// survivor than its exact row, the exact assignment as the first
// followers (a broker loss hands over only the lost broker's partitions,
// so the rows are independent).
func (e *exState) exactOrder() {
	w := e.w
	for _, b := range e.surv {
		m, _ := e.row(b)
		if m >= e.electionRow(b) {
			continue
		}
		k := 0
		for _, i := range e.byLead[b] {
			if w.firstFollower(int(i)) < 0 {
				continue
			}
			w.writeOrder(int(i), e.at[k])
			k++
		}
	}
}

// electionRow is the busiest survivor Kafka's election leaves after the
// loss of b with the slots' order.
func (e *exState) electionRow(b int32) int {
	w := e.w
	copy(e.load, e.gc)
	e.load[b] = 0
	for _, i := range e.byLead[b] {
		if f := w.firstFollower(int(i)); f >= 0 {
			e.load[f]++
		}
	}
	return slices.Max(e.load)
}

// rating is the current rows' rating.
func (e *exState) rating() exRating {
	var r exRating
	for _, b := range e.surv {
		r.worst = max(r.worst, e.rowMax[b])
		r.sum += e.rowMax[b]
		r.over += e.rowOver[b]
	}
	return r
}

// rateWith rates the placement with rows b1 and b2 rated afresh.
func (e *exState) rateWith(b1, b2 int32) exRating {
	m1, s1 := e.row(b1)
	m2, s2 := m1, s1
	if b2 != b1 {
		m2, s2 = e.row(b2)
	}
	var r exRating
	for _, b := range e.surv {
		m, s := e.rowMax[b], e.rowOver[b]
		switch b {
		case b1:
			m, s = m1, s1
		case b2:
			m, s = m2, s2
		}
		r.worst = max(r.worst, m)
		r.sum += m
		r.over += s
	}
	return r
}

// row returns broker b's loss: the exact least busiest survivor over the
// orders of b's partitions' followers, and how many of them any order
// leaves above one below that (over).
func (e *exState) row(b int32) (int, int) {
	w := e.w
	e.surv1 = e.surv1[:0]
	for j := range e.load {
		e.load[j] = 0
	}
	for _, j := range e.surv {
		if j != b {
			e.surv1 = append(e.surv1, j)
			e.load[j] = e.gc[j]
		}
	}
	e.cand, e.at = e.cand[:0], e.at[:0]
	for _, i := range e.byLead[b] {
		f := w.firstFollower(int(i))
		if f < 0 {
			continue
		}
		var c []int32
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if y := w.slots[s]; y >= 0 && y != b {
				c = append(c, y)
			}
		}
		e.cand = append(e.cand, c)
		e.at = append(e.at, f)
		e.load[f]++
	}
	e.effort += len(e.at) + len(e.surv)
	m := minMaxAssign(e.sc, e.load, e.surv1, e.cand, e.at)
	return m, e.over(m - 1)
}

// over is the fewest of the row's partitions (e.cand) that any order
// leaves above level c on their survivor (a b-matching of the partitions to the survivors'
// room under c, by augmenting paths): how far the row is from c.
func (e *exState) over(c int) int {
	room := e.load
	for j := range room {
		room[j] = 0
	}
	for _, j := range e.surv1 {
		room[j] = max(0, c-e.gc[j])
	}
	if len(e.byB) < e.n {
		e.byB = make([][]int32, e.n)
		e.mark = make([]bool, e.n)
	}
	for j := range e.byB {
		e.byB[j] = e.byB[j][:0]
	}
	var try func(k int32) bool
	try = func(k int32) bool {
		for _, y := range e.cand[k] {
			if e.mark[y] {
				continue
			}
			e.mark[y] = true
			if len(e.byB[y]) < room[y] {
				e.byB[y] = append(e.byB[y], k)
				return true
			}
			for x, k2 := range e.byB[y] {
				if try(k2) {
					e.byB[y][x] = k
					return true
				}
			}
		}
		return false
	}
	left := 0
	for k := range e.at {
		clear(e.mark)
		if !try(int32(k)) {
			left++
		}
	}
	return left
}

// exWorst is Kafka's election's busiest survivor after the worst
// single-broker loss, and the largest excess of a rack loss's busiest
// survivor over its optimum (ceil(partitions / survivors); 0 without
// racks).
type exWorst struct{ broker, rack int }

// electionWorst counts the leaders Kafka's election leaves on each
// survivor after each single-broker loss and each rack loss, with the
// slots' order, and returns the worst of each.
func (w *work) electionWorst() exWorst {
	n := w.n()
	gc := make([]int, n)
	for i := range w.c.Partitions {
		gc[w.lead[i]]++
	}
	var out exWorst
	load := make([]int, n)
	for b := range n {
		if !w.target[b] {
			continue
		}
		copy(load, gc)
		load[b] = 0
		for i := range w.c.Partitions {
			if w.lead[i] == int32(b) {
				if f := w.firstFollower(i); f >= 0 {
					load[f]++
				}
			}
		}
		out.broker = max(out.broker, slices.Max(load))
	}
	if !w.rackAware {
		return out
	}
	for r := range w.nrack {
		copy(load, gc)
		surv := 0
		for b := range n {
			if w.rack[b] == int32(r) {
				load[b] = 0
			} else if w.target[b] {
				surv++
			}
		}
		if surv == 0 {
			continue
		}
		for i := range w.c.Partitions {
			if w.rack[w.lead[i]] == int32(r) {
				if f := w.rackSuccOf(i); f >= 0 {
					load[f]++
				}
			}
		}
		out.rack = max(out.rack, slices.Max(load)-ceilDiv(len(w.c.Partitions), surv))
	}
	return out
}
