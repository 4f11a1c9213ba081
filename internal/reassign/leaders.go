package reassign

import (
	"cmp"
	"fmt"
	"slices"
)

// assignLeaders runs phase 2: leaders chosen among each partition's final
// replicas, by reordering only. Current preferred leaders stay wherever the
// balance allows.
func (w *work) assignLeaders() {
	n := w.n()
	gc := make([]int, n)
	tie := w.tieOrder()
	for i := range w.c.Partitions {
		t := int(w.ptopic[i])
		reps := w.slots[w.off[i]:w.off[i+1]]
		b := w.first[i]
		if !slices.Contains(reps, b) || !w.inBlock(b, t) {
			b = -1
			for _, r := range reps {
				if !w.inBlock(r, t) && slices.ContainsFunc(reps, func(x int32) bool { return w.inBlock(x, t) }) {
					continue
				}
				if b < 0 || w.lc[t*n+int(r)] < w.lc[t*n+int(b)] ||
					w.lc[t*n+int(r)] == w.lc[t*n+int(b)] && (gc[r] < gc[b] || gc[r] == gc[b] && tie[r] < tie[b]) {
					b = r
				}
			}
		}
		w.lead[i] = b
		gc[b]++
		w.lc[t*n+int(b)]++
	}
	paths := newLeadPaths(n)
	for t := range w.tname {
		w.spreadTopic(t, gc, tie, paths)
	}
	unbalanced := 0
	for _, block := range w.blocks {
		unbalanced += w.balanceLeaders(block, gc, tie)
	}
	if unbalanced > 0 {
		w.notes = append(w.notes, fmt.Sprintf("%d leaderships stay above their brokers' targets: no replica list allows a better choice", unbalanced))
	}
}

func (w *work) setLead(i int, r int32, gc []int) {
	n := w.n()
	t := int(w.ptopic[i])
	old := w.lead[i]
	w.lc[t*n+int(old)]--
	gc[old]--
	w.lc[t*n+int(r)]++
	gc[r]++
	w.lead[i] = r
}

// topicBounds returns floor and ceil of topic t's partitions over its cell
// (widened by the tolerance, see band).
func (w *work) topicBounds(t int) (int32, int32) {
	lo, hi := w.band(w.parts(t), len(w.blocks[w.tblock[t]]))
	return int32(lo), int32(hi)
}

// spreadTopic brings topic t's leaders per broker within [floor, ceil] of
// its partitions over its cell's brokers where its replicas allow: direct
// switches first, then augmenting paths inside the topic.
func (w *work) spreadTopic(t int, gc []int, tie []int32, paths *leadPaths) {
	n := w.n()
	lo, hi := w.topicBounds(t)
	lc := w.lc[t*n : (t+1)*n]
	first, last := int(w.tstart[t]), int(w.tstart[t+1])
	// Direct: a broker above the ceiling hands a partition to a replica
	// below it, the one furthest below and least loaded overall first.
	for i := first; i < last; i++ {
		b := w.lead[i]
		if lc[b] <= hi {
			continue
		}
		best := int32(-1)
		for s := w.off[i]; s < w.off[i+1]; s++ {
			r := w.slots[s]
			if r == b || lc[r] >= hi || !w.inBlock(r, t) {
				continue
			}
			if best < 0 || lc[r] < lc[best] || lc[r] == lc[best] && (gc[r] < gc[best] || gc[r] == gc[best] && tie[r] < tie[best]) {
				best = r
			}
		}
		if best >= 0 {
			w.setLead(i, best, gc)
		}
	}
	// Paths for what is left above the ceiling, then below the floor.
	paths.group(w, t)
	for guard := last - first; guard > 0; guard-- {
		if !w.topicPath(t, func(b int32) bool { return lc[b] > hi }, func(r int32) bool { return lc[r] < hi }, gc, paths) {
			break
		}
	}
	if lo == 0 {
		return
	}
	for guard := last - first; guard > 0; guard-- {
		if !w.topicPath(t, func(b int32) bool { return lc[b] > lo }, func(r int32) bool { return lc[r] < lo }, gc, paths) {
			break
		}
	}
}

// leadPaths is topicPath's state for one topic: its partitions by leader,
// built once (group) and kept up to date by the paths, and the search's
// scratch, dense arrays over the brokers reset after each search.
type leadPaths struct {
	led     [][]int32 // per broker: the topic's partitions it leads, in partition order
	leaders []int32   // the brokers with a list (it may be empty now)
	listed  []bool
	seen    []bool
	// from and part are the hop that reached a broker: partition part
	// handed over by broker from (-1: none, a source or not reached).
	from, part []int32
	queue      []int32
}

func newLeadPaths(n int) *leadPaths {
	p := &leadPaths{led: make([][]int32, n), listed: make([]bool, n), seen: make([]bool, n), from: make([]int32, n), part: make([]int32, n)}
	for b := range p.from {
		p.from[b] = -1
	}
	return p
}

// group lists topic t's partitions by leader.
func (p *leadPaths) group(w *work, t int) {
	for _, b := range p.leaders {
		p.led[b] = p.led[b][:0]
		p.listed[b] = false
	}
	p.leaders = p.leaders[:0]
	for i := w.tstart[t]; i < w.tstart[t+1]; i++ {
		p.add(w.lead[i], i)
	}
}

// add lists partition i under broker b, in partition order.
func (p *leadPaths) add(b, i int32) {
	if !p.listed[b] {
		p.listed[b] = true
		p.leaders = append(p.leaders, b)
	}
	k, _ := slices.BinarySearch(p.led[b], i)
	p.led[b] = slices.Insert(p.led[b], k, i)
}

// topicPath finds, by breadth-first search over brokers, a chain of
// leadership hand-overs inside topic t from a source broker to a sink
// broker and applies it. Each hop hands a partition led by one broker to
// another of its replicas. The sources are searched from in broker order,
// a broker's partitions in partition order, their replicas in slot order.
// p must hold t's partitions by leader (group).
func (w *work) topicPath(t int, source, sink func(int32) bool, gc []int, p *leadPaths) bool {
	queue := p.queue[:0]
	for _, b := range p.leaders {
		if len(p.led[b]) > 0 && source(b) {
			p.seen[b] = true
			queue = append(queue, b)
		}
	}
	slices.Sort(queue)
	found := false
	for head := 0; head < len(queue) && !found; head++ {
		b := queue[head]
		for _, i := range p.led[b] {
			for s := w.off[i]; s < w.off[i+1]; s++ {
				r := w.slots[s]
				if p.seen[r] || !w.inBlock(r, t) {
					continue
				}
				p.seen[r] = true
				p.from[r], p.part[r] = b, i
				queue = append(queue, r)
				if sink(r) {
					for x := r; p.from[x] >= 0; x = p.from[x] {
						i, a := p.part[x], p.from[x]
						w.setLead(int(i), x, gc)
						k, _ := slices.BinarySearch(p.led[a], i)
						p.led[a] = slices.Delete(p.led[a], k, k+1)
						p.add(x, i)
					}
					found = true
					break
				}
			}
			if found {
				break
			}
		}
	}
	for _, b := range queue {
		p.seen[b] = false
		p.from[b] = -1
	}
	p.queue = queue
	return found
}

// balanceLeaders brings the cell's brokers to floor/ceil of the cell's
// mean leaders, moving leadership only inside replica lists and keeping
// topic spreads where possible: first every broker above the ceiling hands
// leaderships down to brokers below it, then every broker below the floor
// takes one from a broker above it. Which brokers end at the ceiling is
// left to the paths, which keeps the changes few. It returns the
// leaderships left outside the bounds.
func (w *work) balanceLeaders(cell []int32, gc []int, tie []int32) int {
	n := w.n()
	total := 0
	for _, b := range cell {
		total += gc[b]
	}
	lo, hi := w.band(total, len(cell))
	inCell := make([]bool, n)
	for _, b := range cell {
		inCell[b] = true
	}
	led := make([][]int32, n)
	for i := range w.c.Partitions {
		if b := w.lead[i]; inCell[b] {
			led[b] = append(led[b], int32(i))
		}
	}
	// ok reports whether moving partition i's leadership from b to r keeps
	// its topic's spread (or narrows the gap between the two brokers).
	ok := func(i int, b, r int32) bool {
		t := int(w.ptopic[i])
		if !inCell[r] {
			return false
		}
		tlo, thi := w.topicBounds(t)
		f, g := w.lc[t*n+int(b)], w.lc[t*n+int(r)]
		return (g+1 <= thi || g+1 <= f-1) && (f-1 >= tlo || f-1 >= g+1)
	}
	above := func(limit int) []int32 {
		var out []int32
		for _, b := range cell {
			if gc[b] > limit {
				out = append(out, b)
			}
		}
		slices.SortFunc(out, func(a, b int32) int {
			if c := cmp.Compare(gc[b], gc[a]); c != 0 {
				return c
			}
			return cmp.Compare(tie[a], tie[b])
		})
		return out
	}
	// Direct switches from brokers above the ceiling, to the brokers
	// furthest below it.
	for _, b := range above(hi) {
		for _, i32 := range led[b] {
			if gc[b] <= hi {
				break
			}
			i := int(i32)
			if w.lead[i] != b {
				continue
			}
			best := int32(-1)
			for s := w.off[i]; s < w.off[i+1]; s++ {
				r := w.slots[s]
				if r == b || gc[r] >= hi || !ok(i, b, r) {
					continue
				}
				if best < 0 || gc[r] < gc[best] || gc[r] == gc[best] && tie[r] < tie[best] {
					best = r
				}
			}
			if best >= 0 {
				w.setLead(i, best, gc)
				led[best] = append(led[best], i32)
			}
		}
	}
	// Augmenting paths, keeping topic spreads first, then at any cost to
	// them (broker balance is the stronger goal).
	for _, strict := range []bool{true, false} {
		allow := func(i int, b, r int32) bool {
			if !inCell[r] {
				return false
			}
			if strict {
				return ok(i, b, r)
			}
			if w.opts.FixOverlaps {
				// Never below the topic's floor: that would leave a broker
				// of its block without a leadership, a partial overlap.
				t := int(w.ptopic[i])
				tlo, _ := w.topicBounds(t)
				return w.lc[t*n+int(b)]-1 >= tlo
			}
			return true
		}
		for {
			src := above(hi)
			if len(src) == 0 || !w.leaderPath(src, led, gc, func(r int32) bool { return gc[r] < hi }, allow) {
				break
			}
		}
		for {
			var short bool
			for _, b := range cell {
				short = short || gc[b] < lo
			}
			if !short || !w.leaderPath(above(lo), led, gc, func(r int32) bool { return gc[r] < lo }, allow) {
				break
			}
		}
	}
	left := 0
	for _, b := range cell {
		left += max(0, gc[b]-hi, lo-gc[b])
	}
	return left
}

// leaderPath finds a chain of leadership hand-overs from a source broker to
// a sink broker by breadth-first search and applies it.
func (w *work) leaderPath(sources []int32, led [][]int32, gc []int, sink func(int32) bool, ok func(int, int32, int32) bool) bool {
	n := w.n()
	seen := make([]bool, n)
	prevB := make([]int32, n)
	prevP := make([]int32, n)
	src := make([]bool, n)
	queue := slices.Clone(sources)
	for _, b := range sources {
		seen[b], src[b] = true, true
	}
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		for _, i32 := range led[b] {
			i := int(i32)
			if w.lead[i] != b {
				continue
			}
			for s := w.off[i]; s < w.off[i+1]; s++ {
				r := w.slots[s]
				if seen[r] || !ok(i, b, r) {
					continue
				}
				seen[r] = true
				prevB[r], prevP[r] = b, i32
				if sink(r) {
					for x := r; !src[x]; x = prevB[x] {
						w.setLead(int(prevP[x]), x, gc)
						led[x] = append(led[x], prevP[x])
					}
					return true
				}
				queue = append(queue, r)
			}
		}
	}
	return false
}
