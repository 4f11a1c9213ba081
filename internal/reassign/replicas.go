package reassign

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// placeReplicas runs phase 1: holes, targets, the lower bound, then fills
// holes and sheds excess, moving only from over target to under target.
func (w *work) placeReplicas() {
	w.prepare()
	w.fixRacks()
	w.fillHoles()
	if w.opts.FixOverlaps {
		w.anchor()
		w.cover()
		w.spreadSole()
		// Targets again: the ceilings go to the brokers these forced moves
		// left most loaded, so shedding undoes as little as possible.
		w.computeTargets(w.tieOrder())
		w.tolerate()
	}
	w.shed()
	if w.overTarget() > 0 {
		w.repair()
	}
	if over := w.overTarget(); over > 0 {
		w.notes = append(w.notes, fmt.Sprintf("%d replicas stay above their brokers' targets: no move keeps racks distinct and replicas on distinct brokers", over))
	}
}

// prepare counts the replicas, chooses cells and blocks, turns replicas
// that must move into holes, and sets the targets and the lower bound.
func (w *work) prepare() {
	n := w.n()
	nt := len(w.tname)
	w.cnt = make([]int, n)
	w.tgt = make([]int, n)
	w.tc = make([]int32, nt*n)
	w.lc = make([]int32, nt*n)

	// Current replicas on target brokers, for cell choice and drops.
	for i := range w.c.Partitions {
		t := int(w.ptopic[i])
		for _, r := range w.c.Partitions[i].Replicas {
			b := w.pos[r]
			if w.target[b] {
				w.cnt[b]++
				w.tc[t*n+int(b)]++
			}
		}
	}
	if len(w.cells) > 1 {
		w.chooseCells()
	}
	w.chooseBlocks()
	w.computeRackCaps()
	cnt0 := w.makeSlots()

	// Targets, then the lower bound: what brokers under target must
	// receive, sum(max(0, target - current)), with targets floor/ceil of
	// the mean and the ceilings given to the most loaded brokers (per cell,
	// capped per rack when racks cannot hold the mean). Every replica a
	// broker gains is a copy, so no plan reaching these targets moves less.
	// Without cells, racks or a new replication factor, it equals the
	// issue's form: replicas on drained brokers plus the excess over target.
	w.capped = w.computeTargets(w.tieOrder())
	w.boundTgt = slices.Clone(w.tgt)
	w.tolerate()
	w.lower = 0
	for b := range w.ids {
		if w.target[b] {
			w.lower += max(0, w.tgt[b]-cnt0[b])
		}
	}
}

// makeSlots fills the slots, with drops for a smaller replication factor
// and holes for drained brokers, brokers outside the cell and added
// replicas. It returns, per broker, the replicas of their cell's topics it
// held before the drops.
func (w *work) makeSlots() []int {
	np := len(w.c.Partitions)
	w.slots = make([]int32, w.off[np])
	cnt0 := make([]int, w.n())
	for i := range w.c.Partitions {
		p := &w.c.Partitions[i]
		t := w.ptopic[i]
		w.first[i] = w.pos[p.Replicas[0]]
		rf := int(w.off[i+1] - w.off[i])
		var kept []int32
		for _, r := range p.Replicas {
			b := w.pos[r]
			switch {
			case !w.target[b]:
				// Drained: a hole below.
			case w.cellOf[b] != w.tcell[t]:
				w.dropCount(t, b) // leaves its cell: a hole below
			default:
				kept = append(kept, b)
				cnt0[b]++
			}
		}
		for len(kept) > rf {
			// A smaller replication factor: drop from the most loaded
			// broker, the first replica only when it is clearly the most.
			j := 1
			for k := 2; k < len(kept); k++ {
				if w.cnt[kept[k]] > w.cnt[kept[j]] {
					j = k
				}
			}
			if w.cnt[kept[0]] > w.cnt[kept[j]]+1 {
				j = 0
			}
			w.dropCount(t, kept[j])
			kept = slices.Delete(kept, j, j+1)
		}
		holes := rf - len(kept)
		increase := max(0, rf-len(p.Replicas))
		// Kept replicas stay in their old order and positions; a leaving
		// replica's position becomes a hole while holes remain.
		s, left := w.off[i], holes-increase
		for _, r := range p.Replicas {
			b := w.pos[r]
			if slices.Contains(kept, b) {
				w.slots[s] = b
				s++
			} else if left > 0 && (!w.target[b] || w.cellOf[b] != w.tcell[t]) {
				w.slots[s] = -1
				s++
				left--
			}
		}
		for ; s < w.off[i+1]; s++ {
			w.slots[s] = -1
		}
	}
	return cnt0
}

func (w *work) dropCount(t int32, b int32) {
	w.cnt[b]--
	w.tc[int(t)*w.n()+int(b)]--
}

// computeTargets sets per-broker replica targets per cell: floor/ceil of
// the cell's mean, ceilings to the most loaded brokers, and, when racks
// bind, no rack above its room (see racks.go). The first call also keeps
// the even targets in evenTgt. It returns, per cell, the racks it capped.
func (w *work) computeTargets(tie []int32) [][]int32 {
	cellTotal := make([]int, len(w.cells))
	for t := range w.tname {
		c := w.tcell[t]
		cellTotal[c] += int(w.off[w.tstart[t+1]] - w.off[w.tstart[t]])
	}
	load := func(b int32) int { return w.cnt[b] }
	capped := make([][]int32, len(w.cells))
	first := w.evenTgt == nil
	if first {
		w.evenTgt = make([]int, w.n())
	}
	for ci, cell := range w.cells {
		remaining := slices.Clone(cell)
		rem := cellTotal[ci]
		for len(remaining) > 0 {
			floorCeil(remaining, rem, load, tie, w.tgt)
			if first && len(remaining) == len(cell) {
				for _, b := range cell {
					w.evenTgt[b] = w.tgt[b]
				}
			}
			if !w.rackAware {
				break
			}
			room := w.rackRoom[ci]
			sum := make([]int, w.nrack)
			for _, b := range remaining {
				sum[w.rack[b]] += w.tgt[b]
			}
			worst, excess := int32(-1), 0
			for r, s := range sum {
				if s-room[r] > excess {
					worst, excess = int32(r), s-room[r]
				}
			}
			if worst < 0 {
				break
			}
			var inRack, rest []int32
			for _, b := range remaining {
				if w.rack[b] == worst {
					inRack = append(inRack, b)
				} else {
					rest = append(rest, b)
				}
			}
			floorCeil(inRack, room[worst], load, tie, w.tgt)
			capped[ci] = append(capped[ci], worst)
			rem -= room[worst]
			remaining = rest
		}
	}
	return capped
}

// fixRacks turns replicas beyond their rack's cap (rackCap: with enough
// racks, a second replica of a partition in one rack) into holes, the one
// on the most loaded broker, not the first.
func (w *work) fixRacks() {
	if !w.rackAware {
		return
	}
	fixed := 0
	for i := range w.c.Partitions {
		for {
			a, b := w.sameRack(i)
			if a < 0 {
				break
			}
			victim := b
			ba, bb := w.slots[a], w.slots[b]
			if a != w.off[i] && w.cnt[ba]-w.tgt[ba] > w.cnt[bb]-w.tgt[bb] {
				victim = a
			}
			w.dropCount(w.ptopic[i], w.slots[victim])
			w.slots[victim] = -1
			fixed++
		}
	}
	if fixed > 0 {
		w.notes = append(w.notes, fmt.Sprintf("%d replicas shared a rack with another replica of their partition and move to another rack", fixed))
	}
}

// sameRack returns, for the first rack in slot order holding more than
// rcap[i] replicas of partition i, its first slot and the slot one beyond
// the cap; -1, -1 when no rack does.
func (w *work) sameRack(i int) (int32, int32) {
	for a := w.off[i]; a < w.off[i+1]; a++ {
		if w.slots[a] < 0 {
			continue
		}
		k := int32(1)
		for b := a + 1; b < w.off[i+1]; b++ {
			if w.slots[b] >= 0 && w.rack[w.slots[a]] == w.rack[w.slots[b]] {
				if k++; k > w.rcap[i] {
					return a, b
				}
			}
		}
	}
	return -1, -1
}

// bestDest picks the broker to receive partition i's replica in slot
// (which is a hole or leaves): a broker of the topic's cell that does not
// hold the partition and keeps racks distinct. Brokers under target come
// first, then the fewest replicas of the topic, then the largest deficit.
// With deficitOnly, brokers at or over target are never chosen. -1: none.
func (w *work) bestDest(i int, slot int32, deficitOnly bool, tie []int32) int32 {
	t := int(w.ptopic[i])
	if deficitOnly && w.under != nil {
		// Only brokers under target qualify: shed keeps their list, in
		// the order that lets bestUnder stop early (it picks the broker
		// bestDestIn picks: ties break by tie, not by position).
		return w.bestUnder(i, slot, tie, w.under[w.tcell[t]])
	}
	return w.bestDestIn(i, slot, deficitOnly, tie, w.cells[w.tcell[t]])
}

// bestDestIn is bestDest over the brokers in domain. A broker is ranked
// before its other rules are checked (rackFree, mayTake): most brokers of a
// large domain lose on rank alone.
func (w *work) bestDestIn(i int, slot int32, deficitOnly bool, tie []int32, domain []int32) int32 {
	n := w.n()
	t := int(w.ptopic[i])
	row := w.tc[t*n : (t+1)*n]
	has := w.markHolders(i)
	best, bDef, bTC := int32(-1), 0, int32(0)
	for _, d := range domain {
		def := w.tgt[d] - w.cnt[d]
		if deficitOnly && def <= 0 || has[d]&holdsNow != 0 {
			continue
		}
		tc := row[d]
		if def > 0 && has[d]&heldBefore != 0 {
			tc = -1 // it held the partition: no data to copy
		} else if w.quota != nil && tc >= w.quota[t] {
			continue // the topic's fair share is there already (shed)
		}
		better := false
		switch {
		case best < 0:
			better = true
		case (def > 0) != (bDef > 0):
			better = def > 0
		case def > 0:
			better = tc < bTC || tc == bTC && (def > bDef || def == bDef && tie[d] < tie[best])
		default:
			better = def > bDef || def == bDef && (tc < bTC || tc == bTC && tie[d] < tie[best])
		}
		if better && w.rackFree(i, d, slot) && (w.cordon == nil || !w.cordon[d] || has[d]&heldBefore != 0) {
			best, bDef, bTC = d, def, tc
		}
	}
	w.unmarkHolders(i)
	return best
}

// Bits of work.mark: the broker holds the partition now (a slot), held it
// before the plan.
const (
	holdsNow   = 1
	heldBefore = 2
)

// markHolders marks, in w.mark, the brokers holding partition i now and
// before the plan, and returns w.mark; unmarkHolders clears them again.
func (w *work) markHolders(i int) []uint8 {
	if w.mark == nil {
		w.mark = make([]uint8, w.n())
	}
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if b := w.slots[s]; b >= 0 {
			w.mark[b] |= holdsNow
		}
	}
	for _, b := range w.orig[w.origOff[i]:w.origOff[i+1]] {
		w.mark[b] |= heldBefore
	}
	return w.mark
}

func (w *work) unmarkHolders(i int) {
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if b := w.slots[s]; b >= 0 {
			w.mark[b] = 0
		}
	}
	for _, b := range w.orig[w.origOff[i]:w.origOff[i+1]] {
		w.mark[b] = 0
	}
}

// put places broker d in slot s of partition i (a hole or a leaving replica).
func (w *work) put(i int, s int32, d int32) {
	n := w.n()
	t := int(w.ptopic[i])
	from := w.slots[s]
	if from >= 0 {
		w.cnt[from]--
		w.tc[t*n+int(from)]--
	}
	w.slots[s] = d
	w.cnt[d]++
	w.tc[t*n+int(d)]++
	w.moves++
	if w.under != nil {
		if from >= 0 {
			w.underMoved(from)
		}
		w.underMoved(d)
	}
}

func (w *work) fillHoles() {
	tie := w.tieOrder()
	for i := range w.c.Partitions {
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if w.slots[s] >= 0 {
				continue
			}
			d := w.bestDest(i, s, false, tie)
			if d < 0 {
				// Validation guarantees enough brokers and racks; a cell
				// with too few racks for this partition is the only way.
				d = w.anyDest(i)
			}
			w.put(i, s, d)
			w.forced++
		}
	}
}

// anyDest returns a target broker not holding partition i, ignoring racks
// and cells; validation makes one exist.
func (w *work) anyDest(i int) int32 {
	for b := range w.ids {
		if w.target[b] && !w.holds(i, int32(b)) && w.mayTake(i, int32(b)) {
			return int32(b)
		}
	}
	panic("reassign: no broker can take a replica; validation should have refused this target")
}

// need is how many replicas of topic t each broker of its cell must hold
// under FixOverlaps so that every one of them can lead its share: ceil(P/k)
// (floor for replication factor 1), or 0 for topics smaller than the cell.
func (w *work) need(t int) int32 {
	p := int(w.tstart[t+1] - w.tstart[t])
	k := len(w.blocks[w.tblock[t]])
	if p < k {
		return 0
	}
	minRF := int32(1 << 30)
	for i := w.tstart[t]; i < w.tstart[t+1]; i++ {
		minRF = min(minRF, w.off[i+1]-w.off[i])
	}
	if minRF == 1 {
		return int32(p / k)
	}
	return int32((p + k - 1) / k)
}

// cover moves replicas within each large topic's cell until every cell
// broker holds need(t) of them (FixOverlaps), taking from the brokers that
// hold the most. A broker must lead its share from partitions no other
// broker needs: it takes first from partitions with no replica on a block
// broker holding need(t) or fewer of the topic, and only then from the
// others. (Taking both replicas of one partition for two brokers that had
// none, as on a ring of topics each on two of four brokers, left both with
// one partition to lead between them.)
func (w *work) cover() {
	n := w.n()
	for t := range w.tname {
		need := w.need(t)
		if need == 0 {
			continue
		}
		// scarce reports whether partition i has a replica on a block
		// broker that needs every replica of t it holds to lead its share.
		scarce := func(i int) bool {
			for s := w.off[i]; s < w.off[i+1]; s++ {
				if b := w.slots[s]; w.inBlock(b, t) && w.tc[t*n+int(b)] <= need {
					return true
				}
			}
			return false
		}
		for _, d := range w.blocks[w.tblock[t]] {
			for pass := 0; pass < 2; pass++ {
				w.coverFrom(t, d, need, func(i int) bool { return pass == 1 || !scarce(i) })
			}
		}
	}
}

// coverFrom moves replicas of topic t's partitions that ok accepts onto
// broker d until d holds need of them.
func (w *work) coverFrom(t int, d int32, need int32, ok func(int) bool) {
	n := w.n()
	for i := int(w.tstart[t]); i < int(w.tstart[t+1]) && w.tc[t*n+int(d)] < need; i++ {
		if w.holds(i, d) || !ok(i) || !w.mayTake(i, d) {
			continue
		}
		bestS, bestScore := int32(-1), 0
		for s := w.off[i]; s < w.off[i+1]; s++ {
			b := w.slots[s]
			if w.tc[t*n+int(b)] <= need || !w.rackFree(i, d, s) || w.inBlock(b, t) && w.inBlockReplicas(i, t) == 1 {
				continue
			}
			score := int(w.tc[t*n+int(b)])*1000 + w.cnt[b] - w.tgt[b]
			if bestS < 0 || score > bestScore {
				bestS, bestScore = s, score
			}
		}
		if bestS >= 0 {
			w.put(i, bestS, d)
		}
	}
}

// mayLeave reports whether partition i's replica on broker s may move
// away: under FixOverlaps a block broker keeps need(t) replicas of its
// topics (see dest for the partition's last replica in its block).
func (w *work) mayLeave(i, t int, s int32) bool {
	if !w.opts.FixOverlaps || !w.inBlock(s, t) {
		return true
	}
	return w.tc[t*w.n()+int(s)] > w.need(t)
}

// dest is bestDest for a replica leaving broker s by choice: the last
// replica of a partition in its topic's block may only move inside it.
func (w *work) dest(i, t int, s, slot int32, tie []int32) int32 {
	if w.opts.FixOverlaps && w.inBlock(s, t) {
		// Stay in the block when a broker there has room: replicas in the
		// block are the partition's choices of leader.
		d := w.bestDestIn(i, slot, true, tie, w.blocks[w.tblock[t]])
		if d >= 0 || w.inBlockReplicas(i, t) == 1 {
			return d
		}
	}
	return w.bestDest(i, slot, true, tie)
}

func (w *work) overTarget() int {
	over := 0
	for b := range w.ids {
		if w.target[b] && w.cnt[b] > w.tgt[b] {
			over += w.cnt[b] - w.tgt[b]
		}
	}
	return over
}

// byBroker lists, per broker, the partitions with a replica there.
func (w *work) byBroker() [][]int32 {
	counts := make([]int, w.n())
	for _, b := range w.slots {
		counts[b]++
	}
	out := make([][]int32, w.n())
	for b := range out {
		out[b] = make([]int32, 0, counts[b])
	}
	for i := range w.c.Partitions {
		for s := w.off[i]; s < w.off[i+1]; s++ {
			b := w.slots[s]
			out[b] = append(out[b], int32(i))
		}
	}
	return out
}

// slotOf returns the slot of partition i on broker b, or -1.
func (w *work) slotOf(i int, b int32) int32 {
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if w.slots[s] == b {
			return s
		}
	}
	return -1
}

// shed moves each over-target broker's excess to brokers under target:
// followers before preferred leaders, the replicas of the topics the broker
// holds most of (relative to the topic's mean) first. A first pass lets no
// destination take more than 1.25 times a topic's fair share (its replicas
// over its cell's brokers, for topics of at least 4 per broker), so
// brokers under target (new ones above all) receive every topic in
// proportion instead of the largest topics the sources hold most of; a
// second pass without that cap moves what the first could not.
func (w *work) shed() {
	w.quota = make([]int32, len(w.tname))
	for t := range w.tname {
		total := int(w.off[w.tstart[t+1]] - w.off[w.tstart[t]])
		fair := float64(total) / float64(len(w.cells[w.tcell[t]]))
		w.quota[t] = math.MaxInt32
		if fair >= 4 {
			// Smaller topics cannot concentrate by much, and a cap on
			// them costs a failed search per replica.
			w.quota[t] = int32(math.Ceil(fair * 1.25))
		}
	}
	w.shedLog = make([][]shedMove, w.n())
	w.shedPass()
	w.quota = nil
	if w.overTarget() > 0 {
		w.shedPass()
	}
	if !w.opts.FixOverlaps {
		w.spreadTopics()
	}
	w.shedLog = nil
}

// shedPass is one pass of shed.
func (w *work) shedPass() {
	n := w.n()
	w.under = make([][]int32, len(w.cells))
	for c, cell := range w.cells {
		for _, b := range cell {
			if w.cnt[b] < w.tgt[b] {
				w.under[c] = append(w.under[c], b)
			}
		}
	}
	defer func() { w.under, w.underAt, w.underTie = nil, nil, nil }()
	tie := w.tieOrder()
	w.sortUnder(tie)
	ttotal := make([]float64, len(w.tname))
	tk := make([]float64, len(w.tname))
	for t := range w.tname {
		ttotal[t] = float64(w.off[w.tstart[t+1]] - w.off[w.tstart[t]])
		tk[t] = float64(len(w.cells[w.tcell[t]]))
	}
	var over []int32
	for b := range w.ids {
		if w.target[b] && w.cnt[b] > w.tgt[b] {
			over = append(over, int32(b))
		}
	}
	slices.SortFunc(over, func(a, b int32) int {
		if c := cmp.Compare(w.cnt[b]-w.tgt[b], w.cnt[a]-w.tgt[a]); c != 0 {
			return c
		}
		return cmp.Compare(tie[a], tie[b])
	})
	lists := w.byBroker()
	// Per source, topics are shed in turn by their current excess over the
	// ceiling of the topic's mean, relative to that mean (in replicas for
	// topics below one per broker, which a single replica never exceeds),
	// re-ranked after every move: the topics a broker holds
	// most of in proportion go first, a replica at a time, so no topic is
	// emptied from it while others stay concentrated. Followers before
	// preferred leaders.
	// A source's partitions come in partition order, so each topic's are
	// contiguous: a group is a range of them.
	type group struct {
		t      int32
		lo, hi int32
	}
	var groups []group
	var sel []int32
	var h topicHeap
	for _, s := range over {
		for _, leaders := range []bool{false, true} {
			if w.cnt[s] <= w.tgt[s] {
				break
			}
			groups, sel = groups[:0], sel[:0]
			for _, i := range lists[s] {
				if (w.first[i] == s) != leaders {
					continue
				}
				t := w.ptopic[i]
				if len(groups) == 0 || groups[len(groups)-1].t != t {
					groups = append(groups, group{t: t, lo: int32(len(sel)), hi: int32(len(sel))})
				}
				sel = append(sel, i)
				groups[len(groups)-1].hi++
			}
			rank := func(g int) float64 {
				t := groups[g].t
				mean := ttotal[t] / tk[t]
				return (float64(w.tc[int(t)*n+int(s)]) - math.Ceil(mean)) / max(mean, 1)
			}
			h.items = h.items[:0]
			for g := range groups {
				h.items = append(h.items, topicItem{g: int32(g), rank: rank(g)})
			}
			h.init()
			for len(h.items) > 0 && w.cnt[s] > w.tgt[s] {
				it := h.pop()
				g := &groups[it.g]
				i := int(sel[g.lo])
				g.lo++
				if slot := w.slotOf(i, s); slot >= 0 {
					t := int(g.t)
					if w.mayLeave(i, t, s) {
						if d := w.dest(i, t, s, slot, tie); d >= 0 {
							w.put(i, slot, d)
							w.shedLog[s] = append(w.shedLog[s], shedMove{int32(i), d})
						}
					}
				}
				if g.lo < g.hi {
					h.push(topicItem{g: it.g, rank: rank(int(it.g))})
				}
			}
		}
	}
}

// topicItem is a source broker's topic in shed's order.
type topicItem struct {
	g    int32
	rank float64
}

// topicHeap orders topics by rank, highest first, then by group index
// (a total order: a group is in the heap once). It is container/heap's
// algorithm on topicItem itself, so a push or pop allocates nothing.
type topicHeap struct{ items []topicItem }

func (h *topicHeap) less(a, b int) bool {
	if h.items[a].rank != h.items[b].rank {
		return h.items[a].rank > h.items[b].rank
	}
	return h.items[a].g < h.items[b].g
}

func (h *topicHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i, len(h.items))
	}
}

func (h *topicHeap) push(it topicItem) {
	h.items = append(h.items, it)
	h.up(len(h.items) - 1)
}

// pop removes and returns the first item.
func (h *topicHeap) pop() topicItem {
	n := len(h.items) - 1
	h.items[0], h.items[n] = h.items[n], h.items[0]
	h.down(0, n)
	it := h.items[n]
	h.items = h.items[:n]
	return it
}

func (h *topicHeap) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h.less(j, i) {
			break
		}
		h.items[i], h.items[j] = h.items[j], h.items[i]
		j = i
	}
}

func (h *topicHeap) down(i, n int) {
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2 // right child
		}
		if !h.less(j, i) {
			break
		}
		h.items[i], h.items[j] = h.items[j], h.items[i]
		i = j
	}
}

// repair handles what shed could not: an over-target broker whose
// partitions all sit on, or share racks with, every under-target broker.
// It moves a replica to a broker at target that passes one of its own on
// to a broker under target (two moves for one unit), within a work budget.
func (w *work) repair() {
	tie := w.tieOrder()
	budget := 50_000_000
	for pass := 0; pass < 3 && w.overTarget() > 0 && budget > 0; pass++ {
		lists := w.byBroker()
		for s := range w.ids {
			s := int32(s)
		unit:
			for w.target[s] && w.cnt[s] > w.tgt[s] && budget > 0 {
				for _, i32 := range lists[s] {
					i := int(i32)
					slot := w.slotOf(i, s)
					if slot < 0 {
						continue
					}
					t := int(w.ptopic[i])
					if !w.mayLeave(i, t, s) {
						continue
					}
					for _, m := range w.cells[w.tcell[t]] {
						budget--
						if m == s || w.cnt[m] > w.tgt[m] || w.holds(i, m) || !w.rackFree(i, m, slot) || !w.mayTake(i, m) {
							continue
						}
						if w.opts.FixOverlaps && w.inBlock(s, t) && !w.inBlock(m, t) && w.inBlockReplicas(i, t) == 1 {
							continue
						}
						for _, j32 := range lists[m] {
							budget--
							j := int(j32)
							if j == i {
								continue
							}
							ms := w.slotOf(j, m)
							if ms < 0 {
								continue
							}
							if !w.mayLeave(j, int(w.ptopic[j]), m) {
								continue
							}
							if d := w.dest(j, int(w.ptopic[j]), m, ms, tie); d >= 0 && d != s {
								w.put(j, ms, d)
								w.put(i, slot, m)
								lists[m] = append(lists[m], int32(i))
								continue unit
							}
						}
					}
				}
				break
			}
		}
	}
}

// chooseCells assigns each topic to the cell that already holds most of its
// replicas, heaviest topics first, while keeping cells within one heavy
// topic of an even share of replicas.
func (w *work) chooseCells() {
	n := w.n()
	m := len(w.cells)
	type tw struct {
		t      int
		weight int
	}
	topics := make([]tw, len(w.tname))
	totalW := 0
	maxW := 0
	for t := range w.tname {
		wt := int(w.off[w.tstart[t+1]] - w.off[w.tstart[t]])
		topics[t] = tw{t, wt}
		totalW += wt
		maxW = max(maxW, wt)
	}
	slices.SortStableFunc(topics, func(a, b tw) int { return cmp.Compare(b.weight, a.weight) })
	limit := (totalW+m-1)/m + maxW/2
	load := make([]int, m)
	for _, x := range topics {
		// The cell holding most of the topic among those with room; when
		// none has room, the least loaded.
		best, bestHeld := -1, -1
		for ci, cell := range w.cells {
			if load[ci]+x.weight > limit {
				continue
			}
			held := 0
			for _, b := range cell {
				held += int(w.tc[x.t*n+int(b)])
			}
			if held > bestHeld || held == bestHeld && load[ci] < load[best] {
				best, bestHeld = ci, held
			}
		}
		if best < 0 {
			best = 0
			for ci := range w.cells {
				if load[ci] < load[best] {
					best = ci
				}
			}
		}
		w.tcell[x.t] = int32(best)
		load[best] += x.weight
	}
}
