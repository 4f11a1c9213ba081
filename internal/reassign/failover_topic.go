package reassign

import (
	"math"
	"slices"
)

// topicExact is the last exact pass of the failover phase: it brings each
// topic's row of each broker loss within one of the topic's own exact
// figure (the summary's TopicOverReachable), keeping every broker row and
// every rack row within its maximum where it can (then one above).
//
// The loss of broker b hands b's partitions to their first followers. A
// survivor j then leads gc[j] + S[b][j] partitions overall and, of topic
// t, lc[t][j] + ST[b][t][j]. Row b with both limits (overall at most C,
// topic t at most capT[t]) is a flow with nested capacities: each
// partition to the (topic, follower) pairs it may go to, each pair to its
// broker (capT[t] - lc[t][j]), each broker to the sink (C - gc[j]). The
// pass takes every partition above its pair's cap off its follower (the
// flow less its excess) and places each back by an augmenting path in
// that network: a breadth-first search whose states are pairs and
// brokers; the partition goes to one of its followers k, reaching the
// pair (t, k); a pair with room reaches its broker k, a full one moves on
// by another partition of t on k; a broker with room ends the path, a
// full one moves on by any of the partitions on it. Inner pairs and
// brokers keep their counts, so only the end gains one in the broker row:
// it must stay within the row's maximum C. A hop lowers the rack row of
// the partition's rack successor before it and raises the one after it
// (the same broker when the first follower is outside the leader's rack,
// as with RF 3 over 3 racks: then the rack row changes at the end only);
// each rise must stay within the rack row's maximum where it lands (see
// topicPath), and a row whose rack row ends above it anyway (a broker
// crossed twice) is restored. When one partition finds no place, the row is
// restored and its pairs are lowered one path at a time from the busiest
// (lowerTopic), as far as paths go. The topic caps are the topic's exact
// figure plus one (minMaxAssign over the topic's partitions of the row,
// each follower starting from its own leaders of the topic, and never
// below another holder's own leaders), or the averaging bound plus one
// when the check finds the topic within it. When no path keeps C and the
// rack rows' maxima, one more leader on the rack row, then on the row's
// busiest survivor, is allowed (the broker loss stays within one of its
// exact figure).
//
// Each path costs O(partitions of the row × RF); rows whose topics are
// all within their bounds cost one scan, topic by topic.

// topicSlack is how far above its exact figure topicExact lets a topic's
// row stay, and how far above its maximum at the start a broker row may
// rise for it.
const topicSlack = 1

// topicLevels are the slacks topicExact's paths get in turn: above the
// broker row's maximum at the start, and above the rack row's.
var topicLevels = [][2]int32{{0, 0}, {0, 1}, {1, 1}}

// topicScratch is topicExact's scratch, sized to the brokers once.
type topicScratch struct {
	local  []int32 // topic -> its index in the row (-1: none)
	topics []int32 // the row's topics, in group order
	seg    []int32 // per local topic: its first position in the group; one more at the end
	capT   []int32 // per local topic: the cap of its pairs
	tl     []int32 // local*n + j: the row's successors of that topic on j
	byAt   [][]int32
	seenP  []bool
	parP   []int32 // per pair: the state it was reached from
	arrP   []bool  // per pair: whether the hop that reached it raised its broker's rack row
	itemP  []int32 // per pair: the group position of the partition that reached it
	seenB  []bool
	parB   []int32 // per broker: the pair it was reached from
	seenI  []bool
	out    []bool // per group position: off every broker (lowerAll)
	queue  []int32
	seenPs []int32 // pairs to reset
	// minMaxAssign's input.
	mm    *mmScratch
	load  []int
	cand  [][]int32
	at    []int32
	flat  []int32
	kset  []int32
	kmark []bool
}

func (f *foState) newTopicScratch() *topicScratch {
	n := f.n
	sc := &topicScratch{local: make([]int32, len(f.w.tname)), byAt: make([][]int32, n), seenB: make([]bool, n), parB: make([]int32, n),
		mm: newMMScratch(n), load: make([]int, n), kmark: make([]bool, n)}
	for t := range sc.local {
		sc.local[t] = -1
	}
	return sc
}

// topicExact runs the pass: it finds the rows with a topic above its cap
// topic by topic (each topic's partitions and leaders are contiguous, so
// the check reads memory in order), then lowers those rows.
func (f *foState) topicExact() {
	w, n := f.w, f.n
	sc := f.newTopicScratch()
	rowOver := make([]bool, n)
	found := false
	byB := make([]int32, n) // per leader: its partitions' count, then next position
	var idx, leaders []int32
	for t := range w.tname {
		lo, hi := int(w.tstart[t]), int(w.tstart[t+1])
		// The topic's partitions with a follower, by leader (a counting
		// sort).
		leaders = leaders[:0]
		k := 0
		for i := lo; i < hi; i++ {
			if f.fst[i] >= 0 {
				b := w.lead[i]
				if byB[b] == 0 {
					leaders = append(leaders, b)
				}
				byB[b]++
				k++
			}
		}
		idx = slices.Grow(idx[:0], k)[:k]
		pos := int32(0)
		for _, b := range leaders {
			c := byB[b]
			byB[b] = pos
			pos += c
		}
		for i := lo; i < hi; i++ {
			if f.fst[i] >= 0 {
				b := w.lead[i]
				idx[byB[b]] = int32(i)
				byB[b]++
			}
		}
		start := int32(0)
		for _, b := range leaders {
			seg := idx[start:byB[b]]
			start = byB[b]
			byB[b] = 0
			if !rowOver[b] && w.target[b] {
				if _, over := f.topicCap(int(b), t, seg, false, sc); over {
					rowOver[b], found = true, true
				}
			}
		}
	}
	if !found {
		return
	}
	byLead := make([][]int32, n)
	for i := range len(w.c.Partitions) {
		if b := w.lead[i]; f.fst[i] >= 0 && rowOver[b] {
			byLead[b] = append(byLead[b], int32(i))
		}
	}
	rowMax := f.rowMaxima()
	rackMax := f.rackMaxima()
	for b := range n {
		if rowOver[b] {
			f.topicExactRow(b, byLead[b], rowMax[b], rackMax, sc)
		}
	}
}

// topicCap returns the cap of topic t's pairs in row b (seg: t's
// partitions led by b with a follower) and whether the busiest follower
// is above it. The cap is the topic's exact figure plus the slack: the
// larger of the least busiest follower any order allows (topicFigure) and
// the most leaders of t on any other broker holding it (no order lowers
// them; the summary's figure counts them too). While the busiest follower
// is within the averaging bound plus the slack, that bound stands in for
// the figure (it is never above it), unless exact asks for the figure.
func (f *foState) topicCap(b, t int, seg []int32, exact bool, sc *topicScratch) (int32, bool) {
	w, n := f.w, f.n
	lc := w.lc[t*n : (t+1)*n]
	cnt := sc.load // n-sized scratch, zero between uses
	sc.kset = sc.kset[:0]
	sum, still := 0, int32(0)
	for _, i := range seg {
		cnt[f.fst[i]]++
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if j := w.slots[s]; int(j) != b && !sc.kmark[j] {
				sc.kmark[j] = true
				sc.kset = append(sc.kset, j)
				sum += int(lc[j])
				still = max(still, lc[j])
			}
		}
	}
	m := int32(0)
	for _, j := range sc.kset {
		m = max(m, lc[j]+int32(cnt[j]))
	}
	bnd := max(still, int32(ceilDiv(sum+len(seg), len(sc.kset))))
	c := bnd + topicSlack
	if m > c || exact {
		fig := f.topicFigure(b, t, seg, cnt, sc)
		tc := w.tc[t*n : (t+1)*n]
		for j := range n {
			if j != b && tc[j] > 0 {
				fig = max(fig, lc[j])
			}
		}
		c = max(c, fig+topicSlack)
	}
	for _, j := range sc.kset {
		sc.kmark[j] = false
		cnt[j] = 0
	}
	return c, m > c
}

// movable is whether partition i's first follower may change in the
// topic pass: it has a choice.
func (f *foState) movable(i int32) bool {
	w := f.w
	return w.off[i+1]-w.off[i] > 2
}

// pathLimits are the checks a topic path's brokers must pass: rowOK(k)
// whether k may lead one more in the broker row, rackOK(k) in the rack
// row.
type pathLimits struct {
	rowOK, rackOK func(k int32) bool
}

// limits returns row b's path limits with the row capped at rowCap and
// the rack row at rackCap (and rackCeil).
func (f *foState) limits(b int, rowCap, rackCap int32) pathLimits {
	n := f.n
	r := 0
	if f.rack {
		r = int(f.w.rack[b])
	}
	return pathLimits{
		rowOK: func(k int32) bool { return f.gc[k]+f.S[b*n+int(k)]+1 <= rowCap },
		rackOK: func(k int32) bool {
			return !f.rack || f.gc[k]+f.G[r*n+int(k)]+1 <= rackCap && f.underCeil(r, k)
		},
	}
}

// topicExactRow lowers row b's topic pairs above their caps (group: b's
// partitions with a follower, in partition order, so each topic's are
// contiguous); rowMax is the row's busiest survivor, rackMax each rack
// row's.
func (f *foState) topicExactRow(b int, group []int32, rowMax int32, rackMax []int32, sc *topicScratch) {
	w, n := f.w, f.n
	// The row's topics and their caps.
	sc.topics, sc.seg = sc.topics[:0], sc.seg[:0]
	for g, i := range group {
		if t := w.ptopic[i]; len(sc.topics) == 0 || sc.topics[len(sc.topics)-1] != t {
			sc.topics = append(sc.topics, t)
			sc.seg = append(sc.seg, int32(g))
		}
	}
	sc.seg = append(sc.seg, int32(len(group)))
	nt := len(sc.topics)
	sc.capT = slices.Grow(sc.capT[:0], nt)[:nt]
	over := false
	for lt := range nt {
		c, o := f.topicCap(b, int(sc.topics[lt]), group[sc.seg[lt]:sc.seg[lt+1]], true, sc)
		sc.capT[lt] = c
		over = over || o
	}
	if !over {
		return
	}
	// The row's pair counts and the movable partitions per broker.
	for lt, t := range sc.topics {
		sc.local[t] = int32(lt)
	}
	sc.tl = slices.Grow(sc.tl[:0], nt*n)[:nt*n]
	clear(sc.tl)
	if len(sc.seenP) < nt*n {
		sc.seenP = make([]bool, nt*n)
		sc.parP = make([]int32, nt*n)
		sc.arrP = make([]bool, nt*n)
		sc.itemP = make([]int32, nt*n)
	}
	sc.seenI = slices.Grow(sc.seenI[:0], len(group))[:len(group)]
	clear(sc.seenI)
	sc.out = slices.Grow(sc.out[:0], len(group))[:len(group)]
	clear(sc.out)
	f.rowCounts(group, sc)
	// All the excess at once; when some of it finds no place, the row
	// as it was and one pair at a time.
	r := 0
	if f.rack {
		r = int(w.rack[b])
	}
	fst := make([]int32, len(group))
	for g, i := range group {
		fst[g] = f.fst[i]
	}
	rowS := slices.Clone(f.S[b*n : (b+1)*n])
	var rackG []int32
	if f.rack {
		rackG = slices.Clone(f.G[r*n : (r+1)*n])
	}
	restore := func() {
		for g, i := range group {
			f.fst[i] = fst[g]
		}
		copy(f.S[b*n:(b+1)*n], rowS)
		if f.rack {
			copy(f.G[r*n:(r+1)*n], rackG)
		}
	}
	if !f.lowerAll(b, group, rowMax, rackMax, sc) {
		restore()
		clear(sc.out)
		f.rowCounts(group, sc)
		for _, lv := range topicLevels {
			for lt := range nt {
				f.lowerTopic(b, group, lt, rowMax+lv[0], rackMax, lv[1], sc)
			}
		}
	}
	// The paths check each rise of a rack row as it comes; one broker
	// crossed twice by a path could rise twice: the row as it was then.
	if !f.rowWithin(b, rowS, rackG, rowMax+topicLevels[len(topicLevels)-1][0], rackMax, topicLevels[len(topicLevels)-1][1]) {
		restore()
	}
	for _, t := range sc.topics {
		sc.local[t] = -1
	}
}

// rowWithin reports whether row b (and its rack row) stays within the
// caps the paths had, or at most where it was (rowS, rackG).
func (f *foState) rowWithin(b int, rowS, rackG []int32, rowCap int32, rackMax []int32, rackSlack int32) bool {
	w, n := f.w, f.n
	for j := range n {
		if v := f.gc[j] + f.S[b*n+j]; j != b && w.target[j] && v > max(rowCap, f.gc[j]+rowS[j]) {
			return false
		}
	}
	if !f.rack {
		return true
	}
	r := int(w.rack[b])
	limit := rackMax[r] + rackSlack
	if f.rackCeil != nil {
		limit = min(limit, f.rackCeil[r])
	}
	for j := range n {
		if v := f.gc[j] + f.G[r*n+j]; w.target[j] && int(w.rack[j]) != r && v > max(limit, f.gc[j]+rackG[j]) {
			return false
		}
	}
	return true
}

// rowCounts fills the row's pair counts (sc.tl) and its movable
// partitions per broker (sc.byAt) from the first followers.
func (f *foState) rowCounts(group []int32, sc *topicScratch) {
	w, n := f.w, f.n
	clear(sc.tl)
	for j := range sc.byAt {
		sc.byAt[j] = sc.byAt[j][:0]
	}
	for g, i := range group {
		sc.tl[int(sc.local[w.ptopic[i]])*n+int(f.fst[i])]++
		if f.movable(i) {
			sc.byAt[f.fst[i]] = append(sc.byAt[f.fst[i]], int32(g))
		}
	}
}

// lowerAll takes every partition above its pair's cap off its follower
// (the flow less its excess), then places each by an augmenting path
// from it, with the slacks of topicLevels in turn. It reports whether
// every one found a place (if not, the caller restores the row).
func (f *foState) lowerAll(b int, group []int32, rowMax int32, rackMax []int32, sc *topicScratch) bool {
	w, n := f.w, f.n
	var out []int32
	for lt := range sc.topics {
		t := int(sc.topics[lt])
		for g := sc.seg[lt]; g < sc.seg[lt+1]; g++ {
			i := group[g]
			if x := f.fst[i]; f.movable(i) && w.lc[t*n+int(x)]+sc.tl[lt*n+int(x)] > sc.capT[lt] {
				f.unassign(group, g, sc)
				out = append(out, g)
			}
		}
	}
	rackCap := int32(0)
	if f.rack {
		rackCap = rackMax[w.rack[b]]
	}
	pairLoad := func(p int32) int32 {
		return w.lc[int(sc.topics[int(p)/n])*n+int(p)%n] + sc.tl[p]
	}
	for _, lv := range topicLevels {
		lim := f.limits(b, rowMax+lv[0], rackCap+lv[1])
		left := out[:0]
		for _, g := range out {
			end := f.topicPath(b, group, fromItem, -1, g, pairLoad, lim, sc)
			if end < 0 {
				left = append(left, g)
				continue
			}
			f.topicWalk(group, fromItem, end, sc)
		}
		out = left
		if len(out) == 0 {
			return true
		}
	}
	return false
}

// topicFigure is the exact figure of topic t in row b: the least busiest
// follower over every order of seg's partitions (minMaxAssign), each
// follower starting from its own leaders of t. cnt holds seg's successor
// counts and sc.kset its followers; neither changes.
func (f *foState) topicFigure(b, t int, seg []int32, cnt []int, sc *topicScratch) int32 {
	w, n := f.w, f.n
	lc := w.lc[t*n : (t+1)*n]
	load := make([]int, n)
	for _, j := range sc.kset {
		load[j] = int(lc[j]) + cnt[j]
	}
	sc.cand, sc.at, sc.flat = sc.cand[:0], sc.at[:0], sc.flat[:0]
	for _, i := range seg {
		sc.at = append(sc.at, f.fst[i])
		a := len(sc.flat)
		for s := w.off[i]; s < w.off[i+1]; s++ {
			if j := w.slots[s]; int(j) != b {
				sc.flat = append(sc.flat, j)
			}
		}
		sc.cand = append(sc.cand, sc.flat[a:len(sc.flat):len(sc.flat)])
	}
	return int32(minMaxAssign(sc.mm, load, sc.kset, sc.cand, sc.at))
}

// lowerTopic lowers local topic lt's pairs of row b above its cap, each by
// one augmenting path (see topicExact), with the row's brokers capped at
// rowCap.
func (f *foState) lowerTopic(b int, group []int32, lt int, rowCap int32, rackMax []int32, rackSlack int32, sc *topicScratch) {
	w, n := f.w, f.n
	t := int(sc.topics[lt])
	lc := w.lc[t*n : (t+1)*n]
	seg := group[sc.seg[lt]:sc.seg[lt+1]]
	rackCap := int32(0)
	if f.rack {
		rackCap = rackMax[w.rack[b]] + rackSlack
	}
	pairLoad := func(p int32) int32 {
		return w.lc[int(sc.topics[int(p)/n])*n+int(p)%n] + sc.tl[p]
	}
	lim := f.limits(b, rowCap, rackCap)
	for guard := len(seg); guard > 0; guard-- {
		j0 := int32(-1)
		for _, i := range seg {
			if j := f.fst[i]; j0 < 0 || lc[j]+sc.tl[lt*n+int(j)] > lc[j0]+sc.tl[lt*n+int(j0)] {
				j0 = j
			}
		}
		if j0 < 0 || lc[j0]+sc.tl[lt*n+int(j0)] <= sc.capT[lt] {
			return
		}
		end := f.topicPath(b, group, int32(lt*n)+j0, j0, -1, pairLoad, lim, sc)
		if end < 0 {
			return
		}
		f.topicWalk(group, int32(lt*n)+j0, end, sc)
	}
}

// fromItem is topicPath's start state when it starts from a partition
// that is on no broker (lowerAll).
const fromItem = math.MinInt32

// topicPath searches an augmenting path and returns the broker that ends
// it, or -1; topicWalk applies it. It starts from pair s0 (on broker j0,
// which the path does not cross) or, with s0 = fromItem, from the
// partition at group position g0, on no broker. States: p >= 0 the pair
// p = local*n + j, p < 0 the broker -(1+p).
func (f *foState) topicPath(b int, group []int32, s0, j0, g0 int32, pairLoad func(int32) int32, lim pathLimits, sc *topicScratch) int32 {
	w, n := f.w, f.n
	reset := func() {
		for _, p := range sc.seenPs {
			sc.seenP[p] = false
		}
		sc.seenPs = sc.seenPs[:0]
		for j := range sc.seenB {
			sc.seenB[j] = false
		}
		clear(sc.seenI)
	}
	// visit hands the partition at g, on x (-1: none), reached from state
	// s, to its other followers; it returns the end of the path, or -1.
	// arr is whether the hop that reached x raised x's rack row. A hop
	// lowers the rack row of the partition's rack successor with x first
	// and raises the one with y first: the rise must fit unless it is y's
	// own (checked where the path leaves y, or ends there), and x keeps
	// its arrival's rise unless the hop lowers x.
	visit := func(g, x, s int32, arr bool) int32 {
		i := group[g]
		glt := sc.local[w.ptopic[i]]
		sc.seenI[g] = true
		ax := int32(-1)
		if f.rack && x >= 0 {
			ax = f.rackSucc(int(i), x)
		}
		for k := w.off[i]; k < w.off[i+1]; k++ {
			y := w.slots[k]
			if int(y) == b || y == x {
				continue
			}
			arrY := false
			if f.rack {
				ay := f.rackSucc(int(i), y)
				if arr && (ay == ax || ax != x) && !lim.rackOK(x) {
					continue
				}
				if ay != ax {
					if ay != y && !lim.rackOK(ay) {
						continue
					}
					arrY = ay == y
				}
			}
			p := glt*int32(n) + y
			if sc.seenP[p] {
				continue
			}
			sc.seenP[p] = true
			sc.seenPs = append(sc.seenPs, p)
			sc.parP[p], sc.itemP[p], sc.arrP[p] = s, g, arrY
			if pairLoad(p)+1 > sc.capT[glt] {
				sc.queue = append(sc.queue, p)
				continue
			}
			if sc.seenB[y] {
				continue
			}
			sc.seenB[y] = true
			sc.parB[y] = p
			if lim.rowOK(y) && (!arrY || lim.rackOK(y)) {
				return y
			}
			sc.queue = append(sc.queue, -(1 + y))
		}
		return -1
	}
	sc.queue = sc.queue[:0]
	if s0 == fromItem {
		if end := visit(g0, -1, fromItem, false); end >= 0 {
			reset()
			return end
		}
	} else {
		sc.seenP[s0] = true
		sc.seenPs = append(sc.seenPs, s0)
		sc.arrP[s0] = false
		sc.seenB[j0] = true
		sc.queue = append(sc.queue, s0)
	}
	for head := 0; head < len(sc.queue); head++ {
		s := sc.queue[head]
		var x int32
		lt := int32(-1)
		var arr bool
		if s >= 0 {
			x, lt = s%int32(n), s/int32(n)
			arr = sc.arrP[s]
		} else {
			x = -(1 + s)
			arr = sc.arrP[sc.parB[x]]
		}
		for _, g := range sc.byAt[x] {
			if sc.seenI[g] || lt >= 0 && sc.local[w.ptopic[group[g]]] != lt {
				continue
			}
			if end := visit(g, x, s, arr); end >= 0 {
				reset()
				return end
			}
		}
	}
	reset()
	return -1
}

// topicWalk applies the path topicPath found from s0 to broker end.
func (f *foState) topicWalk(group []int32, s0, end int32, sc *topicScratch) {
	w, n := f.w, int32(f.n)
	s := -(1 + end)
	for s != s0 {
		if s < 0 {
			s = sc.parB[-(1 + s)]
			continue
		}
		g := sc.itemP[s]
		i := group[g]
		x, y := f.fst[i], s%n
		lt := sc.local[w.ptopic[i]]
		if sc.out[g] {
			sc.out[g] = false
		} else {
			f.addGlobal(int(i), x, -1)
			sc.tl[lt*n+x]--
			sc.byAt[x] = slices.DeleteFunc(sc.byAt[x], func(v int32) bool { return v == g })
		}
		f.fst[i] = y
		f.addGlobal(int(i), y, 1)
		sc.tl[lt*n+y]++
		sc.byAt[y] = append(sc.byAt[y], g)
		s = sc.parP[s]
	}
}

// unassign takes the partition at group position g off its first
// follower: out of the counts until a path places it (lowerAll).
func (f *foState) unassign(group []int32, g int32, sc *topicScratch) {
	i := group[g]
	x := f.fst[i]
	f.addGlobal(int(i), x, -1)
	sc.tl[int(sc.local[f.w.ptopic[i]])*f.n+int(x)]--
	sc.byAt[x] = slices.DeleteFunc(sc.byAt[x], func(v int32) bool { return v == g })
	sc.out[g] = true
}
