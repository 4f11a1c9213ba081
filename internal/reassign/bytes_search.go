package reassign

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The exchange search after the greedy placement (bytes.go): the greedy
// sheds each broker's excess on its own, so it can copy a large replica
// where two small ones would do, or stop outside the band where a swap of
// two replicas between brokers would land inside it. The search improves
// the placement by single relocations and by swaps of two replicas of
// different partitions between two brokers, lexicographically: first the
// distance outside the band (summed over brokers), then the bytes copied.
// After a local optimum it kicks the best placement with a few random
// relocations and searches again, keeping the best. Every step is bounded
// by an effort counter (candidate evaluations), so large layouts keep the
// greedy's time: there the search stops after a partial scan, taking only
// the improvements it found. The randomness comes from Options.Rand, or a
// fixed seed: the plan stays deterministic.

// searchEffort bounds the candidate evaluations of the exchange search.
const searchEffort = 20_000_000

// searchKicks is how many random restarts the search tries at most, and
// searchStale how many in a row that find nothing better end it.
const (
	searchKicks = 400
	searchStale = 100
)

// pen is how far broker b is outside the band with disk v, d, plus d²/mean:
// the square makes one broker far outside cost more than two a little
// outside, so that a budget too small to reach the band goes first to the
// fullest and emptiest brokers (the max/mean an operator reads), and the
// linear term keeps a distance of one byte from vanishing in rounding.
func (bs *bytesState) pen(b int32, v int64) float64 {
	x := float64(v)
	d := max(0, x-bs.hi)
	if !bs.cordon[b] {
		d += max(0, bs.lo-x)
	}
	return d + d*d*bs.invMean
}

// violation sums pen over target brokers.
func (bs *bytesState) violation() float64 {
	v := 0.0
	for _, b := range bs.tb {
		v += bs.pen(b, bs.disk[b])
	}
	return v
}

// better reports whether (dv, dc) improves the placement: less outside the
// band, or as much and fewer bytes copied.
func better(dv float64, dc int64, eps float64) bool {
	return dv < -eps || math.Abs(dv) <= eps && dc < 0
}

// preferred reports whether an improving step (dv, dc) beats another
// (bv, bc): steps that gain on both counts first (the most bytes saved,
// then the most brought inside the band), then those that bring the
// placement inside the band at the least bytes copied per byte brought in.
func preferred(dv float64, dc int64, bv float64, bc int64, eps float64) bool {
	free := func(v float64, c int64) bool { return c < 0 || c == 0 && v < -eps }
	switch fa, fb := free(dv, dc), free(bv, bc); {
	case fa != fb:
		return fa
	case fa:
		return dc < bc || dc == bc && dv < bv
	}
	ra, rb := float64(dc)/-dv, float64(bc)/-bv
	return ra < rb || ra == rb && dv < bv
}

type snapshot struct {
	slots []int32
	cnt   []int
	tc    []int32
	disk  []int64
	spent int64
	moved int
	viol  float64
}

func (bs *bytesState) save() snapshot {
	w := bs.w
	return snapshot{slots: slices.Clone(w.slots), cnt: slices.Clone(w.cnt), tc: slices.Clone(w.tc), disk: slices.Clone(bs.disk),
		spent: bs.spent, moved: bs.moved, viol: bs.violation()}
}

func (bs *bytesState) restore(s snapshot) {
	w := bs.w
	copy(w.slots, s.slots)
	copy(w.cnt, s.cnt)
	copy(w.tc, s.tc)
	copy(bs.disk, s.disk)
	bs.spent, bs.moved = s.spent, s.moved
}

// search runs the exchange search within budget (< 0: none).
func (bs *bytesState) search(budget int64, rng *rand.Rand) {
	effort := searchEffort
	eps := 0.5 // distances outside the band are whole bytes (newBytesState)
	bs.climb(budget, eps, &effort, nil)
	best := bs.save()
	for k, stale := 0, 0; k < searchKicks && stale < searchStale && effort > 0; k++ {
		tabu := bs.kick(rng, 1+rng.IntN(3), budget)
		bs.climb(budget, eps, &effort, tabu)
		v := bs.violation()
		if better(v-best.viol, bs.spent-best.spent, eps) {
			best = bs.save()
			stale = 0
		} else {
			bs.restore(best)
			stale++
		}
	}
	bs.restore(best)
}

// kick relocates k random replicas to random brokers that can take them;
// every other kick sends a replica the plan moved back where it was, the
// perturbation that most often leads to a cheaper placement, and every
// other one takes the replica from a broker outside the band. It returns
// the kicked slots with the broker each left, which the next climb must
// not send it back to (a tabu, or the climb would undo the kick).
func (bs *bytesState) kick(rng *rand.Rand, k int, budget int64) map[int32]int32 {
	w := bs.w
	tabu := map[int32]int32{}
	var outside []int32
	for _, b := range bs.tb {
		if bs.pen(b, bs.disk[b]) > 0 {
			outside = append(outside, b)
		}
	}
	for tries := 0; k > 0 && tries < 50*k; tries++ {
		s := int32(rng.IntN(len(w.slots)))
		d := bs.tb[rng.IntN(len(bs.tb))]
		if len(outside) > 0 && rng.IntN(2) == 0 {
			// Off a broker above the band, or onto one below it.
			b := outside[rng.IntN(len(outside))]
			var on []int32
			for t, x := range w.slots {
				if x == b {
					on = append(on, int32(t))
				}
			}
			if float64(bs.disk[b]) < bs.lo || len(on) == 0 {
				d = b
			} else {
				s = on[rng.IntN(len(on))]
			}
		}
		if i := int(bs.slotP[s]); rng.IntN(2) == 0 && !w.origHas(i, w.slots[s]) {
			// Back to a broker that held it and no longer does.
			for _, r := range w.c.Partitions[i].Replicas {
				if b := w.pos[r]; w.target[b] && !w.holds(i, b) {
					d = b
					break
				}
			}
		}
		a := w.slots[s]
		if a == d || !bs.canTake(s, d) || !bs.affordable(bs.marginal(int(bs.slotP[s]), a, d), budget) {
			continue
		}
		tabu[s] = a
		bs.move(s, d)
		k--
	}
	return tabu
}

// climb takes the best relocation or swap until none improves or the
// effort runs out.
func (bs *bytesState) climb(budget int64, eps float64, effort *int, tabu map[int32]int32) {
	banned := func(s, d int32) bool {
		b, ok := tabu[s]
		return ok && b == d
	}
	w := bs.w
	ns := int32(len(w.slots))
	for *effort > 0 {
		bestDV, bestDC := 0.0, int64(0)
		var mv [4]int32 // slot, dest, slot2 (-1: relocation), dest2
		found := false
		consider := func(dv float64, dc int64) bool {
			if !better(dv, dc, eps) {
				return false
			}
			return !found || preferred(dv, dc, bestDV, bestDC, eps)
		}
		// Relocations.
		for s := int32(0); s < ns && *effort > 0; s++ {
			a := w.slots[s]
			i := int(bs.slotP[s])
			sz := bs.size[i]
			pa0, pa1 := bs.pen(a, bs.disk[a]), bs.pen(a, bs.disk[a]-sz)
			for _, d := range bs.tb {
				*effort--
				if d == a {
					continue
				}
				dv := pa1 - pa0 + bs.pen(d, bs.disk[d]+sz) - bs.pen(d, bs.disk[d])
				dc := bs.marginal(i, a, d)
				if !consider(dv, dc) || banned(s, d) || !bs.canTake(s, d) || !bs.affordable(dc, budget) {
					continue
				}
				bestDV, bestDC, mv, found = dv, dc, [4]int32{s, d, -1, -1}, true
			}
		}
		// Swaps: s on a goes to b, t on b goes to a. A swap of two
		// replicas on their original brokers inside the band gains
		// nothing (it copies both, and no distance can shrink), so one of
		// them must be active: moved by the plan, or on a broker outside.
		active := make([]bool, ns)
		var act []int32
		for s := int32(0); s < ns; s++ {
			a := w.slots[s]
			if bs.pen(a, bs.disk[a]) > 0 || !w.origHas(int(bs.slotP[s]), a) {
				active[s] = true
				act = append(act, s)
			}
		}
		for _, s := range act {
			if *effort <= 0 {
				break
			}
			a := w.slots[s]
			i := int(bs.slotP[s])
			for t := int32(0); t < ns; t++ {
				*effort--
				if t == s || active[t] && t < s {
					continue // the same pair from t's side
				}
				b := w.slots[t]
				j := int(bs.slotP[t])
				if a == b || i == j {
					continue
				}
				x, y := bs.size[i], bs.size[j]
				if x == y {
					continue
				}
				dv := bs.pen(a, bs.disk[a]-x+y) - bs.pen(a, bs.disk[a]) + bs.pen(b, bs.disk[b]-y+x) - bs.pen(b, bs.disk[b])
				dc := bs.marginal(i, a, b) + bs.marginal(j, b, a)
				if !consider(dv, dc) || banned(s, b) || banned(t, a) || !bs.swappable(s, t) || !bs.affordable(dc, budget) {
					continue
				}
				bestDV, bestDC, mv, found = dv, dc, [4]int32{s, b, t, a}, true
			}
		}
		if !found {
			return
		}
		if mv[2] < 0 {
			bs.move(mv[0], mv[1])
		} else {
			bs.move(mv[0], mv[1])
			bs.move(mv[2], mv[3])
		}
	}
}

// swappable reports whether slot s's partition may go to slot t's broker
// and t's to s's: neither holds the other's partition, neither is
// cordoned (unless it held the partition before: a return is no new
// replica), and racks stay spread.
func (bs *bytesState) swappable(s, t int32) bool {
	w := bs.w
	a, b := w.slots[s], w.slots[t]
	i, j := int(bs.slotP[s]), int(bs.slotP[t])
	if w.holds(i, b) || w.holds(j, a) {
		return false
	}
	if bs.cordon[b] && !w.origHas(i, b) || bs.cordon[a] && !w.origHas(j, a) {
		return false
	}
	return w.rackFree(i, b, s) && w.rackFree(j, a, t)
}
