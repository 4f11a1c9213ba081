package reassign

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// The failover phase (phase 2b) runs after the leaders are chosen. Kafka
// hands a dead leader's partitions to the first live in-sync replica in
// assignment order, so with the replica sets and leaders fixed, the order
// of each partition's followers decides which survivor takes over: the
// first follower for a single-broker loss, the first follower outside the
// leader's rack for a rack loss. The phase picks, per partition, which
// follower comes first so that every loss spreads the lost leaderships over
// the survivors as evenly as the sets allow, overall and per topic.
//
// The loads it balances: after losing broker b, survivor j leads
// gc[j] + S[b][j] partitions, where S[b][j] counts b's partitions whose
// successor is j; the optimum is ceil(P / (N-1)) (audit.LossFigure). After
// losing rack R, j leads gc[j] + G[R][j] against ceil(P / (N - |R|)). The
// same holds per topic with the topic's leaders and the brokers holding it.
//
// It works in passes over the partitions, each O(partitions × RF): the
// fixed successors (one follower) first, then a greedy that keeps the
// current first follower while it stays within every optimum and otherwise
// takes the option that exceeds them least (then the least loaded: the
// power of two choices keeps rows within a few of even), then
// best-response passes that move a partition whose successor is above an
// optimum to an option that is less so. Then four exact passes
// (augmenting paths, as in a max-flow): exactRows brings every broker row
// to its exact optimum for these sets (the min-max assignment of the lost
// broker's partitions to their followers, the topic rows kept within
// their targets where a path allows it), topicRows lowers topic rows
// without raising any broker or rack row's maximum, rackRows lowers
// rack rows without raising any broker row's, and topicExact
// (failover_topic.go) brings each topic's row within one of the topic's
// own exact figure, by paths in the flow with both limits (a broker row
// may rise one above its maximum for it, a rack row one). When the exact
// passes leave the worst rack loss worse than the order before the phase
// (leaders per broker uneven within a tolerance), they run again with
// every rack row capped (rackCeil). When a broker loss is then still more
// than one above its exact figure, jointRacks (failover_joint.go) solves
// that rack's rows together as one maximum flow, the rack row allowed up
// to 2% above its optimum. Counts are dense arrays (N² for
// broker rows, racks × N for rack rows); the per-topic counts live in
// scratch arrays reset after each topic, so memory stays O(N² + P).

// Failover domains (Options.FailoverDomain).
const (
	FailoverBroker = "broker"
	FailoverRack   = "rack"
	FailoverBoth   = "both"
	// FailoverNone keeps the followers in the order the other phases
	// leave them (today's order), for comparison.
	FailoverNone = "none"
)

// foPasses bounds the best-response passes.
const foPasses = 2

// foState is the failover phase's state.
type foState struct {
	w            *work
	n            int
	broker, rack bool
	gc           []int32 // leaders per broker
	optB         int32
	optR         []int32 // per rack
	// tgtB and tgtR are the counts each row aims at: the optimum, or the
	// follower bound when the sets keep it out of reach (rackBound).
	tgtB, tgtR []int32
	// tgtT and tgtTR are the same per leader broker and per rack for the
	// topic being processed.
	tgtT, tgtTR []int32
	// pT and pTR keep each partition's topic targets from the first pass.
	pT, pTR []int32
	// Scratch of topicTargets.
	tmark, rmark   []bool
	tsum, tk, tmov []int
	S              []int32 // n*n: successor counts of broker rows
	G              []int32 // nrack*n: rack-successor counts of rack rows
	fst            []int32 // chosen first follower per partition, -1 none
	cur            []int32 // the first follower before the phase

	// Per-topic scratch, valid while one topic is processed.
	ST, GT  []int32
	touched []int32 // indexes into ST and GT to reset (ST: b*n+j; GT: -(1+r*n+j))
	hold    []bool
	held    []int32
	h       int32   // brokers holding the topic
	hr      []int32 // per rack: brokers of it holding the topic
	p       int32   // the topic's partitions

	paths *pathSearch // the augmenting paths' scratch
	// rackCeil, when set, caps every rack row r at rackCeil[r] for the
	// exact passes' path ends (see orderFollowers).
	rackCeil []int32
	// rowE is each broker row's exact figure: its busiest survivor after
	// the first exactRows, which no other limit held back.
	rowE []int32
}

// failoverDomains resolves Options.FailoverDomain: both when racks are
// known, the broker alone otherwise.
func (w *work) failoverDomains() (broker, rack bool, err error) {
	racks := w.rackAware && w.nrack >= 2
	switch w.opts.FailoverDomain {
	case "":
		return true, racks, nil
	case FailoverNone:
		return false, false, nil
	case FailoverBroker:
		return true, false, nil
	case FailoverRack, FailoverBoth:
		if !racks {
			return false, false, targetErr("failover-domain", "%s needs every target broker in a rack and at least 2 racks", w.opts.FailoverDomain)
		}
		return w.opts.FailoverDomain == FailoverBoth, true, nil
	}
	return false, false, targetErr("failover-domain", "must be broker, rack, both or none, got %q", w.opts.FailoverDomain)
}

// orderFollowers runs the failover phase: it reorders each partition's
// followers (never its set or leader) and writes the order into the slots
// as leader, chosen first follower, the others in their order.
func (w *work) orderFollowers() {
	broker, rack, _ := w.failoverDomains()
	if !broker && !rack {
		return
	}
	n := w.n()
	np := len(w.c.Partitions)
	f := &foState{w: w, n: n, broker: broker, rack: rack, fst: make([]int32, np), cur: make([]int32, np), paths: newPathSearch(n)}
	nT := 0
	f.gc = make([]int32, n)
	for i := range np {
		f.gc[w.lead[i]]++
	}
	rackSize := make([]int32, max(w.nrack, 1))
	for b := range n {
		if w.target[b] {
			nT++
			if w.rack[b] >= 0 {
				rackSize[w.rack[b]]++
			}
		}
	}
	if nT < 2 {
		return
	}
	f.optB = int32(ceilDiv(np, nT-1))
	f.S = make([]int32, n*n)
	f.ST = make([]int32, n*n)
	f.hold = make([]bool, n)
	if rack {
		f.optR = make([]int32, w.nrack)
		for r := range w.nrack {
			if s := nT - int(rackSize[r]); s > 0 {
				f.optR[r] = int32(ceilDiv(np, s))
			}
		}
		f.G = make([]int32, w.nrack*n)
		f.GT = make([]int32, w.nrack*n)
		f.hr = make([]int32, w.nrack)
	}
	f.targets()
	f.pT = make([]int32, np)
	if rack {
		f.pTR = make([]int32, np)
	}
	multi := false
	for i := range np {
		f.fst[i] = w.firstFollower(i)
		f.cur[i] = f.fst[i]
		if f.fst[i] >= 0 {
			if w.off[i+1]-w.off[i] > 2 {
				multi = true
			}
		}
	}
	if !multi {
		return // no partition has a choice: RF 1 and 2 only
	}
	if r := w.opts.Rates; r != nil {
		w.notes = append(w.notes, rateNote(broker, rack, r))
	} else {
		w.notes = append(w.notes, failoverNote(broker, rack, w.fw != nil))
	}
	// Fixed successors first, so the greedy sees them.
	for i := range np {
		if f.fst[i] >= 0 && w.off[i+1]-w.off[i] == 2 {
			f.addGlobal(i, f.fst[i], 1)
		}
	}
	for pass := 0; pass <= foPasses; pass++ {
		changed := 0
		for t := range w.tname {
			changed += f.topicPass(t, pass == 0, false)
		}
		if pass > 0 && changed == 0 {
			break
		}
	}
	var snap *foSnapshot
	var gr int32 // the greedy's worst rack excess
	if broker {
		for t := range w.tname {
			f.topicPass(t, false, true)
		}
		if rack {
			snap = f.snapshot()
			_, gr = f.worst()
		}
		f.exactPasses()
	}
	// Never worse than the order the other phases left: a greedy can
	// trade one domain against the other, and the worst loss of neither
	// may grow. The exact passes may raise rack rows as far as they need
	// to bring broker rows to their optimum; when that leaves the worst
	// rack loss worse than the old order's (leaders per broker uneven
	// within a tolerance), they run again from the greedy's order with
	// every rack row capped at the greedy's worst, or the old order's
	// when lower (rackCeil).
	nb, nr := f.worst()
	ob, or := f.worstOf(f.cur)
	if (nb > ob || nr > or) && snap != nil {
		f.restore(snap)
		f.rackCeil = make([]int32, w.nrack)
		for r := range w.nrack {
			f.rackCeil[r] = f.optR[r] + max(min(or, gr), 0)
		}
		f.exactPasses()
		nb, nr = f.worst()
	}
	if snap != nil {
		// worstOf(f.cur) left the old order's counts: the order's first.
		f.worstOf(f.fst)
		f.jointRacks(or)
		nb, nr = f.worst()
	}
	if nb > ob || nr > or {
		w.notes = append(w.notes, "the follower order is left as it was: spreading one failure domain made the other's worst loss worse")
		return
	}
	f.weighted()
	for i := range np {
		if f.fst[i] >= 0 {
			w.writeOrder(i, f.fst[i])
		}
	}
}

// exactPasses runs the exact passes in turn (see the phase's comment).
func (f *foState) exactPasses() {
	f.exactRows()
	if f.rowE == nil && f.rackCeil == nil {
		f.rowE = f.rowMaxima()
	}
	f.topicRows()
	f.rackRows()
	f.topicExact()
}

// foSnapshot is the order and its counts at one point of the phase.
type foSnapshot struct{ fst, S, G []int32 }

func (f *foState) snapshot() *foSnapshot {
	return &foSnapshot{slices.Clone(f.fst), slices.Clone(f.S), slices.Clone(f.G)}
}

func (f *foState) restore(s *foSnapshot) {
	copy(f.fst, s.fst)
	copy(f.S, s.S)
	copy(f.G, s.G)
}

// worstOf is worst for the first followers order (which the counts then
// hold).
func (f *foState) worstOf(order []int32) (int32, int32) {
	clear(f.S)
	clear(f.G)
	for i, j := range order {
		if j >= 0 {
			f.addGlobal(i, j, 1)
		}
	}
	return f.worst()
}

// worst returns the largest excess of a survivor over the optimum over
// every broker loss and every rack loss, from the counts.
func (f *foState) worst() (int32, int32) {
	w, n := f.w, f.n
	var wb, wr int32
	if f.broker {
		for b := range n {
			if !w.target[b] {
				continue
			}
			row := f.S[b*n : (b+1)*n]
			for j := range n {
				if j != b && w.target[j] {
					wb = max(wb, f.gc[j]+row[j]-f.optB)
				}
			}
		}
	}
	if f.rack {
		for r := range w.nrack {
			row := f.G[r*n : (r+1)*n]
			for j := range n {
				if w.target[j] && int(w.rack[j]) != r {
					wr = max(wr, f.gc[j]+row[j]-f.optR[r])
				}
			}
		}
	}
	return wb, wr
}

// firstFollower is partition i's first follower in the order the plan
// writes (the leader first, then the slots in order), or -1 for RF 1.
func (w *work) firstFollower(i int) int32 {
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if b := w.slots[s]; b != w.lead[i] {
			return b
		}
	}
	return -1
}

// writeOrder rewrites partition i's slots as leader, f, then the other
// followers in their order.
func (w *work) writeOrder(i int, f int32) {
	reps := w.slots[w.off[i]:w.off[i+1]]
	lead := w.lead[i]
	out := make([]int32, 0, len(reps))
	out = append(out, lead, f)
	for _, b := range reps {
		if b != lead && b != f {
			out = append(out, b)
		}
	}
	copy(reps, out)
}

// rackSucc is partition i's first follower outside its leader's rack when
// f comes first, or -1.
func (f *foState) rackSucc(i int, first int32) int32 {
	w := f.w
	lr := w.rack[w.lead[i]]
	if w.rack[first] != lr {
		return first
	}
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if b := w.slots[s]; b != w.lead[i] && b != first && w.rack[b] != lr {
			return b
		}
	}
	return -1
}

// addGlobal adds (d = 1) or removes (d = -1) partition i's successors with
// first follower j to the broker and rack rows.
func (f *foState) addGlobal(i int, j int32, d int32) {
	w := f.w
	b := w.lead[i]
	if f.broker {
		f.S[int(b)*f.n+int(j)] += d
	}
	if f.rack {
		if rs := f.rackSucc(i, j); rs >= 0 {
			f.G[int(w.rack[b])*f.n+int(rs)] += d
		}
	}
}

// addTopic does the same for the topic scratch rows.
func (f *foState) addTopic(i int, j int32, d int32) {
	w := f.w
	b := w.lead[i]
	if f.broker {
		k := int(b)*f.n + int(j)
		if f.ST[k] == 0 && d > 0 {
			f.touched = append(f.touched, int32(k))
		}
		f.ST[k] += d
	}
	if f.rack {
		if rs := f.rackSucc(i, j); rs >= 0 {
			k := int(w.rack[b])*f.n + int(rs)
			if f.GT[k] == 0 && d > 0 {
				f.touched = append(f.touched, -int32(1+k))
			}
			f.GT[k] += d
		}
	}
}

// foKey ranks one option of one partition: the largest excess over an
// optimum it causes, their sum, whether it leaves the current order, and
// the loads it adds to.
type foKey struct {
	worst, sum, moved, load int32
}

func (a foKey) less(b foKey) bool {
	if a.worst != b.worst {
		return a.worst < b.worst
	}
	if a.sum != b.sum {
		return a.sum < b.sum
	}
	if a.moved != b.moved {
		return a.moved < b.moved
	}
	return a.load < b.load
}

// key rates first follower j for partition i, whose own contribution is
// removed from the counts.
func (f *foState) key(i int, j int32, t int) foKey {
	w, n := f.w, f.n
	b := int(w.lead[i])
	lc := w.lc[t*n : (t+1)*n]
	var k foKey
	// worst is the largest excess over a target beyond tol, sum all of it.
	add := func(e, tol int32) {
		if e > 0 {
			k.worst = max(k.worst, e-tol)
			k.sum += e
		}
	}
	if f.broker {
		lb := f.gc[j] + f.S[b*n+int(j)] + 1
		add(lb-f.tgtB[b], 0)
		k.load += lb
		if f.h > 1 {
			add(lc[j]+f.ST[b*n+int(j)]+1-f.tgtT[b], 0)
		}
	}
	if f.rack {
		if rs := f.rackSucc(i, j); rs >= 0 {
			r := int(w.rack[b])
			lr := f.gc[rs] + f.G[r*n+int(rs)] + 1
			add(lr-f.tgtR[r], 0)
			k.load += lr
			if f.h-f.hr[r] > 0 {
				add(lc[rs]+f.GT[r*n+int(rs)]+1-f.tgtTR[r], 0)
			}
		}
	}
	if j != f.cur[i] {
		k.moved = 1
	}
	return k
}

// topicPass processes topic t's partitions: the greedy (first) or a
// best-response pass, then with repair the topic's paths (topicRepair).
// It returns the partitions whose choice changed.
func (f *foState) topicPass(t int, first, repair bool) int {
	w := f.w
	lo, hi := int(w.tstart[t]), int(w.tstart[t+1])
	// The brokers holding the topic, overall and per rack.
	f.p = int32(hi - lo)
	f.h = 0
	for s := w.off[lo]; s < w.off[hi]; s++ {
		if b := w.slots[s]; b >= 0 && !f.hold[b] {
			f.hold[b] = true
			f.held = append(f.held, b)
			f.h++
			if f.rack && w.rack[b] >= 0 {
				f.hr[w.rack[b]]++
			}
		}
	}
	if first {
		f.topicTargets(t, lo, hi)
		for i := lo; i < hi; i++ {
			b := w.lead[i]
			f.pT[i] = f.tgtT[b]
			if f.rack {
				f.pTR[i] = f.tgtTR[w.rack[b]]
			}
		}
	} else {
		// The targets depend on leaders and sets only: the first pass's.
		for i := lo; i < hi; i++ {
			b := w.lead[i]
			f.tgtT[b] = f.pT[i]
			if f.rack {
				f.tgtTR[w.rack[b]] = f.pTR[i]
			}
		}
	}
	if !first {
		for i := lo; i < hi; i++ {
			if f.fst[i] >= 0 {
				f.addTopic(i, f.fst[i], 1)
			}
		}
	} else {
		for i := lo; i < hi; i++ {
			if f.fst[i] >= 0 && w.off[i+1]-w.off[i] == 2 {
				f.addTopic(i, f.fst[i], 1)
			}
		}
	}
	changed := 0
	for i := lo; i < hi; i++ {
		if f.fst[i] < 0 || w.off[i+1]-w.off[i] == 2 {
			continue
		}
		old := f.fst[i]
		var oldKey foKey
		if !first {
			f.addGlobal(i, old, -1)
			f.addTopic(i, old, -1)
			oldKey = f.key(i, old, t)
			if oldKey.worst == 0 {
				// Within every optimum: leave it.
				f.addGlobal(i, old, 1)
				f.addTopic(i, old, 1)
				continue
			}
		}
		best, bestKey := int32(-1), foKey{}
		for s := w.off[i]; s < w.off[i+1]; s++ {
			j := w.slots[s]
			if j == w.lead[i] {
				continue
			}
			k := f.key(i, j, t)
			if !first {
				k.moved = 0 // best response: move only for a strictly better key
				if j == old {
					k.load-- // ties stay
				}
			}
			if best < 0 || k.less(bestKey) {
				best, bestKey = j, k
			}
		}
		f.fst[i] = best
		f.addGlobal(i, best, 1)
		f.addTopic(i, best, 1)
		if best != old {
			changed++
		}
	}
	if repair {
		changed += f.topicRepair(t, lo, hi)
	}
	// Reset the scratch.
	for _, k := range f.touched {
		if k >= 0 {
			f.ST[k] = 0
		} else {
			f.GT[-k-1] = 0
		}
	}
	f.touched = f.touched[:0]
	for _, b := range f.held {
		f.hold[b] = false
		if f.rack && w.rack[b] >= 0 {
			f.hr[w.rack[b]] = 0
		}
	}
	f.held = f.held[:0]
	return changed
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// bound is the larger of opt and the follower bound: k brokers holding
// followers, with sum leaders between them, take moving more.
func bound(opt int32, sum, moving, k int) int32 {
	if k == 0 {
		return opt
	}
	return max(opt, int32(ceilDiv(sum+moving, k)))
}

// targets sets the row targets: for broker b, the optimum or, when b's
// partitions have followers on too few brokers to reach it, their average
// once b's leaderships land on them; for rack r the same over the
// followers outside r.
func (f *foState) targets() {
	w, n := f.w, f.n
	mark := make([]bool, n*max(n, w.nrack))
	f.tgtB = make([]int32, n)
	moving := make([]int, n)
	for i := range w.c.Partitions {
		b := int(w.lead[i])
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if j := int(w.slots[s]); j != b {
				mark[b*n+j] = true
			}
		}
		if w.off[i+1]-w.off[i] > 1 {
			moving[b]++
		}
	}
	for b := range n {
		sum, k := 0, 0
		for j := range n {
			if mark[b*n+j] {
				k++
				sum += int(f.gc[j])
			}
		}
		f.tgtB[b] = bound(f.optB, sum, moving[b], k)
	}
	if !f.rack {
		return
	}
	clear(mark)
	clear(moving)
	f.tgtR = make([]int32, w.nrack)
	for i := range w.c.Partitions {
		b := w.lead[i]
		r := int(w.rack[b])
		has := false
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if j := w.slots[s]; w.rack[j] != w.rack[b] {
				mark[r*n+int(j)] = true
				has = true
			}
		}
		if has {
			moving[r]++
		}
	}
	for r := range w.nrack {
		sum, k := 0, 0
		for j := range n {
			if mark[r*n+j] {
				k++
				sum += int(f.gc[j])
			}
		}
		f.tgtR[r] = bound(f.optR[r], sum, moving[r], k)
	}
}

// topicTargets sets tgtT and tgtTR for topic t (partitions lo..hi-1): per
// leader broker and per rack, the topic's optimum or its follower bound.
// It runs after the topic's holders are counted (f.h, f.hr).
func (f *foState) topicTargets(t, lo, hi int) {
	w, n := f.w, f.n
	if f.tgtT == nil {
		f.tgtT = make([]int32, n)
		f.tmark = make([]bool, n*n)
		f.tsum = make([]int, n)
		f.tk = make([]int, n)
		f.tmov = make([]int, n)
		if f.rack {
			f.tgtTR = make([]int32, w.nrack)
			f.rmark = make([]bool, w.nrack*n)
		}
	}
	lc := w.lc[t*n : (t+1)*n]
	var optT int32
	if f.h > 1 {
		optT = int32(ceilDiv(int(f.p), int(f.h-1)))
	}
	var leaders []int32
	for i := lo; i < hi; i++ {
		b := w.lead[i]
		if f.tmov[b] == 0 && f.tk[b] == 0 {
			leaders = append(leaders, b)
		}
		if w.off[i+1]-w.off[i] > 1 {
			f.tmov[b]++
		}
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if j := w.slots[s]; j != b && !f.tmark[int(b)*n+int(j)] {
				f.tmark[int(b)*n+int(j)] = true
				f.tk[b]++
				f.tsum[b] += int(lc[j])
			}
		}
	}
	for _, b := range leaders {
		f.tgtT[b] = bound(optT, f.tsum[b], f.tmov[b], f.tk[b])
	}
	// Reset the marks through the same partitions.
	for i := lo; i < hi; i++ {
		b := w.lead[i]
		for s := w.off[i]; s < w.off[i+1]; s++ {
			f.tmark[int(b)*n+int(w.slots[s])] = false
		}
	}
	for _, b := range leaders {
		f.tsum[b], f.tk[b], f.tmov[b] = 0, 0, 0
	}
	if !f.rack {
		return
	}
	sum := make([]int, w.nrack)
	k := make([]int, w.nrack)
	mov := make([]int, w.nrack)
	for i := lo; i < hi; i++ {
		b := w.lead[i]
		r := int(w.rack[b])
		has := false
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if j := w.slots[s]; w.rack[j] != w.rack[b] {
				has = true
				if !f.rmark[r*n+int(j)] {
					f.rmark[r*n+int(j)] = true
					k[r]++
					sum[r] += int(lc[j])
				}
			}
		}
		if has {
			mov[r]++
		}
	}
	for r := range w.nrack {
		var opt int32
		if s := f.h - f.hr[r]; s > 0 {
			opt = int32(ceilDiv(int(f.p), int(s)))
		}
		f.tgtTR[r] = bound(opt, sum[r], mov[r], k[r])
	}
	for i := lo; i < hi; i++ {
		r := int(w.rack[w.lead[i]])
		for s := w.off[i]; s < w.off[i+1]; s++ {
			f.rmark[r*n+int(w.slots[s])] = false
		}
	}
}

// failoverNote says what the order weighs.
func failoverNote(broker, rack, weighted bool) string {
	d := "single-broker"
	switch {
	case broker && rack:
		d = "single-broker and rack"
	case rack:
		d = "rack"
	}
	if weighted {
		return fmt.Sprintf("followers ordered to spread the leaderships of every %s loss, counted in partitions, then single-broker losses weighted by each partition's produce + consume bytes/s", d)
	}
	return fmt.Sprintf("followers ordered to spread the leaderships of every %s loss (counted in partitions, unweighted: reassign reads no rates)", d)
}

// topicRepair lowers, for each broker leading topic t's partitions, the
// survivors its loss leaves above the topic's target, by chains of
// successor changes inside the topic and the leader's partitions: a
// breadth-first search over brokers from one above the target, each hop a
// partition whose successor moves from one follower to another, to a
// broker with room. Inner hops keep every count; the end gains one in the
// topic's row, the broker row and the rack row, so it must stay within
// each target (or below the start's count). Hops change only successors
// that are also the rack successor (or racks are not spread), so rack rows
// count the same broker. It returns the partitions changed.
func (f *foState) topicRepair(t, lo, hi int) int {
	w, n := f.w, f.n
	lc := w.lc[t*n : (t+1)*n]
	// Partitions with a choice, grouped by leader.
	var idx []int32
	for i := lo; i < hi; i++ {
		if f.fst[i] >= 0 && w.off[i+1]-w.off[i] > 2 {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == 0 {
		return 0
	}
	slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(w.lead[a], w.lead[b]) })
	plain := func(i int, j int32) bool { return !f.rack || f.rackSucc(i, j) == j }
	topicLoad := func(b, j int32) int32 { return lc[j] + f.ST[int(b)*n+int(j)] }
	changed := 0
	for a := 0; a < len(idx); {
		b := w.lead[idx[a]]
		e := a
		for e < len(idx) && w.lead[idx[e]] == b {
			e++
		}
		group := idx[a:e]
		a = e
		r := int(w.rack[b])
		on := func(int32) []int32 { return group }
		to := func(i, x int32) []int32 {
			if f.fst[i] != x || !plain(int(i), x) {
				return nil
			}
			return w.slots[w.off[i]:w.off[i+1]]
		}
		may := func(i, k int32) bool { return k != b && plain(int(i), k) }
		for guard := len(group); guard > 0; guard-- {
			// The follower furthest above the topic target.
			start, worst := int32(-1), f.tgtT[b]
			for _, i := range group {
				if j := f.fst[i]; topicLoad(b, j) > worst {
					start, worst = j, topicLoad(b, j)
				}
			}
			if start < 0 {
				break
			}
			startB := f.gc[start] + f.S[int(b)*n+int(start)]
			var startR int32
			if f.rack {
				startR = f.gc[start] + f.G[r*n+int(start)]
			}
			end := f.paths.search(start, on, to, may, func(k int32) bool {
				okT := topicLoad(b, k)+1 <= f.tgtT[b]
				okB := !f.broker || f.gc[k]+f.S[int(b)*n+int(k)]+1 <= max(f.tgtB[b]+1, startB-1)
				okR := !f.rack || f.gc[k]+f.G[r*n+int(k)]+1 <= max(f.tgtR[r], startR-1) &&
					lc[k]+f.GT[r*n+int(k)]+1 <= max(f.tgtTR[r], lc[start]+f.GT[r*n+int(start)]-1)
				return okT && okB && okR
			})
			if end < 0 {
				break
			}
			f.paths.walk(start, end, func(i, x, k int32) {
				f.addGlobal(int(i), x, -1)
				f.addTopic(int(i), x, -1)
				f.fst[i] = k
				f.addGlobal(int(i), k, 1)
				f.addTopic(int(i), k, 1)
				changed++
			})
		}
	}
	return changed
}

// foLevels are exactRows' slacks, in turn: how far above its target a
// path may raise a topic row, and the rack row at its end.
var foLevels = [][2]int32{{0, 0}, {1, 0}, {1, 2}, {1, math.MaxInt32 / 2}, {math.MaxInt32 / 2, math.MaxInt32 / 2}}

// exactRows brings every broker row to its exact optimum: the loss of b
// hands b's partitions to their first followers, so the choice of first
// followers of b's partitions is a min-max assignment of its own
// (partitions to the followers they hold, each survivor starting from its
// leaders). The row's busiest survivor m, at load L, is lowered by an
// augmenting path (a breadth-first search over survivors, each hop a
// partition of b whose first follower moves to another of its followers)
// to a survivor at L-2 or less; when no such path exists, the survivors
// reachable from m hold partitions that can go nowhere else and average
// above L-1, so L is the row's optimum. Paths are looked for first
// keeping every topic row within its target (the secondary objective),
// then one above it, then without the topic rows; the end of a path must
// keep the rack row within its target or below the start's (hops change
// only successors that are also the rack successor, so the rack row
// changes at the ends only). It returns the partitions changed.
//
// Without racks the rows share nothing: a row's paths change the first
// followers of its own partitions and its own counts (row b of S) only, so
// the rows run side by side (exactWorkers) and give what they give one
// after another. With racks a path's end raises a rack row that other
// broker rows read: they run in turn.
func (f *foState) exactRows() int {
	w, n := f.w, f.n
	byLead := make([][]int32, n)
	for i := range len(w.c.Partitions) {
		if f.fst[i] >= 0 {
			byLead[w.lead[i]] = append(byLead[w.lead[i]], int32(i))
		}
	}
	workers := 1
	if !f.rack {
		workers = min(runtime.GOMAXPROCS(0), exactWorkers)
	}
	var next, changed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			sc := f.newRowScratch()
			for {
				b := int(next.Add(1) - 1)
				if b >= n {
					return
				}
				changed.Add(int64(f.exactRow(b, byLead[b], sc)))
			}
		})
	}
	wg.Wait()
	return int(changed.Load())
}

// exactWorkers bounds the rows exactRows runs side by side.
const exactWorkers = 4

// rowScratch is one exactRows worker's scratch.
type rowScratch struct {
	// tl[local[t]*n+j] counts topic t's successors on j in the row, where
	// local numbers the row's topics (-1: none of the row); both are
	// cleared after the row.
	tl        []int32
	local     []int32
	topics    []int32   // the row's topics
	byAt      [][]int32 // the row's partitions with a choice by first follower
	touchedAt []int32
	paths     *pathSearch
}

func (f *foState) newRowScratch() *rowScratch {
	sc := &rowScratch{local: make([]int32, len(f.w.tname)), byAt: make([][]int32, f.n), paths: newPathSearch(f.n)}
	for t := range sc.local {
		sc.local[t] = -1
	}
	return sc
}

// exactRow brings row b (its partitions group) to its optimum and returns
// the partitions changed.
func (f *foState) exactRow(b int, group []int32, sc *rowScratch) int {
	w, n := f.w, f.n
	if !w.target[b] || len(group) == 0 {
		return 0
	}
	choice := false
	for _, i := range group {
		choice = choice || w.off[i+1]-w.off[i] > 2
	}
	if !choice {
		return 0
	}
	for _, i := range group {
		if t := w.ptopic[i]; sc.local[t] < 0 {
			sc.local[t] = int32(len(sc.topics))
			sc.topics = append(sc.topics, t)
		}
	}
	sc.tl = slices.Grow(sc.tl[:0], len(sc.topics)*n)[:len(sc.topics)*n]
	tl := sc.tl
	at := func(i, j int32) int { return int(sc.local[w.ptopic[i]])*n + int(j) }
	for _, i := range group {
		tl[at(i, f.fst[i])]++
	}
	changed := f.exactPaths(b, group, sc, at)
	for _, i := range group {
		tl[at(i, f.fst[i])] = 0
	}
	for _, t := range sc.topics {
		sc.local[t] = -1
	}
	sc.topics = sc.topics[:0]
	return changed
}

// exactPaths applies exactRow's paths to row b, whose topic counts are
// in sc.tl at at(i, j) for partition i's topic and broker j.
func (f *foState) exactPaths(b int, group []int32, sc *rowScratch, at func(i, j int32) int) int {
	w, n := f.w, f.n
	plain := func(i int, j int32) bool { return !f.rack || f.rackSucc(i, j) == j }
	tl, byAt := sc.tl, sc.byAt
	r := 0
	if f.rack {
		r = int(w.rack[b])
	}
	for _, x := range sc.touchedAt {
		byAt[x] = byAt[x][:0]
	}
	sc.touchedAt = sc.touchedAt[:0]
	for _, i := range group {
		if w.off[i+1]-w.off[i] > 2 {
			x := f.fst[i]
			if len(byAt[x]) == 0 {
				sc.touchedAt = append(sc.touchedAt, x)
			}
			byAt[x] = append(byAt[x], i)
		}
	}
	load := func(j int32) int32 { return f.gc[j] + f.S[b*n+int(j)] }
	on := func(x int32) []int32 { return byAt[x] }
	to := func(i, x int32) []int32 {
		if !plain(int(i), x) {
			return nil
		}
		return w.slots[w.off[i]:w.off[i+1]]
	}
	changed := 0
	// The level only rises within a row: a level that found no path is
	// not tried again (each failed search walks the whole row).
	level := 0
	for guard := 4 * len(group); guard > 0; guard-- {
		m := int32(-1)
		for j := range int32(n) {
			if int(j) != b && w.target[j] && (m < 0 || load(j) > load(m)) {
				m = j
			}
		}
		if m < 0 {
			break
		}
		L := load(m)
		var startR int32
		if f.rack {
			startR = f.gc[m] + f.G[r*n+int(m)]
		}
		end := int32(-1)
		for ; level < len(foLevels); level++ {
			tslack, rslack := foLevels[level][0], foLevels[level][1]
			end = sc.paths.search(m, on, to, func(i, k int32) bool {
				return int(k) != b && plain(int(i), k) && w.lc[int(w.ptopic[i])*n+int(k)]+tl[at(i, k)]+1 <= f.pT[i]+tslack
			}, func(k int32) bool {
				okR := !f.rack || f.gc[k]+f.G[r*n+int(k)]+1 <= max(f.tgtR[r], startR-1)+rslack && f.underCeil(r, k)
				return load(k) <= L-2 && okR
			})
			if end >= 0 {
				break
			}
		}
		if end < 0 {
			break
		}
		sc.paths.walk(m, end, func(i, x, k int32) {
			f.addGlobal(int(i), x, -1)
			tl[at(i, x)]--
			f.fst[i] = k
			f.addGlobal(int(i), k, 1)
			tl[at(i, k)]++
			byAt[x] = slices.DeleteFunc(byAt[x], func(v int32) bool { return v == i })
			if len(byAt[k]) == 0 {
				sc.touchedAt = append(sc.touchedAt, k)
			}
			byAt[k] = append(byAt[k], i)
			changed++
		})
	}
	return changed
}

// rackRows lowers the rack rows exactRows raised, without raising any
// broker row above its maximum (so broker losses stay at their optimum):
// per rack r, the busiest survivor m of r's loss (at L) is lowered by an
// augmenting path over the partitions led in r, each hop one whose first
// follower (also its rack successor) moves to another of its followers
// outside r, to a survivor at L-2 or less; a hop keeps its topic row
// within one above its target. Paths change a broker row at their hops:
// row b loses one on x and gains one on k, so k must stay within row b's
// maximum.
func (f *foState) rackRows() {
	if !f.rack {
		return
	}
	w, n := f.w, f.n
	rowMax := f.rowMaxima()
	tl := map[int64]int32{} // (t*n+b)*n+j: topic t's successors on j in row b
	byRack := make([][]int32, w.nrack)
	for i := range len(w.c.Partitions) {
		if f.fst[i] < 0 {
			continue
		}
		b := w.lead[i]
		tl[(int64(w.ptopic[i])*int64(n)+int64(b))*int64(n)+int64(f.fst[i])]++
		if w.off[i+1]-w.off[i] > 2 && f.rackSucc(i, f.fst[i]) == f.fst[i] {
			byRack[w.rack[b]] = append(byRack[w.rack[b]], int32(i))
		}
	}
	topicLoad := func(t int, b, j int32) int32 {
		return w.lc[t*n+int(j)] + tl[(int64(t)*int64(n)+int64(b))*int64(n)+int64(j)]
	}
	byAt := make([][]int32, n)
	on := func(x int32) []int32 { return byAt[x] }
	to := func(i, _ int32) []int32 { return w.slots[w.off[i]:w.off[i+1]] }
	for r := range w.nrack {
		for j := range byAt {
			byAt[j] = byAt[j][:0]
		}
		for _, i := range byRack[r] {
			byAt[f.fst[i]] = append(byAt[f.fst[i]], i)
		}
		load := func(j int32) int32 { return f.gc[j] + f.G[r*n+int(j)] }
		surv := func(j int32) bool { return w.target[j] && int(w.rack[j]) != r }
		may := func(i, k int32) bool {
			b, t := w.lead[i], int(w.ptopic[i])
			return k != b && surv(k) && f.rackSucc(int(i), k) == k &&
				f.gc[k]+f.S[int(b)*n+int(k)]+1 <= rowMax[b] && topicLoad(t, b, k)+1 <= f.pT[i]+1
		}
		for guard := 4 * len(byRack[r]); guard > 0; guard-- {
			m := int32(-1)
			for j := range int32(n) {
				if surv(j) && (m < 0 || load(j) > load(m)) {
					m = j
				}
			}
			if m < 0 {
				break
			}
			L := load(m)
			end := f.paths.search(m, on, to, may, func(k int32) bool { return load(k) <= L-2 })
			if end < 0 {
				break
			}
			f.paths.walk(m, end, func(i, x, k int32) {
				b, t := w.lead[i], int64(w.ptopic[i])
				f.addGlobal(int(i), x, -1)
				tl[(t*int64(n)+int64(b))*int64(n)+int64(x)]--
				f.fst[i] = k
				f.addGlobal(int(i), k, 1)
				tl[(t*int64(n)+int64(b))*int64(n)+int64(k)]++
				byAt[x] = slices.DeleteFunc(byAt[x], func(v int32) bool { return v == i })
				byAt[k] = append(byAt[k], i)
			})
		}
	}
}

// topicRows lowers, after exactRows, each topic's row of each leader b
// (the topic's survivors once b is lost) while it is above the topic's
// target: an augmenting path over the topic's partitions led by b, to a
// survivor at two below the row's busiest. Inner hops keep the broker row
// and, since hops change only successors that are also rack successors,
// the rack row; the end gains one in both, so it must stay within the
// broker row's maximum and the rack row's.
func (f *foState) topicRows() {
	w, n := f.w, f.n
	rowMax := f.rowMaxima()
	rackMax := f.rackMaxima()
	plain := func(i int, j int32) bool { return !f.rack || f.rackSucc(i, j) == j }
	// Partitions by topic, then leader: topics are contiguous already.
	var group []int32
	tl := make([]int32, n)
	on := func(int32) []int32 { return group }
	to := func(i, x int32) []int32 {
		if f.fst[i] != x || w.off[i+1]-w.off[i] <= 2 || !plain(int(i), x) {
			return nil
		}
		return w.slots[w.off[i]:w.off[i+1]]
	}
	for t := range w.tname {
		lo, hi := int(w.tstart[t]), int(w.tstart[t+1])
		idx := make([]int32, 0, hi-lo)
		for i := lo; i < hi; i++ {
			if f.fst[i] >= 0 {
				idx = append(idx, int32(i))
			}
		}
		slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(w.lead[a], w.lead[b]) })
		lc := w.lc[t*n : (t+1)*n]
		for a := 0; a < len(idx); {
			b := w.lead[idx[a]]
			e := a
			for e < len(idx) && w.lead[idx[e]] == b {
				e++
			}
			group = idx[a:e]
			a = e
			for _, i := range group {
				tl[f.fst[i]]++
			}
			r := 0
			if f.rack {
				r = int(w.rack[b])
			}
			may := func(i, k int32) bool { return k != b && plain(int(i), k) }
			tgt := f.pT[group[0]]
			for guard := len(group); guard > 0; guard-- {
				m := int32(-1)
				for _, i := range group {
					if j := f.fst[i]; m < 0 || lc[j]+tl[j] > lc[m]+tl[m] {
						m = j
					}
				}
				L := lc[m] + tl[m]
				if L <= tgt {
					break
				}
				end := f.paths.search(m, on, to, may, func(k int32) bool {
					okB := f.gc[k]+f.S[int(b)*n+int(k)]+1 <= rowMax[b]
					okR := !f.rack || f.gc[k]+f.G[r*n+int(k)]+1 <= rackMax[r]
					return lc[k]+tl[k] <= L-2 && okB && okR
				})
				if end < 0 {
					break
				}
				f.paths.walk(m, end, func(i, x, k int32) {
					f.addGlobal(int(i), x, -1)
					tl[x]--
					f.fst[i] = k
					f.addGlobal(int(i), k, 1)
					tl[k]++
				})
			}
			for _, i := range group {
				tl[f.fst[i]] = 0
			}
		}
	}
}

// underCeil is whether broker k may take one more in rack row r
// (rackCeil).
func (f *foState) underCeil(r int, k int32) bool {
	return f.rackCeil == nil || f.gc[k]+f.G[r*f.n+int(k)]+1 <= f.rackCeil[r]
}

// rackMaxima is each rack row's busiest survivor's leaders (nil without
// racks).
func (f *foState) rackMaxima() []int32 {
	if !f.rack {
		return nil
	}
	w, n := f.w, f.n
	out := make([]int32, w.nrack)
	for r := range w.nrack {
		for j := range n {
			if w.target[j] && int(w.rack[j]) != r {
				out[r] = max(out[r], f.gc[j]+f.G[r*n+j])
			}
		}
	}
	return out
}

// rowMaxima is each broker row's busiest survivor's leaders.
func (f *foState) rowMaxima() []int32 {
	w, n := f.w, f.n
	out := make([]int32, n)
	for b := range n {
		if !w.target[b] {
			continue
		}
		for j := range n {
			if j != b && w.target[j] {
				out[b] = max(out[b], f.gc[j]+f.S[b*n+j])
			}
		}
	}
	return out
}
