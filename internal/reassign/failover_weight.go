package reassign

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// The weighted failover pass runs after the counted one when the plan has
// loads (Options.Loads, the --balance load plan): it weighs each partition
// by the client traffic its leader serves, produce plus consume bytes/s
// (what moves with a leadership when Kafka elects the next replica). After
// losing broker b, survivor j serves L[j] + W[b][j]: L its own leaders'
// load, W the load of b's partitions whose first follower is j. Each row
// b depends only on the first followers of b's own partitions, so the
// pass solves every row on its own, a min-max assignment of weighted items
// to the followers each may go to (restricted makespan, NP-hard in
// general): the longest item first onto the least loaded option, then
// moves and swaps off the busiest survivor while they lower it, started
// both from the counted order and from scratch; a row changes only when
// its busiest survivor's load strictly drops, so the counted order (and
// its per-topic spread) stays wherever weights do not call for another.
// With Options.Rates instead of loads, each partition weighs its topic's
// rate over its partitions (rates.go) and the pass runs the same way.
// Without loads or rates nothing runs and the plan is the counted one,
// unchanged.

// foWeightIters bounds the improving moves per row, per start.
const foWeightIters = 64

// skipWeightedFailover switches the weighted pass off (tests compare the
// counted order of the same plan against it).
var skipWeightedFailover bool

// failoverWeights is partition i's failover weight, or nil without loads.
func failoverWeights(c *topology.Cluster, loads map[topology.Key]Load) []float64 {
	if len(loads) == 0 {
		return nil
	}
	fw := make([]float64, len(c.Partitions))
	for i := range c.Partitions {
		l := loads[c.Partitions[i].Key()]
		fw[i] = l.Produce + l.Consume
	}
	return fw
}

// wRow is one broker row's scratch.
type wRow struct {
	items []int32   // b's partitions with a choice of first follower
	W     []float64 // per dense broker: load taken over on b's loss
	fixed []float64 // the part of W from b's partitions without a choice
	// G holds, with racks, the load each survivor takes over per lost
	// rack (nrack × n), and gCap the busiest survivor's load over every
	// rack loss before the pass: a row's new order must keep its rack's
	// row at or below it, so the worst rack loss never gets busier.
	G    []float64
	gCap float64
}

// weighted runs the weighted pass over f.fst.
func (f *foState) weighted() {
	w, n := f.w, f.n
	fw := w.ratedWeights()
	if fw == nil || !f.broker || skipWeightedFailover {
		return
	}
	np := len(w.c.Partitions)
	L := make([]float64, n)
	for i := range np {
		L[w.lead[i]] += fw[i]
	}
	byLead := make([][]int32, n)
	r := wRow{W: make([]float64, n), fixed: make([]float64, n)}
	if f.rack {
		r.G, r.gCap = f.weightedRackRows(L)
	}
	for i := range np {
		if f.fst[i] >= 0 {
			byLead[w.lead[i]] = append(byLead[w.lead[i]], int32(i))
		}
	}
	for b := range n {
		if !w.target[b] || len(byLead[b]) == 0 {
			continue
		}
		f.weightedRow(int32(b), byLead[b], L, &r)
	}
}

// rowMax is the busiest survivor's load of row b with taken-over loads W.
func (f *foState) rowMax(b int32, L, W []float64) (float64, int32) {
	best, at := -1.0, int32(-1)
	for j := range f.n {
		if int32(j) != b && f.w.target[j] {
			if v := L[j] + W[j]; v > best {
				best, at = v, int32(j)
			}
		}
	}
	return best, at
}

// weightedRow re-solves row b (its partitions ps) and writes the better of
// the counted order and the weighted search into f.fst.
func (f *foState) weightedRow(b int32, ps []int32, L []float64, r *wRow) {
	w, fw := f.w, f.w.fw
	clear(r.fixed)
	r.items = r.items[:0]
	for _, i := range ps {
		if w.off[i+1]-w.off[i] == 2 {
			r.fixed[f.fst[i]] += fw[i]
		} else {
			r.items = append(r.items, i)
		}
	}
	if len(r.items) == 0 {
		return
	}
	// The counted order, improved.
	cur := make([]int32, len(r.items))
	for k, i := range r.items {
		cur[k] = f.fst[i]
	}
	curMax := f.assignMax(b, L, r, cur)
	a := slices.Clone(cur)
	f.improve(b, L, r, a)
	// From scratch: the heaviest first onto the least loaded option.
	order := make([]int, len(r.items))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(fw[r.items[y]], fw[r.items[x]]) })
	lpt := make([]int32, len(r.items))
	copy(r.W, r.fixed)
	for _, k := range order {
		i := r.items[k]
		best, bv := int32(-1), math.Inf(1)
		for s := w.off[i]; s < w.off[i+1]; s++ {
			j := w.slots[s]
			if j == b {
				continue
			}
			if v := L[j] + r.W[j] + fw[i]; v < bv || v == bv && j == cur[k] {
				best, bv = j, v
			}
		}
		lpt[k] = best
		r.W[best] += fw[i]
	}
	f.improve(b, L, r, lpt)
	am, lm := f.assignMax(b, L, r, a), f.assignMax(b, L, r, lpt)
	pick := a
	if lm < am {
		pick, am = lpt, lm
	}
	if am < curMax*(1-1e-12) && f.rackKeeps(b, L, r, cur, pick) {
		for k, i := range r.items {
			f.fst[i] = pick[k]
		}
	}
}

// rackKeeps moves row b's items from first followers cur to pick in the
// rack rows r.G and reports true when b's rack row stays at or below
// r.gCap; otherwise it moves them back and reports false. Without racks
// it reports true.
func (f *foState) rackKeeps(b int32, L []float64, r *wRow, cur, pick []int32) bool {
	if r.G == nil {
		return true
	}
	w, n := f.w, f.n
	rk := int(w.rack[b])
	row := r.G[rk*n : (rk+1)*n]
	shift := func(from, to []int32) {
		for k, i := range r.items {
			if from[k] == to[k] {
				continue
			}
			if s := f.rackSucc(int(i), from[k]); s >= 0 {
				row[s] -= w.fw[i]
			}
			if s := f.rackSucc(int(i), to[k]); s >= 0 {
				row[s] += w.fw[i]
			}
		}
	}
	shift(cur, pick)
	for j := range n {
		if w.target[j] && int(w.rack[j]) != rk && L[j]+row[j] > r.gCap*(1+1e-9) {
			shift(pick, cur)
			return false
		}
	}
	return true
}

// assignMax loads r.W with assignment a and returns the row's busiest load.
func (f *foState) assignMax(b int32, L []float64, r *wRow, a []int32) float64 {
	copy(r.W, r.fixed)
	for k, i := range r.items {
		r.W[a[k]] += f.w.fw[i]
	}
	m, _ := f.rowMax(b, L, r.W)
	return m
}

// improve moves (then swaps) items off the busiest survivor of row b while
// that lowers it, at most foWeightIters times.
func (f *foState) improve(b int32, L []float64, r *wRow, a []int32) {
	f.assignMax(b, L, r, a)
	for range foWeightIters {
		m, top := f.rowMax(b, L, r.W)
		if !f.moveOff(b, top, m, L, r, a) && !f.swapOff(b, top, m, L, r, a) {
			return
		}
	}
}

// moveOff moves one item from top to another of its options that stays
// below m; it reports whether it found one.
func (f *foState) moveOff(b, top int32, m float64, L []float64, r *wRow, a []int32) bool {
	w, fw := f.w, f.w.fw
	for k, i := range r.items {
		if a[k] != top {
			continue
		}
		for s := w.off[i]; s < w.off[i+1]; s++ {
			j := w.slots[s]
			if j != b && j != top && L[j]+r.W[j]+fw[i] < m {
				a[k] = j
				r.W[top] -= fw[i]
				r.W[j] += fw[i]
				return true
			}
		}
	}
	return false
}

// swapOff exchanges an item on top with a lighter one on another broker
// when both end below m.
func (f *foState) swapOff(b, top int32, m float64, L []float64, r *wRow, a []int32) bool {
	w, fw := f.w, f.w.fw
	for k, i := range r.items {
		if a[k] != top {
			continue
		}
		for q, x := range r.items {
			j := a[q]
			if j == top || fw[x] >= fw[i] || !w.holds(int(i), j) || !w.holds(int(x), top) {
				continue
			}
			d := fw[i] - fw[x]
			if L[j]+r.W[j]+d < m && L[top]+r.W[top]-d < m {
				a[k], a[q] = j, top
				r.W[top] -= d
				r.W[j] += d
				return true
			}
		}
	}
	return false
}

// weightedRackRows are the load each survivor takes over per lost rack
// with the first followers of f.fst, and the busiest survivor's load over
// every rack loss.
func (f *foState) weightedRackRows(L []float64) ([]float64, float64) {
	w, n := f.w, f.n
	G := make([]float64, w.nrack*n)
	for i := range w.c.Partitions {
		if f.fst[i] < 0 {
			continue
		}
		if rs := f.rackSucc(i, f.fst[i]); rs >= 0 {
			G[int(w.rack[w.lead[i]])*n+int(rs)] += w.fw[i]
		}
	}
	worst := 0.0
	for rk := range w.nrack {
		for j := range n {
			if w.target[j] && int(w.rack[j]) != rk {
				worst = max(worst, L[j]+G[rk*n+j])
			}
		}
	}
	return G, worst
}

// FailoverLoad is the worst loss of one domain weighted by load (plans
// with loads or rates only): the busiest survivor's produce + consume
// bytes/s (with rates: its share of the producers' rates, in their unit)
// after Kafka's election against a lower bound no plan can beat.
type FailoverLoad struct {
	Lost    []int32 `json:"lost"`
	Rack    string  `json:"rack,omitempty"`
	Busiest int32   `json:"busiest"`
	// BusiestLoad is the busiest survivor's bytes/s: its own leaders' and
	// those it takes over.
	BusiestLoad float64 `json:"busiest_load"`
	// Bound is max(online load / survivors, the largest partition's
	// load): the busiest survivor carries at least the mean and at least
	// any one partition, whatever the plan.
	Bound float64 `json:"bound"`
	// Ratio is BusiestLoad / Bound (1 when Bound is 0), to 3 places;
	// the loads are rounded to thousandths of a byte/s.
	Ratio float64 `json:"ratio"`
}

// loadFigure measures the worst loss of c's brokers (rack false) or racks
// by load, each partition weighing fw[i] (c.Partitions in fw's order).
// Kafka's election: the first replica in order that survives and is in
// the ISR (every replica when the ISR is unknown) takes a lost leadership.
// One pass over the partitions counts, per loss unit, the load each
// survivor takes over (units × brokers), so every loss costs O(brokers).
func loadFigure(c *topology.Cluster, fw []float64, rack bool) *FailoverLoad {
	n := len(c.Brokers)
	pos := make(map[int32]int, n)
	unit := make([]int, n)
	var names []string
	var lost [][]int32
	if rack {
		ix := map[string]int{}
		for _, name := range slices.Sorted(maps.Keys(rackSet(c))) {
			ix[name] = len(names)
			names = append(names, name)
			lost = append(lost, nil)
		}
		for b, br := range c.Brokers {
			pos[br.ID] = b
			unit[b] = -1
			if br.Rack != "" {
				unit[b] = ix[br.Rack]
				lost[unit[b]] = append(lost[unit[b]], br.ID)
			}
		}
	} else {
		for b, br := range c.Brokers {
			pos[br.ID] = b
			unit[b] = b
			names, lost = append(names, ""), append(lost, []int32{br.ID})
		}
	}
	nu := len(names)
	own := make([]float64, n)      // load each broker leads
	maxOwn := make([]float64, n)   // its heaviest partition
	take := make([]float64, nu*n)  // per unit: load each survivor takes over
	maxTake := make([]float64, nu) // per unit: the heaviest taken over
	for i := range c.Partitions {
		p := &c.Partitions[i]
		l, ok := pos[p.Leader]
		if !ok {
			continue // offline already
		}
		own[l] += fw[i]
		maxOwn[l] = max(maxOwn[l], fw[i])
		u := unit[l]
		if u < 0 {
			continue
		}
		for _, r := range p.Replicas {
			if b, ok := pos[r]; ok && unit[b] != u && (p.ISR == nil || slices.Contains(p.ISR, r)) {
				take[u*n+b] += fw[i]
				maxTake[u] = max(maxTake[u], fw[i])
				break
			}
		}
	}
	var worst *FailoverLoad
	for u := range nu {
		f := &FailoverLoad{Lost: lost[u], Rack: names[u], Busiest: -1}
		var online, big float64
		k := 0
		for b := range n {
			if unit[b] == u {
				continue
			}
			k++
			v := own[b] + take[u*n+b]
			online += v
			big = max(big, maxOwn[b])
			if f.Busiest < 0 || v > f.BusiestLoad {
				f.Busiest, f.BusiestLoad = c.Brokers[b].ID, v
			}
		}
		if k == 0 {
			continue
		}
		big = max(big, maxTake[u])
		// Rounded (thousandths of a byte/s, the ratio to 3 places) so
		// the figures do not depend on the order of float sums. The ratio
		// is taken before the loads are rounded: with --rates' relative
		// weights a thousandth is not negligible, and the ratio is then
		// audit's predicted max/mean after the same loss.
		bound := max(online/float64(k), big)
		f.Ratio = 1
		if bound > 0 {
			f.Ratio = round3(f.BusiestLoad / bound)
		}
		f.Bound = math.Round(bound*loadScale) / loadScale
		f.BusiestLoad = math.Round(f.BusiestLoad*loadScale) / loadScale
		if worst == nil || f.BusiestLoad-f.Bound > worst.BusiestLoad-worst.Bound {
			worst = f
		}
	}
	return worst
}

// rackSet is the set of c's rack names.
func rackSet(c *topology.Cluster) map[string]bool {
	out := map[string]bool{}
	for _, b := range c.Brokers {
		if b.Rack != "" {
			out[b.Rack] = true
		}
	}
	return out
}
