package reassign

import (
	"maps"
	"math"
	"slices"
)

// The placement step of the failover phase (phase 2c) runs after the
// follower order. With RF 2 a partition's only follower is its successor,
// so no order can spread a lost broker's leaderships further than the
// followers' placement allows: only moving followers can. The step swaps
// the followers of two partitions, p (led by b, successor j) and q (with a
// follower k): p gets k, q gets j. Every broker keeps its replica count and
// its leaders, the two partitions are of one topic (so
// every topic keeps its replicas per broker, and its cell), rack rules hold, and the
// loss of b loses one leadership off its busiest survivor j.
//
// It is a greedy over the worst cell of the successor matrix: while some
// broker loss leaves a survivor above the optimum ceil(P / (N-1)) (or the
// reachable optimum, fmState.tgt), it takes
// the swap that lowers that survivor's count and leaves every count it
// raises below the one it lowered (so the sorted counts fall
// lexicographically and the greedy ends), preferring the fewest extra moves
// (a swap can add up to two moves, or save some), then the lowest raised
// count. By default it takes only swaps that add no move in total, so the
// plan keeps its moves; Options.FailoverMoves allows that many more, and
// FailoverMovesAuto as many as reaching the optimum takes, up to
// autoMovesCap (keeping what it gained when the cap comes first). The rack rows (with racks) never get worse.

// FailoverMovesAuto is Options.FailoverMoves for "as many extra moves as
// reaching the failover optimum takes" (up to a cap: autoMovesCap).
const FailoverMovesAuto = -1

// autoMovesCap is the most extra moves FailoverMovesAuto (and the count of
// moves that would reach the optimum) allows: a tenth of the plan's moves,
// and at least 32.
func autoMovesCap(moves int) int { return max(32, moves/10) }

// fmEffort bounds the candidate swaps the step looks at.
const fmEffort = 20_000_000

// fmState is the placement step's state.
type fmState struct {
	w    *work
	n    int
	rack bool
	gc   []int32 // leaders per broker
	S    []int32 // n*n successor counts: S[b*n+j]
	G    []int32 // nrack*n rack-successor counts
	optB int32
	// tgt is the count the step aims at: optB, or more when a broker with
	// the most leaders is the only follower of some partition (RF 2): it
	// succeeds to that partition whatever the placement, and swaps keep
	// every broker's followers (the reachable optimum).
	tgt int32
	// tgtRow[b] is row b's target: tgt, or the rack bound when rack rules
	// keep every follower of b's partitions out of b's rack, so b's
	// leaderships can only land on the brokers of the other racks.
	tgtRow []int32
	optR   []int32
	// ST counts successors per topic: ST[(t*n+b)*n+j], built when first
	// read (stOK; most plans reach the optimum without reading it); optT
	// is each topic's optimum ceil(partitions / (holders-1)).
	ST    map[int64]int32
	stOK  bool
	optT  []int32
	extra int // moves added so far (negative: saved)
	// byLead lists each broker's partitions (leaders never change here).
	byLead [][]int32
	// effort counts candidate swaps looked at; past fmEffort the step
	// stops (a plan of millions of partitions stays within its time).
	effort int
}

// failoverMoves runs the placement step and records in w.foExtra the moves
// it added and in w.foMore how many more would reach the optimum (-1: not
// within the cap, or beyond the effort the step allows; 0: reached).
func (w *work) failoverMoves() {
	w.foMore = 0
	broker, rack, _ := w.failoverDomains()
	if !broker {
		return
	}
	f := w.newFM(rack)
	if f == nil {
		return
	}
	moves := w.countMoves()
	budget := w.opts.FailoverMoves
	if budget == 0 {
		// The plan keeps its moves; say how many more would reach the
		// optimum.
		w.foMore = f.probe(autoMovesCap(moves))
		return
	}
	if budget == FailoverMovesAuto {
		budget = autoMovesCap(moves)
	}
	slots := slices.Clone(w.slots)
	_, _, top0 := f.worstCell()
	reached := f.run(budget)
	if _, _, top := f.worstCell(); top >= top0 {
		// No loss got better: keep the plan as it was. (Auto that cannot
		// reach the optimum within its cap keeps what it gained, as N
		// does, and says the optimum is out of reach.)
		copy(w.slots, slots)
		f.add0()
	}
	w.foExtra = f.extra
	if !reached && w.opts.FailoverMoves == FailoverMovesAuto {
		w.foExtra += w.failoverExchange(budget - f.extra)
	}
	switch {
	case reached:
	case w.opts.FailoverMoves > 0:
		// How many more than N would: measured from here, undone.
		w.foMore = f.probe(autoMovesCap(moves))
	default:
		w.foMore = -1
	}
}

// add0 recounts the successors from the slots and clears the extra moves.
func (f *fmState) add0() {
	clear(f.S)
	clear(f.G)
	clear(f.ST)
	f.stOK = false
	for i := range f.w.c.Partitions {
		f.add(i, 1)
	}
	f.extra = 0
}

// probe continues the greedy up to cap extra moves in all and undoes it:
// it returns the moves beyond the ones taken that reach the optimum, or -1.
func (f *fmState) probe(cap int) int {
	w := f.w
	slots := slices.Clone(w.slots)
	S, G, ST, stOK := slices.Clone(f.S), slices.Clone(f.G), maps.Clone(f.ST), f.stOK
	start := f.extra
	reached := f.run(cap)
	more := f.extra - start
	copy(w.slots, slots)
	f.S, f.G, f.ST, f.stOK, f.extra = S, G, ST, stOK, start
	if !reached {
		return -1
	}
	return more
}

// countMoves counts the replicas on brokers that did not hold them.
func (w *work) countMoves() int {
	m := 0
	for i := range w.c.Partitions {
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if b := w.slots[s]; b >= 0 && !w.origHas(i, b) {
				m++
			}
		}
	}
	return m
}

// origHas reports whether partition i held broker b before the plan.
func (w *work) origHas(i int, b int32) bool {
	return slices.Contains(w.orig[w.origOff[i]:w.origOff[i+1]], b)
}

func (w *work) newFM(rack bool) *fmState {
	n := w.n()
	np := len(w.c.Partitions)
	nT := 0
	for b := range n {
		if w.target[b] {
			nT++
		}
	}
	if nT < 2 {
		return nil
	}
	f := &fmState{w: w, n: n, rack: rack, gc: make([]int32, n), S: make([]int32, n*n)}
	f.optB = int32(ceilDiv(np, nT-1))
	for i := range np {
		f.gc[w.lead[i]]++
	}
	if rack {
		rackSize := make([]int32, w.nrack)
		for b := range n {
			if w.target[b] && w.rack[b] >= 0 {
				rackSize[w.rack[b]]++
			}
		}
		f.optR = make([]int32, w.nrack)
		for r := range w.nrack {
			if s := nT - int(rackSize[r]); s > 0 {
				f.optR[r] = int32(ceilDiv(np, s))
			}
		}
		f.G = make([]int32, w.nrack*n)
	}
	f.tgt = f.optB
	for i := range np {
		if w.off[i+1]-w.off[i] == 2 {
			if j := w.firstFollower(i); j >= 0 {
				f.tgt = max(f.tgt, f.gc[j]+1)
			}
		}
	}
	f.byLead = make([][]int32, n)
	for i := range np {
		f.add(i, 1)
		f.byLead[w.lead[i]] = append(f.byLead[w.lead[i]], int32(i))
	}
	f.tgtRow = make([]int32, n)
	for b := range n {
		f.tgtRow[b] = f.tgt
		if !w.rackAware || !w.target[b] || len(f.byLead[b]) == 0 {
			continue
		}
		out := true
		for _, i := range f.byLead[b] {
			if w.rcap[i] > 1 {
				out = false
				break
			}
		}
		if !out {
			continue
		}
		sum, k := len(f.byLead[b]), 0
		for j := range n {
			if w.target[j] && w.rack[j] != w.rack[b] {
				sum += int(f.gc[j])
				k++
			}
		}
		if k > 0 {
			f.tgtRow[b] = max(f.tgt, int32(ceilDiv(sum, k)))
		}
	}
	f.optT = make([]int32, len(w.tname))
	for t := range w.tname {
		h := 0
		for b := range n {
			if w.tc[t*n+b] > 0 {
				h++
			}
		}
		if h > 1 {
			f.optT[t] = int32(ceilDiv(int(w.tstart[t+1]-w.tstart[t]), h-1))
		}
	}
	return f
}

// rackSucc is partition i's first follower outside its leader's rack, or
// -1.
func (w *work) rackSuccOf(i int) int32 {
	lr := w.rack[w.lead[i]]
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if b := w.slots[s]; b >= 0 && b != w.lead[i] && w.rack[b] != lr {
			return b
		}
	}
	return -1
}

// add adds (d = 1) or removes (d = -1) partition i's successors.
func (f *fmState) add(i int, d int32) {
	w := f.w
	b := w.lead[i]
	if j := w.firstFollower(i); j >= 0 {
		f.S[int(b)*f.n+int(j)] += d
		if f.stOK {
			f.ST[f.tkey(int(w.ptopic[i]), b, j)] += d
		}
	}
	if f.rack {
		if rs := w.rackSuccOf(i); rs >= 0 {
			f.G[int(w.rack[b])*f.n+int(rs)] += d
		}
	}
}

func (f *fmState) tkey(t int, b, j int32) int64 {
	return (int64(t)*int64(f.n)+int64(b))*int64(f.n) + int64(j)
}

// topicLoad is survivor j's leaders of topic t once b is lost.
func (f *fmState) topicLoad(t int, b, j int32) int32 {
	if !f.stOK {
		f.countST()
	}
	return f.w.lc[t*f.n+int(j)] + f.ST[f.tkey(t, b, j)]
}

// countST counts ST from the current order, as add keeps it from then on.
func (f *fmState) countST() {
	w := f.w
	if f.ST == nil {
		f.ST = make(map[int64]int32, len(w.c.Partitions))
	}
	for i := range w.c.Partitions {
		if j := w.firstFollower(i); j >= 0 {
			f.ST[f.tkey(int(w.ptopic[i]), w.lead[i], j)]++
		}
	}
	f.stOK = true
}

// worstCell returns the broker row and survivor of the largest excess of
// gc[j] + S[b][j] over the row's target, and that excess.
func (f *fmState) worstCell() (int32, int32, int32) {
	w, n := f.w, f.n
	bb, bj, best := int32(-1), int32(-1), int32(math.MinInt32)
	for b := range n {
		if !w.target[b] {
			continue
		}
		for j := range n {
			if j != b && w.target[j] {
				if v := f.gc[j] + f.S[b*n+j] - f.tgtRow[b]; v > best {
					bb, bj, best = int32(b), int32(j), v
				}
			}
		}
	}
	return bb, bj, best
}

// worstRack is the largest excess of a rack row over its optimum.
func (f *fmState) worstRack() int32 {
	if !f.rack {
		return 0
	}
	w, n := f.w, f.n
	var wr int32
	for r := range w.nrack {
		for j := range n {
			if w.target[j] && int(w.rack[j]) != r {
				wr = max(wr, f.gc[j]+f.G[r*n+j]-f.optR[r])
			}
		}
	}
	return wr
}

// fmCand is one swap: p's follower in slot sp goes to q's slot sq.
type fmCand struct {
	p, q     int
	sp, sq   int32
	delta    int   // moves added
	raised   int32 // the largest count the swap raises
	ok       bool
	tieBreak int32
}

func (a fmCand) better(b fmCand) bool {
	if !b.ok {
		return true
	}
	if a.delta != b.delta {
		return a.delta < b.delta
	}
	if a.raised != b.raised {
		return a.raised < b.raised
	}
	return a.tieBreak < b.tieBreak
}

// run applies swaps while the worst cell is above the optimum and a swap
// within budget extra moves lowers it. It reports whether the optimum is
// reached.
func (f *fmState) run(budget int) bool {
	w := f.w
	for guard := len(w.c.Partitions) * 4; guard > 0 && f.effort < fmEffort; guard-- {
		f.effort += f.n * f.n
		b, j, top := f.worstCell()
		if b < 0 || top <= 0 {
			return true
		}
		c := f.best(b, j, top, budget)
		if !c.ok {
			return false
		}
		f.apply(c)
	}
	return false
}

// best finds the best swap lowering cell (b, j) at excess top over its
// row's target; every cell it raises ends below top (in excess).
func (f *fmState) best(b, j, top int32, budget int) fmCand {
	w, n := f.w, f.n
	var best fmCand
	wr := f.worstRack()
	// Survivors with room in b's row, least loaded first.
	var ks []int32
	for k := range n {
		if k != int(b) && k != int(j) && w.target[k] && f.gc[k]+f.S[int(b)*n+k]+1-f.tgtRow[b] < top {
			ks = append(ks, int32(k))
		}
	}
	slices.SortStableFunc(ks, func(x, y int32) int {
		return int(f.gc[x]+f.S[int(b)*n+int(x)]) - int(f.gc[y]+f.S[int(b)*n+int(y)])
	})
	for _, p32 := range f.byLead[b] {
		p := int(p32)
		if w.firstFollower(p) != j {
			continue
		}
		sp := int32(-1)
		for s := w.off[p]; s < w.off[p+1]; s++ {
			if w.slots[s] == j {
				sp = s
			}
		}
		tp := int(w.ptopic[p])
		for _, k := range ks {
			if w.holds(p, k) || !w.rackFree(p, k, sp) {
				continue
			}
			raisedP := f.gc[k] + f.S[int(b)*n+int(k)] + 1 - f.tgtRow[b]
			// The topic's own cell (b, j) and the most a raised topic cell
			// may reach.
			capT := max(f.optT[tp], f.topicLoad(tp, b, j)-1)
			if f.topicLoad(tp, b, k)+1 > capT {
				continue
			}
			f.effort += int(w.tstart[tp+1] - w.tstart[tp])
			for q := int(w.tstart[tp]); q < int(w.tstart[tp+1]); q++ {
				if q == p || w.lead[q] == k || w.holds(q, j) {
					continue
				}
				sq := int32(-1)
				for s := w.off[q]; s < w.off[q+1]; s++ {
					if w.slots[s] == k {
						sq = s
					}
				}
				if sq < 0 || !w.rackFree(q, j, sq) {
					continue
				}
				d := f.delta(p, q, j, k)
				if f.extra+d > budget {
					continue
				}
				raised := raisedP
				cq := w.lead[q]
				if w.firstFollower(q) == k {
					v := f.gc[j] + f.S[int(cq)*n+int(j)] + 1 - f.tgtRow[cq]
					vt := f.topicLoad(tp, cq, j) + 1
					if cq == b {
						// p's successor leaves the same row
						v--
						vt--
					}
					if vt > capT {
						continue
					}
					raised = max(raised, v)
				}
				if raised >= top {
					continue
				}
				cand := fmCand{p: p, q: q, sp: sp, sq: sq, delta: d, raised: raised, ok: true, tieBreak: int32(q)}
				if !cand.better(best) {
					continue
				}
				if f.rack && !f.rackKeeps(cand, wr) {
					continue
				}
				best = cand
			}
		}
		if best.ok && best.delta <= 0 && best.raised <= 0 {
			break
		}
	}
	return best
}

// delta is the moves swapping j (on p) and k (on q) adds.
func (f *fmState) delta(p, q int, j, k int32) int {
	w := f.w
	d := 0
	if !w.origHas(p, k) {
		d++
	}
	if !w.origHas(p, j) {
		d--
	}
	if !w.origHas(q, j) {
		d++
	}
	if !w.origHas(q, k) {
		d--
	}
	return d
}

// rackKeeps reports whether the swap leaves the rack rows' worst excess at
// most wr, the worst before it (worstRack): only the cells the two
// partitions' rack successors reach can rise, so only they are read, and
// the swap is rated without being made (rackSuccSwapped).
func (f *fmState) rackKeeps(c fmCand, wr int32) bool {
	w, n := f.w, f.n
	var cell [4]int
	var d [4]int32
	k := 0
	for _, x := range [2]struct {
		i     int
		s, s2 int32
	}{{c.p, c.sp, c.sq}, {c.q, c.sq, c.sp}} {
		r := int(w.rack[w.lead[x.i]])
		if rs := w.rackSuccOf(x.i); rs >= 0 {
			cell[k], d[k] = r*n+int(rs), -1
			k++
		}
		if rs := w.rackSuccSwapped(x.i, x.s, w.slots[x.s2]); rs >= 0 {
			cell[k], d[k] = r*n+int(rs), 1
			k++
		}
	}
	for a := range k {
		if d[a] <= 0 {
			continue
		}
		net := int32(0)
		for b := range k {
			if cell[b] == cell[a] {
				net += d[b]
			}
		}
		r, j := cell[a]/n, cell[a]%n
		if net > 0 && w.target[j] && int(w.rack[j]) != r && f.gc[j]+f.G[cell[a]]+net-f.optR[r] > wr {
			return false
		}
	}
	return true
}

// rackSuccSwapped is rackSuccOf(i) with slot s holding broker v.
func (w *work) rackSuccSwapped(i int, s, v int32) int32 {
	lr := w.rack[w.lead[i]]
	for x := w.off[i]; x < w.off[i+1]; x++ {
		b := w.slots[x]
		if x == s {
			b = v
		}
		if b >= 0 && b != w.lead[i] && w.rack[b] != lr {
			return b
		}
	}
	return -1
}

// swap exchanges the replicas in slots c.sp and c.sq and updates the
// successor counts (its own inverse).
func (f *fmState) swap(c fmCand) {
	w := f.w
	f.add(c.p, -1)
	f.add(c.q, -1)
	w.slots[c.sp], w.slots[c.sq] = w.slots[c.sq], w.slots[c.sp]
	f.add(c.p, 1)
	f.add(c.q, 1)
}

// apply takes swap c for good: both partitions are of one topic, so the
// topic's replica counts (w.tc) stay.
func (f *fmState) apply(c fmCand) {
	f.swap(c)
	f.extra += c.delta
}
