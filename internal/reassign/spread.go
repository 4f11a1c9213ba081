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
		row := w.tc[t*n : (t+1)*n]
		if slices.ContainsFunc(row, func(x int32) bool { return x > c }) {
			bad = append(bad, t)
		}
	}
	if len(bad) == 0 {
		return
	}
	for _, t := range bad {
		row := w.tc[t*n : (t+1)*n]
		first, last := int(w.tstart[t]), int(w.tstart[t+1])
		for i := first; i < last; i++ {
			for s := w.off[i]; s < w.off[i+1]; s++ {
				b := w.slots[s]
				if row[b] <= caps[t] || !w.mayLeave(i, t, b) {
					continue
				}
				w.swapOut(i, s, b, t, caps)
			}
		}
	}
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
		if j < 0 || row[d]+1 > caps[t] || row[d]+1 >= row[b] || w.holds(i, d) || !w.rackFree(i, d, s) {
			continue
		}
		u := int(w.ptopic[j])
		if u == t || w.tc[u*n+int(b)]+1 > caps[u] || w.holds(j, b) || slices.Contains(w.c.Partitions[j].Replicas, w.ids[d]) {
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
