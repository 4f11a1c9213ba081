package reassign

import "slices"

// jointRacks is the failover phase's last exact pass, for racks: where the
// passes before leave some single-broker loss more than one leader above
// its exact figure (rowE: the row's min-max, which the first exactRows
// reaches when nothing else limits it), it solves the rows of that loss's
// rack at once.
//
// With every follower of a partition outside its leader's rack (RF 3 over
// 3 racks), the first follower j of a partition of topic t led by b in
// rack r is also its rack successor: it adds one to topic t's row of b's
// loss, to b's row and to r's rack row, all on survivor j. Those limits
// nest (the topic pair (t, b, j) within the broker pair (b, j) within the
// rack column (r, j)), so every row of rack r with a cap on each is one
// maximum flow: source -> partition (1) -> (t, b, j) (topic cap less t's
// leaders on j) -> (b, j) (row cap less j's leaders) -> (r, j) (rack cap
// less j's leaders) -> sink, and the caps hold together exactly when the
// flow carries every partition. The caps: each broker row its exact
// figure + sb, each topic pair its exact figure + 1 (topicCap; + 2 for a
// row whose own flow, without the rack, proves + 1 impossible at that sb),
// the rack row at most 2% above its optimum (and within the old order's
// worst, which the phase never exceeds). The pass takes the least sb the
// flow allows: it starts where a cut allows it (cut) and raises the broker
// pairs' capacities one at a time, augmenting the flow it has. The flow
// starts from the present order (each partition kept where its pairs have
// room), so it changes few first followers. Partitions of one row with the
// same two followers whose topic pairs cannot reach their caps travel
// together (one node of their count), which keeps the network small.
//
// Why the broker rows can need more than one above their figures: the
// survivors' own leaders gc[j] weigh differently in the two domains. The
// ten broker rows of a rack leave survivor j room for sum_b (C_b - gc[j])
// of their partitions, the rack row R - gc[j]; both must carry the rack's
// partitions, so the survivors can take at most sum_j min(R - gc[j],
// sum_b (C_b - gc[j])) of them (cut). With leaders per broker uneven
// within a tolerance, the smaller of the two loses room at both ends of gc
// (the broker rows at the busy survivors, the rack row at the idle ones),
// and the rows need a higher C_b for a given R. With leaders even
// (tolerance 0) the two rooms agree and both reach their figures.
//
// Partitions with no choice (RF 2), or a follower in the leader's rack
// (the rack successor then is another broker), keep their order and count
// as fixed loads.
func (f *foState) jointRacks(orOld int32) {
	w, n := f.w, f.n
	if !f.rack || !f.broker || f.rowE == nil {
		return
	}
	rowMax := f.rowMaxima()
	over := make([]int32, w.nrack)
	anyOver := false
	for b := range n {
		if w.target[b] && rowMax[b]-f.rowE[b] > 1 {
			r := w.rack[b]
			over[r] = max(over[r], rowMax[b]-f.rowE[b])
			anyOver = true
		}
	}
	if !anyOver {
		return
	}
	byLead := make([][]int32, n)
	for i := range len(w.c.Partitions) {
		if f.fst[i] >= 0 && over[w.rack[w.lead[i]]] > 0 {
			byLead[w.lead[i]] = append(byLead[w.lead[i]], int32(i))
		}
	}
	js := &jointScratch{f: f, byLead: byLead, tsc: f.newTopicScratch(), cnt: make([]int32, n), fcnt: make([]int32, n), node: make([]int32, n), stamp: make([]int32, n), bStamp: make([]int32, n), class: make([]int32, n*n)}
	for r := range w.nrack {
		if over[r] > 1 {
			hi := min(f.optR[r]*102/100, f.optR[r]+max(orOld, 0))
			js.rack(r, rowMax, hi)
		}
	}
}

// jointScratch is jointRacks' state, one rack at a time.
type jointScratch struct {
	f      *foState
	byLead [][]int32
	tsc    *topicScratch

	r    int
	rows []int32 // the rack's target brokers
	// Units are what the flow carries, row by row (row ri's from
	// unitAt[ri]; one more at the end): one partition whose topic pair may
	// reach its cap (a single: through topic pair nodes), or a class of a
	// row's partitions with the same two followers whose topic pairs
	// cannot reach their caps (straight to the broker pairs, capacity its
	// partitions).
	unitAt []int32
	uCap   []int32
	uGrp   []int32 // a single's topic group (row and topic), -1 for a class
	// Per unit and follower (flat, unit u's from uFolAt[u]): the
	// follower, the unit's partitions on it now, and for a single its
	// topic pair's room before the slack (cap - t's leaders on it - the
	// pair's fixed partitions).
	uFolAt []int32
	uFol   []int32
	uOn    []int32
	uTB    []int32
	// The units' partitions (unit u's from uPartAt[u]).
	uPartAt []int32
	uPart   []int32
	// Per row and survivor the broker pair's room before sb; per survivor
	// the rack column's before the cap.
	bBase []int32
	rBase []int32
	// deg counts, per row and survivor, the movable partitions that may
	// go to it (cut).
	deg []int32

	net jointNet
	// n-sized scratch (cnt, fcnt zero between uses) and the classes of a
	// row by follower pair (n*n).
	cnt, fcnt, node, stamp, bStamp []int32
	class                          []int32
}

// jointNet is one built network: the units lo..hi-1, through the rack
// columns (rack) or straight to the sink.
type jointNet struct {
	g         flowNet
	lo, hi    int32
	total     int     // the partitions the units carry
	rack      bool    // through the rack columns
	src       []int32 // per unit: its source edge
	uE        []int32 // per unit and follower (uFolAt - uFolAt[lo]): its edge on
	tE, tRow  []int32 // per topic pair node: its edge on, its row
	tBase     []int32
	bE, bBase []int32 // per broker pair: its edge on, room before sb
	rE, rBase []int32 // per rack column: its edge to the sink, room before the cap
}

// rack solves rack r's rows; hi is the highest rack cap allowed.
func (js *jointScratch) rack(r int, rowMax []int32, hi int32) {
	f := js.f
	w, n := f.w, f.n
	if !js.prepare(r) {
		return
	}
	lo := f.optR[r]
	for b := range n {
		if w.target[b] && int(w.rack[b]) != r {
			lo = max(lo, f.gc[b])
		}
	}
	if hi < lo {
		return
	}
	over := int32(0)
	for _, b := range js.rows {
		over = max(over, rowMax[b]-f.rowE[b])
	}
	// The least sb a cut allows (the topics aside), then each row alone
	// from there: the least sb with its topics within one of their figures
	// (sb1), within two (sb2, only where sb1 is above the start); over
	// when neither reaches below.
	sb := int32(0)
	for sb < over && !js.cut(sb, hi) {
		sb++
	}
	if sb >= over {
		return
	}
	nr := len(js.rows)
	sb1, sb2 := make([]int32, nr), make([]int32, nr)
	st := make([]int32, nr)
	start := sb
	for ri := range nr {
		js.net.build(js, js.unitAt[ri], js.unitAt[ri+1], false)
		st[ri] = 1
		sb1[ri] = js.net.least(js, start, over, st, 0)
		sb2[ri] = sb1[ri]
		if sb1[ri] > start {
			st[ri] = 2
			sb2[ri] = js.net.least(js, start, sb1[ri], st, 0)
		}
		sb = max(sb, min(sb1[ri], sb2[ri]))
	}
	// slack sets each row's topic slack at sb: one where the row reaches
	// sb with it, else two.
	slack := func(sb int32) {
		for ri := range nr {
			st[ri] = 1
			if sb < sb1[ri] {
				st[ri] = 2
			}
		}
	}
	if sb >= over {
		return
	}
	js.net.build(js, 0, int32(len(js.uCap)), true)
	// The least sb the rack cap hi allows (the topic slacks change where
	// a row's sb1 is passed: the flow then starts again).
	for {
		slack(sb)
		next := over
		for ri := range nr {
			if sb1[ri] > sb {
				next = min(next, sb1[ri])
			}
		}
		sb = js.net.least(js, sb, next, st, hi)
		if sb < next || sb >= over {
			break
		}
	}
	if sb >= over {
		return
	}
	js.apply()
}

// cut is whether a cut lets the flow carry every partition at sb and rack
// cap R: survivor y takes at most the rack column's room, and at most,
// from each row, the broker pair's room or the row's partitions that may
// go to y. Failing it proves sb infeasible; the flow starts from the
// least sb that passes (on the scattered layouts, the answer itself).
func (js *jointScratch) cut(sb, R int32) bool {
	n := js.f.n
	sum := 0
	for y := range n {
		in := int32(0)
		for ri := range js.rows {
			k := ri*n + y
			in += min(max(js.bBase[k]+sb, 0), js.deg[k])
		}
		sum += int(min(in, max(js.rBase[y]+R, 0)))
	}
	return sum >= len(js.uPart)
}

// prepare gathers rack r's units and rooms; false when there are none.
func (js *jointScratch) prepare(r int) bool {
	f := js.f
	w, n := f.w, f.n
	js.r = r
	js.rows, js.unitAt = js.rows[:0], js.unitAt[:0]
	js.uCap, js.uGrp, js.uFolAt, js.uFol, js.uOn, js.uTB = js.uCap[:0], js.uGrp[:0], js.uFolAt[:0], js.uFol[:0], js.uOn[:0], js.uTB[:0]
	js.bBase, js.deg = js.bBase[:0], js.deg[:0]
	cnt, fcnt := js.cnt, js.fcnt
	var unitOf []int32 // per movable partition in order: its unit
	var parts []int32
	ng := int32(0)
	for b := range n {
		if !w.target[b] || int(w.rack[b]) != r {
			continue
		}
		js.rows = append(js.rows, int32(b))
		js.unitAt = append(js.unitAt, int32(len(js.uCap)))
		rowFirst := int32(len(js.uCap))
		grp := js.byLead[b]
		for a := 0; a < len(grp); {
			t := int(w.ptopic[grp[a]])
			e := a
			for e < len(grp) && int(w.ptopic[grp[e]]) == t {
				e++
			}
			c, _ := f.topicCap(b, t, grp[a:e], true, js.tsc)
			c -= topicSlack
			// Fixed partitions of the pair per follower (cnt), the
			// movable ones' followers (fcnt): the pair binds when its
			// room at the least slack is below the movable ones that may
			// go there.
			for _, i := range grp[a:e] {
				if js.movable(i) {
					for s := w.off[i]; s < w.off[i+1]; s++ {
						if y := w.slots[s]; y != w.lead[i] {
							fcnt[y]++
						}
					}
				} else {
					cnt[f.fst[i]]++
				}
			}
			binds := false
			for _, i := range grp[a:e] {
				for s := w.off[i]; s < w.off[i+1]; s++ {
					if y := w.slots[s]; y != w.lead[i] && c+1-w.lc[t*n+int(y)]-cnt[y] < fcnt[y] {
						binds = true
					}
				}
			}
			for _, i := range grp[a:e] {
				if !js.movable(i) {
					continue
				}
				parts = append(parts, i)
				if !binds && w.off[i+1]-w.off[i] == 3 {
					y1, y2 := js.followers(i)
					key := int(y1)*n + int(y2)
					u := js.class[key]
					if u < rowFirst || u >= int32(len(js.uCap)) || js.uGrp[u] >= 0 || js.uFol[js.uFolAt[u]] != y1 || js.uFol[js.uFolAt[u]+1] != y2 {
						u = int32(len(js.uCap))
						js.class[key] = u
						js.uCap = append(js.uCap, 0)
						js.uGrp = append(js.uGrp, -1)
						js.uFolAt = append(js.uFolAt, int32(len(js.uFol)))
						js.uFol = append(js.uFol, y1, y2)
						js.uOn = append(js.uOn, 0, 0)
						js.uTB = append(js.uTB, 0, 0)
					}
					js.uCap[u]++
					if f.fst[i] == y1 {
						js.uOn[js.uFolAt[u]]++
					} else {
						js.uOn[js.uFolAt[u]+1]++
					}
					unitOf = append(unitOf, u)
					continue
				}
				u := int32(len(js.uCap))
				js.uCap = append(js.uCap, 1)
				js.uGrp = append(js.uGrp, ng)
				js.uFolAt = append(js.uFolAt, int32(len(js.uFol)))
				for s := w.off[i]; s < w.off[i+1]; s++ {
					if y := w.slots[s]; y != w.lead[i] {
						js.uFol = append(js.uFol, y)
						on := int32(0)
						if y == f.fst[i] {
							on = 1
						}
						js.uOn = append(js.uOn, on)
						js.uTB = append(js.uTB, c-w.lc[t*n+int(y)]-cnt[y])
					}
				}
				unitOf = append(unitOf, u)
			}
			for _, i := range grp[a:e] {
				for s := w.off[i]; s < w.off[i+1]; s++ {
					fcnt[w.slots[s]] = 0
				}
				if !js.movable(i) {
					cnt[f.fst[i]] = 0
				}
			}
			ng++
			a = e
		}
		// The row's room: its figure less each survivor's leaders and
		// the row's fixed partitions on it.
		for _, i := range grp {
			if !js.movable(i) {
				cnt[f.fst[i]]++
			}
		}
		for y := range n {
			js.bBase = append(js.bBase, f.rowE[b]-f.gc[y]-cnt[y])
		}
		clear(cnt)
		for _, i := range grp {
			if js.movable(i) {
				for s := w.off[i]; s < w.off[i+1]; s++ {
					if y := w.slots[s]; y != w.lead[i] {
						cnt[y]++
					}
				}
			}
		}
		js.deg = append(js.deg, cnt...)
		clear(cnt)
	}
	nu := len(js.uCap)
	js.unitAt = append(js.unitAt, int32(nu))
	js.uFolAt = append(js.uFolAt, int32(len(js.uFol)))
	if nu == 0 {
		return false
	}
	// The units' partitions, grouped by unit (a counting sort).
	js.uPartAt = append(js.uPartAt[:0], make([]int32, nu+1)...)
	for _, u := range unitOf {
		js.uPartAt[u+1]++
	}
	for u := range nu {
		js.uPartAt[u+1] += js.uPartAt[u]
	}
	js.uPart = append(js.uPart[:0], make([]int32, len(parts))...)
	fill := slices.Clone(js.uPartAt[:nu])
	for x, u := range unitOf {
		js.uPart[fill[u]] = parts[x]
		fill[u]++
	}
	// The rack column's room: less each survivor's leaders and the fixed
	// partitions (G counts every partition; the movable ones are taken
	// off).
	js.rBase = js.rBase[:0]
	for y := range n {
		cnt[y] = f.G[r*n+y]
	}
	for _, i := range parts {
		cnt[f.fst[i]]--
	}
	for y := range n {
		js.rBase = append(js.rBase, -f.gc[y]-cnt[y])
	}
	clear(cnt)
	return true
}

// followers returns RF-3 partition i's two followers, lower first.
func (js *jointScratch) followers(i int32) (int32, int32) {
	w := js.f.w
	y := [2]int32{}
	k := 0
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if b := w.slots[s]; b != w.lead[i] {
			y[k] = b
			k++
		}
	}
	return min(y[0], y[1]), max(y[0], y[1])
}

// movable is whether partition i takes part in the flow: it has a choice
// and every follower is outside its leader's rack.
func (js *jointScratch) movable(i int32) bool {
	w := js.f.w
	if w.off[i+1]-w.off[i] <= 2 {
		return false
	}
	lr := w.rack[w.lead[i]]
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if b := w.slots[s]; b != w.lead[i] && w.rack[b] == lr {
			return false
		}
	}
	return true
}

// build lays out the network of units lo..hi-1 (whole rows), through the
// rack columns when rack; solve sets its capacities. Edges are added in
// layers (source, units, topic pairs, broker pairs, columns), so each
// pair's and column's last edge (its head) is the one onward.
func (nt *jointNet) build(js *jointScratch, lo, hi int32, rack bool) {
	n := int32(js.f.n)
	nt.lo, nt.hi, nt.rack = lo, hi, rack
	nt.tE, nt.tRow, nt.tBase = nt.tE[:0], nt.tRow[:0], nt.tBase[:0]
	nt.bE, nt.bBase = nt.bE[:0], nt.bBase[:0]
	nt.rE, nt.rBase = nt.rE[:0], nt.rBase[:0]
	nt.src, nt.uE = nt.src[:0], nt.uE[:0]
	nt.total = 0
	const src, snk = 0, 1
	next := 2 + hi - lo
	stamp, node, bStamp, bIdx := js.stamp, js.node, js.bStamp, js.cnt
	for y := range n {
		stamp[y], bStamp[y] = -1, -1
	}
	var uTo []int32 // per unit follower: the node its edge reaches
	// Per topic pair: its node, its broker pair; per broker pair: its
	// node, its survivor.
	var tNode, tTo, bNode, bCol []int32
	row := int32(0)
	for row+1 < int32(len(js.rows)) && js.unitAt[row+1] <= lo {
		row++
	}
	for u := lo; u < hi; u++ {
		for row+1 < int32(len(js.rows)) && js.unitAt[row+1] <= u {
			row++
		}
		nt.total += int(js.uCap[u])
		g := js.uGrp[u]
		for x := js.uFolAt[u]; x < js.uFolAt[u+1]; x++ {
			y := js.uFol[x]
			if bStamp[y] != row {
				bStamp[y] = row
				bIdx[y] = int32(len(bNode))
				nt.bBase = append(nt.bBase, js.bBase[int(row)*int(n)+int(y)])
				bNode = append(bNode, next)
				bCol = append(bCol, y)
				next++
			}
			if g < 0 {
				uTo = append(uTo, bNode[bIdx[y]])
				continue
			}
			if stamp[y] != g {
				stamp[y] = g
				node[y] = next
				next++
				tNode = append(tNode, node[y])
				tTo = append(tTo, bIdx[y])
				nt.tRow = append(nt.tRow, row)
				nt.tBase = append(nt.tBase, js.uTB[x])
			}
			uTo = append(uTo, node[y])
		}
	}
	clear(bIdx)
	col := js.fcnt // per survivor: its column node + 1 (0: none); zero after
	if rack {
		for _, y := range bCol {
			if col[y] == 0 {
				col[y] = next + 1
				next++
			}
		}
	}
	g := &nt.g
	g.reset(int(next))
	for u := lo; u < hi; u++ {
		nt.src = append(nt.src, g.add(src, 2+u-lo, 0))
	}
	base := js.uFolAt[lo]
	for u := lo; u < hi; u++ {
		for x := js.uFolAt[u]; x < js.uFolAt[u+1]; x++ {
			nt.uE = append(nt.uE, g.add(2+u-lo, uTo[x-base], 0))
		}
	}
	for x, v := range tNode {
		nt.tE = append(nt.tE, g.add(v, bNode[tTo[x]], 0))
	}
	for x, v := range bNode {
		to := int32(snk)
		if rack {
			to = col[bCol[x]] - 1
		}
		nt.bE = append(nt.bE, g.add(v, to, 0))
	}
	if rack {
		for y := range n {
			if col[y] > 0 {
				nt.rE = append(nt.rE, g.add(col[y]-1, snk, 0))
				nt.rBase = append(nt.rBase, js.rBase[y])
			}
		}
	}
	clear(col)
}

// solve sets the capacities (broker pairs at their row's figure + sb,
// topic pairs at theirs + their row's st, rack columns at rackCap),
// starts from the present order where it fits, and reports whether the
// maximum flow carries every partition.
func (nt *jointNet) solve(js *jointScratch, sb int32, st []int32, rackCap int32) bool {
	g := &nt.g
	clear(g.res)
	for x, e := range nt.src {
		g.res[e] = js.uCap[nt.lo+int32(x)]
	}
	base := js.uFolAt[nt.lo]
	for u := nt.lo; u < nt.hi; u++ {
		for x := js.uFolAt[u]; x < js.uFolAt[u+1]; x++ {
			g.res[nt.uE[x-base]] = js.uCap[u]
		}
	}
	for x, e := range nt.tE {
		g.res[e] = max(nt.tBase[x]+st[nt.tRow[x]], 0)
	}
	for x, e := range nt.bE {
		g.res[e] = max(nt.bBase[x]+sb, 0)
	}
	for x, e := range nt.rE {
		g.res[e] = max(nt.rBase[x]+rackCap, 0)
	}
	// The present order where every edge on its way has room.
	carried := 0
	var path [5]int32
	for u := nt.lo; u < nt.hi; u++ {
		for x := js.uFolAt[u]; x < js.uFolAt[u+1]; x++ {
			on := js.uOn[x]
			if on == 0 {
				continue
			}
			path[0] = nt.src[u-nt.lo]
			path[1] = nt.uE[x-base]
			k := 2
			for v := g.to[path[1]]; v != 1; v = g.to[path[k-1]] {
				path[k] = g.head[v]
				k++
			}
			for _, e := range path[:k] {
				on = min(on, g.res[e])
			}
			for _, e := range path[:k] {
				g.push(e, on)
			}
			carried += int(on)
		}
	}
	carried += g.augment(0, 1)
	return carried == nt.total
}

// least returns the least sb in from..to-1 at which the flow carries every
// partition with these topic slacks and rack cap, or to when none: it
// solves at from, then raises every broker pair's capacity by one and
// augments the flow it has, until it is whole.
func (nt *jointNet) least(js *jointScratch, from, to int32, st []int32, rackCap int32) int32 {
	if from >= to {
		return to
	}
	if nt.solve(js, from, st, rackCap) {
		return from
	}
	carried := 0
	for _, e := range nt.src {
		carried += int(nt.g.flowOn(e))
	}
	for sb := from + 1; sb < to; sb++ {
		for x, e := range nt.bE {
			if nt.bBase[x]+sb > 0 { // the capacity was clamped at 0 below
				nt.g.raise(e, 1)
			}
		}
		carried += nt.g.augment(0, 1)
		if carried == nt.total {
			return sb
		}
	}
	return to
}

// apply writes the flow of the last solve as the first followers: each
// unit's partitions keep their follower while the flow leaves it as many,
// the others take the followers left.
func (js *jointScratch) apply() {
	f, nt := js.f, &js.net
	base := js.uFolAt[nt.lo]
	var rem [8]int32
	for u := nt.lo; u < nt.hi; u++ {
		fa, fb := js.uFolAt[u], js.uFolAt[u+1]
		if fb-fa > int32(len(rem)) {
			continue // RF above 9: left as it is
		}
		for x := fa; x < fb; x++ {
			rem[x-fa] = nt.g.flowOn(nt.uE[x-base])
		}
		parts := js.uPart[js.uPartAt[u]:js.uPartAt[u+1]]
		moved := parts[:0:0]
		for _, i := range parts {
			kept := false
			for x := fa; x < fb; x++ {
				if js.uFol[x] == f.fst[i] && rem[x-fa] > 0 {
					rem[x-fa]--
					kept = true
					break
				}
			}
			if !kept {
				moved = append(moved, i)
			}
		}
		for _, i := range moved {
			for x := fa; x < fb; x++ {
				if rem[x-fa] > 0 {
					rem[x-fa]--
					f.addGlobal(int(i), f.fst[i], -1)
					f.fst[i] = js.uFol[x]
					f.addGlobal(int(i), js.uFol[x], 1)
					break
				}
			}
		}
	}
}
