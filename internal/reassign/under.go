package reassign

import (
	"cmp"
	"slices"
)

// While shed runs, w.under lists each cell's brokers under target in the
// order bestUnder reads them: the largest deficit first, then tie order.
// underAt is each broker's position in its cell's list (-1: not listed)
// and underTie the tie order of the pass. put keeps the lists in order.

// sortUnder orders the lists of w.under and indexes them.
func (w *work) sortUnder(tie []int32) {
	w.underTie = tie
	w.underAt = make([]int32, w.n())
	for b := range w.underAt {
		w.underAt[b] = -1
	}
	for _, list := range w.under {
		slices.SortFunc(list, func(a, b int32) int {
			if c := cmp.Compare(w.tgt[b]-w.cnt[b], w.tgt[a]-w.cnt[a]); c != 0 {
				return c
			}
			return cmp.Compare(tie[a], tie[b])
		})
		for k, b := range list {
			w.underAt[b] = int32(k)
		}
	}
}

// underBefore reports whether broker a comes before broker b in the lists.
func (w *work) underBefore(a, b int32) bool {
	da, db := w.tgt[a]-w.cnt[a], w.tgt[b]-w.cnt[b]
	return da > db || da == db && w.underTie[a] < w.underTie[b]
}

// underMoved restores the order after broker b's count changed: b leaves
// its list when it reaches its target, otherwise it moves to its place.
func (w *work) underMoved(b int32) {
	k := int(w.underAt[b])
	if k < 0 {
		return
	}
	c := w.cellOf[b]
	list := w.under[c]
	if w.cnt[b] >= w.tgt[b] {
		w.under[c] = slices.Delete(list, k, k+1)
		w.underAt[b] = -1
		for j := k; j < len(w.under[c]); j++ {
			w.underAt[w.under[c][j]] = int32(j)
		}
		return
	}
	for k > 0 && w.underBefore(b, list[k-1]) {
		list[k] = list[k-1]
		w.underAt[list[k]] = int32(k)
		k--
	}
	for k+1 < len(list) && w.underBefore(list[k+1], b) {
		list[k] = list[k+1]
		w.underAt[list[k]] = int32(k)
		k++
	}
	list[k] = b
	w.underAt[b] = int32(k)
}

// bestUnder is bestDestIn (deficitOnly) over the brokers of under, a list
// of w.under, read in its order: a broker that held the partition before
// the plan (no data to copy) beats every other, and among the others the
// first with the fewest replicas of the topic wins, since the list puts
// the larger deficit, then the tie order, first. A broker is checked
// against the rack and cordon rules only when it would win, and the scan
// stops at a broker without a replica of the topic.
func (w *work) bestUnder(i int, slot int32, tie []int32, under []int32) int32 {
	n := w.n()
	t := int(w.ptopic[i])
	row := w.tc[t*n : (t+1)*n]
	cell := w.tcell[t]
	has := w.markHolders(i)
	defer w.unmarkHolders(i)
	ok := func(d int32) bool {
		return w.rackFree(i, d, slot) && (w.cordon == nil || !w.cordon[d] || has[d]&heldBefore != 0)
	}
	best := int32(-1)
	for _, d := range w.orig[w.origOff[i]:w.origOff[i+1]] {
		if w.underAt[d] < 0 || w.cellOf[d] != cell || w.tgt[d] <= w.cnt[d] || has[d]&holdsNow != 0 || !ok(d) {
			continue
		}
		if best < 0 || w.tgt[d]-w.cnt[d] > w.tgt[best]-w.cnt[best] || w.tgt[d]-w.cnt[d] == w.tgt[best]-w.cnt[best] && tie[d] < tie[best] {
			best = d
		}
	}
	if best >= 0 {
		return best
	}
	var bRow int32
	for _, d := range under {
		// Held now, or held before and ruled out above.
		if has[d] != 0 || best >= 0 && row[d] >= bRow || w.tgt[d] <= w.cnt[d] {
			continue
		}
		if w.quota != nil && row[d] >= w.quota[t] {
			continue // the topic's fair share is there already
		}
		if !ok(d) {
			continue
		}
		best, bRow = d, row[d]
		if bRow == 0 {
			break
		}
	}
	return best
}
