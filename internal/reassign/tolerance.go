package reassign

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Tolerance and a cap on moves. Options.Tolerance is a relative band
// around the mean: a broker holding between mean·(1-tol) and mean·(1+tol)
// replicas (and never a band narrower than floor/ceil of the mean) keeps
// its count, so a cluster within it moves nothing; brokers outside it move
// to its edge, no further. Leaders per broker get the same band, and each
// topic's leaders per broker too. With small means the band is floor/ceil
// of the mean, so plans of small layouts are those without tolerance.
// Options.MaxMoves then keeps the changes it can afford and says what is
// left.

// band returns the least and most of total units over k brokers that the
// tolerance accepts: floor/ceil of the mean, widened to mean·(1∓tol).
func (w *work) band(total, k int) (int, int) {
	lo, hi := total/k, (total+k-1)/k
	if tol := w.opts.Tolerance; tol > 0 {
		mean := float64(total) / float64(k)
		l := min(lo, max(0, int(math.Ceil(mean*(1-tol)-1e-9))))
		h := max(hi, int(math.Floor(mean*(1+tol)+1e-9)))
		w.widened = w.widened || l != lo || h != hi
		lo, hi = l, h
	}
	return lo, hi
}

// tolerate widens the replica targets per cell to the tolerance band: each
// target broker's target becomes its current count clamped to the band,
// then targets are raised
// or lowered inside the band, furthest from the count first, until they add
// up to the cell's replicas again. With racks, no rack's targets add up to
// more than its room (the most replicas it can hold).
func (w *work) tolerate() {
	if w.opts.Tolerance <= 0 {
		return
	}
	for ci, cell := range w.cells {
		total := 0
		for _, b := range cell {
			total += w.tgt[b]
		}
		lo, hi := w.band(total, len(cell))
		blo := make(map[int32]int, len(cell))
		bhi := make(map[int32]int, len(cell))
		for _, b := range cell {
			blo[b], bhi[b] = min(lo, w.tgt[b]), max(hi, w.tgt[b])
		}
		t := make(map[int32]int, len(cell))
		sum := 0
		for _, b := range cell {
			t[b] = min(max(w.cnt[b], blo[b]), bhi[b])
			sum += t[b]
		}
		// Racks: no rack above its room.
		if w.rackAware {
			rsum := make([]int, w.nrack)
			for _, b := range cell {
				rsum[w.rack[b]] += t[b]
			}
			room := w.rackRoom[ci]
			for _, b := range w.byFurthest(cell, func(b int32) int { return t[b] - w.tgt[b] }) {
				if r := w.rack[b]; rsum[r] > room[r] {
					d := min(rsum[r]-room[r], t[b]-max(w.tgt[b], blo[b]))
					if d > 0 {
						t[b] -= d
						rsum[r] -= d
						sum -= d
					}
				}
			}
			bhiRack := func(b int32) int {
				r := w.rack[b]
				return min(bhi[b], t[b]+max(0, room[r]-rsum[r]))
			}
			for sum < total {
				b := w.pick1(cell, func(b int32) bool { return t[b] < bhiRack(b) }, func(b int32) int { return t[b] - w.cnt[b] })
				if b < 0 {
					break
				}
				t[b]++
				rsum[w.rack[b]]++
				sum++
			}
		} else {
			for sum < total {
				b := w.pick1(cell, func(b int32) bool { return t[b] < bhi[b] }, func(b int32) int { return t[b] - w.cnt[b] })
				if b < 0 {
					break
				}
				t[b]++
				sum++
			}
		}
		for sum > total {
			b := w.pick1(cell, func(b int32) bool { return t[b] > blo[b] }, func(b int32) int { return w.cnt[b] - t[b] })
			if b < 0 {
				break
			}
			t[b]--
			sum--
		}
		if sum != total {
			continue // the band cannot hold the cell: keep the even targets
		}
		for _, b := range cell {
			w.tgt[b] = t[b]
		}
	}
}

// pick1 returns the broker of cell that ok accepts with the least key
// (ties: lowest index), or -1.
func (w *work) pick1(cell []int32, ok func(int32) bool, key func(int32) int) int32 {
	best := int32(-1)
	for _, b := range cell {
		if ok(b) && (best < 0 || key(b) < key(best)) {
			best = b
		}
	}
	return best
}

// byFurthest returns cell sorted by key, largest first.
func (w *work) byFurthest(cell []int32, key func(int32) int) []int32 {
	out := slices.Clone(cell)
	slices.SortStableFunc(out, func(a, b int32) int { return cmp.Compare(key(b), key(a)) })
	return out
}

// capMoves keeps, when Options.MaxMoves is set and the plan moves more,
// the changes that fit in it: those that empty drained brokers first, then
// the smallest (changes of replication factor always stay); the others keep their current assignment (and preferred
// leader) and are counted in the summary as left for a later run.
func (w *work) capMoves() (left, leftParts int) {
	limit := w.opts.MaxMoves
	if limit <= 0 {
		return 0, 0
	}
	type ch struct {
		i, moves int
		forced   bool
	}
	var chs []ch
	total := 0
	for i := range w.c.Partitions {
		p := &w.c.Partitions[i]
		if len(p.Replicas) != int(w.off[i+1]-w.off[i]) {
			continue // a new replication factor is planned whole
		}
		m, forced := 0, false
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if !slices.Contains(p.Replicas, w.ids[w.slots[s]]) {
				m++
			}
		}
		for _, r := range p.Replicas {
			forced = forced || !w.target[w.pos[r]]
		}
		if m > 0 {
			chs = append(chs, ch{i, m, forced})
			total += m
		}
	}
	if total <= limit {
		return 0, 0
	}
	slices.SortStableFunc(chs, func(a, b ch) int {
		if a.forced != b.forced {
			if a.forced {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.moves, b.moves)
	})
	kept := 0
	for _, c := range chs {
		if kept+c.moves <= limit {
			kept += c.moves
			continue
		}
		w.revert(c.i)
		left += c.moves
		leftParts++
	}
	w.notes = append(w.notes, fmt.Sprintf("--max-moves %d: the plan moves %d of %d replicas; %s (%d moves) keep their assignment for a later run",
		limit, kept, total, plural(leftParts, "partition"), left))
	return left, leftParts
}

// revert gives partition i back its current replicas and preferred leader
// (same replication factor). They may include brokers outside the target
// (drained, down): the plan leaves them as they are.
func (w *work) revert(i int) {
	p := &w.c.Partitions[i]
	for j, r := range p.Replicas {
		w.slots[int(w.off[i])+j] = w.pos[r]
	}
	w.lead[i] = w.pos[p.Replicas[0]]
}
