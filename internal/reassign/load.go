package reassign

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Balance by load (Options.Balance "load"). With each partition's produce
// rate P (bytes/s written) and consumer rate C (bytes/s the consumer
// groups fetch, from kplan observe), a broker carries:
//
//   - bytes in: P for each partition it leads (from producers) and P for
//     each it follows (replication), so the sum of P over the replicas it
//     holds: it depends on the replica sets only;
//   - bytes out: C + (RF-1)·P for each partition it leads (consumers and
//     followers fetch from the leader), nothing for a follower: it depends
//     on the leaders only, given the sets;
//   - leader bytes: P for each partition it leads (the produce requests it
//     serves), "leaders weighted by their bytes".
//
// The plan brings each of the three within Options.Tolerance of its mean
// on every target broker (cordoned brokers only below the band's top),
// with the fewest bytes copied (a move costs Partition.CopyBytes, as in
// the bytes plan). It runs in four steps, each reusing what exists:
//
//  1. the replicas that must move (drained brokers, rack rules, a new
//     replication factor) and the bytes-in balance: the bytes plan's
//     machinery (greedy placement and exchange search, bytes.go and
//     bytes_search.go) with each replica weighing P instead of its size;
//  2. leaders, by reordering only (no byte copied): starting from the
//     current leaders, the broker furthest outside the out or leader band
//     hands one leadership to another replica, or takes one, whichever
//     brings the two brokers furthest in, until no handover improves;
//  3. only where leaders cannot bring a broker within the bands, replica
//     moves: a replica (with its leadership when it leads) goes to a
//     broker that can take it, the move that brings the three loads
//     furthest in per byte copied first (moves that copy nothing first of
//     all), then step 2 again; random kicks of that search, and, once
//     every broker is within the bands, a ruin-and-recreate pass (prune)
//     that undoes moves, forbids them, and lets steps 2 and 3 find a
//     cheaper way back within the bands;
//  4. the failover order by the count plan's phase (orderFollowers).
//
// Distances outside a band are measured relative to its mean, plus their
// square (as the bytes search does), so that the three objectives add up
// and one broker far outside counts more than two a little outside. Every
// step only takes improvements, so the plan never ends further outside
// the bands than the layout it starts from after step 1.

// Load is a partition's observed traffic.
type Load struct {
	// Produce is the bytes/s producers write to it.
	Produce float64
	// Consume is the bytes/s consumer groups fetch from it (all groups).
	Consume float64
}

// loadScale turns bytes/s into the integers the bytes machinery adds up:
// thousandths of a byte/s.
const loadScale = 1000

// LoadBalance is the network side of a --balance load plan; its JSON is
// the summary's "load".
type LoadBalance struct {
	// Tolerance is the band around each mean.
	Tolerance float64 `json:"tolerance"`
	// Cordoned brokers receive no new replica.
	Cordoned []int32 `json:"cordoned"`
	// BytesMoved is what the plan copies; ForcedBytes the part of it that
	// replicas which had to move cost.
	BytesMoved  int64 `json:"bytes_moved"`
	ForcedBytes int64 `json:"forced_bytes"`
	// In, Out and Leaders are bytes/s per broker; Disk is bytes, shown but
	// not balanced.
	In      LoadSkew `json:"bytes_in"`
	Out     LoadSkew `json:"bytes_out"`
	Leaders LoadSkew `json:"leader_bytes"`
	Disk    DiskLoad `json:"disk"`
	// Within is true when every target broker ends within the band in
	// bytes in, bytes out and leader bytes.
	Within bool `json:"within"`
	// WithoutLoad counts partitions the loads do not name: idle.
	WithoutLoad int `json:"partitions_without_load"`
	// PerBroker lists every target broker.
	PerBroker []BrokerTraffic `json:"per_broker"`
	// Replicas is the count-balanced plan (--balance replicas) on the same
	// input, for comparison.
	Replicas *PlanLoad `json:"replicas_plan,omitempty"`
	// MaxMoveBytes is the budget of bytes copied (0: none), and
	// WithoutBudget the same plan without it: what the budget left undone.
	MaxMoveBytes  int64     `json:"max_move_bytes,omitempty"`
	WithoutBudget *PlanLoad `json:"without_budget,omitempty"`
}

// LoadSkew is one per-broker quantity before and after the plan.
type LoadSkew struct {
	Before RateSkew `json:"before"`
	After  RateSkew `json:"after"`
	// Within is true when every target broker ends within the band.
	Within bool `json:"within"`
}

// DiskLoad is disk bytes per broker before and after a load plan, which
// does not balance them.
type DiskLoad struct {
	Before RateSkew `json:"before"`
	After  RateSkew `json:"after"`
}

// RateSkew is a per-broker quantity: least, most, mean, max/mean and
// min/mean.
type RateSkew struct {
	Min         float64 `json:"min"`
	Max         float64 `json:"max"`
	Mean        float64 `json:"mean"`
	MaxOverMean float64 `json:"max_over_mean"`
	MinOverMean float64 `json:"min_over_mean"`
}

// BrokerTraffic is one target broker's loads before and after: bytes/s
// in, out and led, bytes on disk.
type BrokerTraffic struct {
	Broker        int32   `json:"broker"`
	InBefore      float64 `json:"bytes_in_before"`
	InAfter       float64 `json:"bytes_in_after"`
	OutBefore     float64 `json:"bytes_out_before"`
	OutAfter      float64 `json:"bytes_out_after"`
	LeadersBefore float64 `json:"leader_bytes_before"`
	LeadersAfter  float64 `json:"leader_bytes_after"`
	DiskBefore    int64   `json:"disk_before"`
	DiskAfter     int64   `json:"disk_after"`
	Cordoned      bool    `json:"cordoned,omitempty"`
}

// PlanLoad measures another plan of the same input by load.
type PlanLoad struct {
	ReplicasMoved int      `json:"replicas_moved"`
	BytesMoved    int64    `json:"bytes_moved"`
	In            RateSkew `json:"bytes_in"`
	Out           RateSkew `json:"bytes_out"`
	Leaders       RateSkew `json:"leader_bytes"`
	Disk          RateSkew `json:"disk"`
	Within        bool     `json:"within"`
}

// checkLoads validates Options.Loads for BalanceLoad.
func checkLoads(c *topology.Cluster, o Options) error {
	if len(o.Loads) == 0 {
		return targetErr("loads", "--balance load needs each partition's produce and consumer bytes/s: a kplan observe snapshot (--out) as --from or --loads")
	}
	for i := range c.Partitions {
		l, ok := o.Loads[c.Partitions[i].Key()]
		if !ok {
			continue
		}
		for _, v := range []float64{l.Produce, l.Consume} {
			if !(v >= 0) || math.IsInf(v, 0) || v > 1e15 {
				return targetErr("loads", "partition %s: %v is not a rate in bytes/s (0 or more)", c.Partitions[i].Key(), v)
			}
		}
	}
	return nil
}

// loadState is the traffic view of a work during the load plan; bs keeps
// bytes in (in thousandths of a byte/s).
type loadState struct {
	w    *work
	bs   *bytesState
	prod []float64 // per partition, bytes/s
	cons []float64
	out  []float64 // per dense broker: bytes out
	ld   []float64 // per dense broker: leader bytes
	// The bands: bounds and means.
	outLo, outHi, outMean float64
	ldLo, ldHi, ldMean    float64
	inLo, inHi, inMean    float64 // bs's, in its units
	// hosted lists each broker's partitions.
	hosted [][]int32
	// budget is the most bytes the plan copies, -1 none.
	budget int64
	// tabu, while prune runs, marks the slots repair must not move (the
	// replicas it sent back); nil otherwise.
	tabu []bool
	// noise, while prune runs, scales each candidate's gain in repair's
	// ranking by a random factor in [1, 1+noiseAmp); nil otherwise.
	noise *rand.Rand
}

// noiseAmp is how far prune's noise scales a repair candidate's gain.
const noiseAmp = 0.5

// wo is partition i's bytes out on its leader.
func (ls *loadState) wo(i int) float64 {
	rf := ls.w.off[i+1] - ls.w.off[i]
	return ls.cons[i] + float64(rf-1)*ls.prod[i]
}

// penN is how far x is outside [lo, hi] relative to mean, plus its square;
// floor false drops the bottom (cordoned brokers).
func penN(x, lo, hi, mean float64, floor bool) float64 {
	d := max(0, x-hi)
	if floor {
		d += max(0, lo-x)
	}
	if d == 0 || mean <= 0 {
		return 0
	}
	r := d / mean
	return r + r*r
}

// lpen is broker b's distance outside the out and leader bands.
func (ls *loadState) lpen(b int32, out, ld float64) float64 {
	f := !ls.bs.cordon[b]
	return penN(out, ls.outLo, ls.outHi, ls.outMean, f) + penN(ld, ls.ldLo, ls.ldHi, ls.ldMean, f)
}

// ipen is broker b's distance outside the in band.
func (ls *loadState) ipen(b int32, in int64) float64 {
	return penN(float64(in), ls.inLo, ls.inHi, ls.inMean, !ls.bs.cordon[b])
}

// computeLoad is Compute for Options.Balance "load".
func computeLoad(c *topology.Cluster, opts Options) (*Plan, error) {
	if opts.MaxMoveBytes <= 0 {
		return loadPlan(c, opts, nil)
	}
	uo := opts
	uo.MaxMoveBytes = 0
	up, err := loadPlan(c, uo, nil)
	if err != nil {
		return nil, err
	}
	return loadPlan(c, opts, up)
}

// loadPlan plans by load; under a budget, up is the plan without it: the
// summary shows what it copies and reaches, and when it fits the budget
// and ends further inside the bands (or as far for fewer bytes), it is
// the plan (the budgeted search skips steps beyond the budget on its way,
// so it can end short of a plan the budget allows).
func loadPlan(c *topology.Cluster, opts Options, up *Plan) (*Plan, error) {
	w, cordon, err := scalarWork(c, opts)
	if err != nil {
		return nil, err
	}
	c = w.c
	w.fw = failoverWeights(c, opts.Loads)
	np := len(c.Partitions)
	prod, cons := make([]float64, np), make([]float64, np)
	without := 0
	for i := range c.Partitions {
		l, ok := opts.Loads[c.Partitions[i].Key()]
		if !ok {
			without++
		}
		prod[i], cons[i] = l.Produce, l.Consume
	}
	w.prepare()
	w.fixRacks()
	bs := newScalarState(w, cordon, func(i int) int64 { return int64(math.Round(prod[i] * loadScale)) })
	if err := bs.fillHoles(); err != nil {
		return nil, err
	}
	forced := bs.spent
	// Step 1: bytes in, by the bytes plan's placement and search. A
	// budget (Options.MaxMoveBytes) holds for every step: steps 1 and 3
	// take the moves with the most brought inside the bands per byte
	// copied first (preferred) and skip those beyond it.
	budget := int64(-1)
	if opts.MaxMoveBytes > 0 {
		budget = opts.MaxMoveBytes
	}
	bs.balance(budget)
	bs.search(budget, searchRand(opts))
	ls := newLoadState(w, bs, prod, cons)
	ls.budget = budget
	// Steps 2 and 3.
	ls.leaders()
	effort := repairEffort
	ls.climb(&effort)
	ls.savings(&effort)
	rng := searchRand(opts)
	ls.kicks(&effort, rng)
	ls.prune(&effort, rng)
	n := w.n()
	clear(w.lc)
	for i := range c.Partitions {
		w.lc[int(w.ptopic[i])*n+int(w.lead[i])]++
	}
	// Step 4.
	w.orderFollowers()
	pl := w.plan()
	if w.widened {
		pl.Summary.Tolerance = opts.Tolerance
	}
	lb := ls.summary(pl, forced, without)
	if without > 0 {
		pl.Summary.Notes = append(pl.Summary.Notes, fmt.Sprintf("%s have no observed load: counted as idle", plural(without, "partition")))
	}
	if budget > 0 {
		lb.MaxMoveBytes = budget
		if forced > budget {
			pl.Summary.Notes = append(pl.Summary.Notes, fmt.Sprintf("--max-move-bytes %d: the replicas that must move (drained brokers, rack rules, a new replication factor) copy %d bytes alone", budget, forced))
		}
		lb.WithoutBudget = ls.measure(up)
		if u := up.Summary.Load; u.BytesMoved <= budget && (u.Within && !lb.Within || u.Within == lb.Within && betterLoad(u, lb)) {
			u.MaxMoveBytes, u.WithoutBudget = budget, lb.WithoutBudget
			return up, nil
		}
	}
	if !lb.Within {
		pl.Summary.Notes = append(pl.Summary.Notes, ls.outsideNote(lb))
	}
	ro := opts
	ro.Balance, ro.Cordon, ro.Loads, ro.MaxMoveBytes = BalanceReplicas, nil, nil, 0
	if rp, err := Compute(c, ro); err == nil {
		lb.Replicas = ls.measure(rp)
	}
	pl.Summary.Load = lb
	return pl, nil
}

func newLoadState(w *work, bs *bytesState, prod, cons []float64) *loadState {
	n := w.n()
	ls := &loadState{w: w, bs: bs, prod: prod, cons: cons, out: make([]float64, n), ld: make([]float64, n), hosted: make([][]int32, n), budget: -1}
	var totOut, totLd float64
	for i := range w.c.Partitions {
		reps := w.slots[w.off[i]:w.off[i+1]]
		for _, b := range reps {
			ls.hosted[b] = append(ls.hosted[b], int32(i))
		}
		// The current leader where it stays a replica, then the preferred
		// one, then the replica with the least bytes out so far.
		l := int32(-1)
		if p := &w.c.Partitions[i]; p.Leader >= 0 {
			if b, ok := w.pos[p.Leader]; ok && slices.Contains(reps, b) {
				l = b
			}
		}
		if l < 0 && slices.Contains(reps, w.first[i]) {
			l = w.first[i]
		}
		if l < 0 {
			for _, b := range reps {
				if l < 0 || ls.out[b] < ls.out[l] {
					l = b
				}
			}
		}
		w.lead[i] = l
		ls.out[l] += ls.wo(i)
		ls.ld[l] += prod[i]
		totOut += ls.wo(i)
		totLd += prod[i]
	}
	k := float64(len(bs.tb))
	tol := w.opts.Tolerance
	ls.outMean, ls.ldMean = totOut/k, totLd/k
	ls.outLo, ls.outHi = ls.outMean*(1-tol), ls.outMean*(1+tol)
	ls.ldLo, ls.ldHi = ls.ldMean*(1-tol), ls.ldMean*(1+tol)
	ls.inLo, ls.inHi, ls.inMean = bs.lo, bs.hi, bs.mean
	return ls
}

// setLead hands partition i's leadership to broker r.
func (ls *loadState) setLead(i int, r int32) {
	l := ls.w.lead[i]
	o, p := ls.wo(i), ls.prod[i]
	ls.out[l] -= o
	ls.ld[l] -= p
	ls.out[r] += o
	ls.ld[r] += p
	ls.w.lead[i] = r
}

// leaders runs step 2 and reports whether any leadership changed.
func (ls *loadState) leaders() bool {
	w := ls.w
	stuck := make([]bool, w.n())
	changed := false
	const eps = 1e-12
	for pass := 0; pass < 4; pass++ {
		did := false
		for iter := 0; iter < 4*len(w.c.Partitions)+64; iter++ {
			x, worst := int32(-1), 0.0
			for _, b := range ls.bs.tb {
				if p := ls.lpen(b, ls.out[b], ls.ld[b]); !stuck[b] && p > worst {
					x, worst = b, p
				}
			}
			if x < 0 {
				break
			}
			best, bi, br := -eps, -1, int32(-1)
			for _, ii := range ls.hosted[x] {
				i := int(ii)
				o, p := ls.wo(i), ls.prod[i]
				if o == 0 && p == 0 {
					continue
				}
				try := func(from, to int32) {
					d := ls.lpen(from, ls.out[from]-o, ls.ld[from]-p) - ls.lpen(from, ls.out[from], ls.ld[from]) +
						ls.lpen(to, ls.out[to]+o, ls.ld[to]+p) - ls.lpen(to, ls.out[to], ls.ld[to])
					if d < best {
						best, bi, br = d, i, to
					}
				}
				if l := w.lead[i]; l == x {
					for _, r := range w.slots[w.off[i]:w.off[i+1]] {
						if r != x {
							try(x, r)
						}
					}
				} else {
					try(l, x)
				}
			}
			if bi < 0 {
				// No single handover: an exchange of two leaderships
				// between x and another broker moves only their
				// difference.
				if i, j := ls.exchange(x); i >= 0 {
					a, b := w.lead[i], w.lead[j]
					ls.setLead(i, b)
					ls.setLead(j, a)
					stuck[a], stuck[b] = false, false
					did, changed = true, true
					continue
				}
				stuck[x] = true
				continue
			}
			l := w.lead[bi]
			ls.setLead(bi, br)
			stuck[l], stuck[br] = false, false
			did, changed = true, true
		}
		clear(stuck)
		if !did {
			break
		}
	}
	return changed
}

// exchange finds the best pair of partitions i, j that x and another
// broker y both hold, x leading i and y leading j, whose leaderships
// swapped bring x and y furthest into the bands; -1, -1 when no pair
// improves.
func (ls *loadState) exchange(x int32) (int, int) {
	w := ls.w
	// byHolder[y]: partitions x leads that y also holds.
	byHolder := map[int32][]int32{}
	for _, ii := range ls.hosted[x] {
		i := int(ii)
		if w.lead[i] != x || ls.wo(i) == 0 && ls.prod[i] == 0 {
			continue
		}
		for _, r := range w.slots[w.off[i]:w.off[i+1]] {
			if r != x {
				byHolder[r] = append(byHolder[r], ii)
			}
		}
	}
	best, bi, bj := -1e-12, -1, -1
	px := ls.lpen(x, ls.out[x], ls.ld[x])
	for _, jj := range ls.hosted[x] {
		j := int(jj)
		y := w.lead[j]
		if y == x {
			continue
		}
		py := ls.lpen(y, ls.out[y], ls.ld[y])
		oj, pj := ls.wo(j), ls.prod[j]
		for _, ii := range byHolder[y] {
			i := int(ii)
			do, dp := ls.wo(i)-oj, ls.prod[i]-pj // what x hands y
			if do == 0 && dp == 0 {
				continue
			}
			d := ls.lpen(x, ls.out[x]-do, ls.ld[x]-dp) - px + ls.lpen(y, ls.out[y]+do, ls.ld[y]+dp) - py
			if d < best {
				best, bi, bj = d, i, j
			}
		}
	}
	return bi, bj
}

// climb alternates steps 3 and 2 until no replica move improves.
func (ls *loadState) climb(effort *int) {
	for round := 0; round < 4 && *effort > 0; round++ {
		if !ls.repair(effort) {
			break
		}
		ls.leaders()
	}
}

// loadKicks and loadStale bound the restarts of kicks.
const (
	loadKicks = 200
	loadStale = 40
)

// kicks escapes the local optima of climb where some broker stays outside
// the bands: it relocates a random replica off or onto the broker furthest
// outside (with its leadership, or taking one, at random), climbs again,
// and keeps the result when it is further in, or as far in for fewer
// bytes copied. The randomness is searchRand's: the plan stays
// deterministic.
func (ls *loadState) kicks(effort *int, rng *rand.Rand) {
	w, bs := ls.w, ls.bs
	best, stale := ls.save(), 0
	// settle re-picks leaders and climbs after a kick, and keeps the
	// result when it is better than the best so far (else goes back to it).
	settle := func() {
		ls.leaders()
		ls.climb(effort)
		ls.savings(effort)
		if cur := ls.save(); better(cur.pen-best.pen, cur.spent-best.spent, 1e-12) {
			best, stale = cur, 0
		} else {
			ls.restore(best)
			stale++
		}
	}
	for k := 0; k < loadKicks && stale < loadStale && *effort > 0; k++ {
		if best.pen == 0 || rng.IntN(2) == 0 {
			// Within the bands (or every other kick): send a replica the
			// plan moved back to a broker that held it, the perturbation
			// that most often leads to fewer bytes copied.
			if !ls.kickBack(rng) {
				break
			}
			settle()
			continue
		}
		x, worst := int32(-1), 0.0
		for _, b := range bs.tb {
			if p := ls.ipen(b, bs.disk[b]) + ls.lpen(b, ls.out[b], ls.ld[b]); p > worst {
				x, worst = b, p
			}
		}
		if x < 0 {
			break
		}
		for tries := 0; tries < 50; tries++ {
			var s, d int32
			if rng.IntN(2) == 0 && len(ls.hosted[x]) > 0 {
				i := int(ls.hosted[x][rng.IntN(len(ls.hosted[x]))])
				s = w.off[i]
				for w.slots[s] != x {
					s++
				}
				d = bs.tb[rng.IntN(len(bs.tb))]
			} else {
				s, d = int32(rng.IntN(len(w.slots))), x
			}
			if w.slots[s] == d || !bs.canTake(s, d) || !bs.affordable(bs.marginal(int(bs.slotP[s]), w.slots[s], d), ls.budget) {
				continue
			}
			i := int(bs.slotP[s])
			ls.relocate(relocation{s: s, d: d, lead: w.lead[i] == w.slots[s] || rng.IntN(2) == 0})
			break
		}
		settle()
	}
	ls.restore(best)
}

// pruneRounds and pruneStale bound the rounds of prune, pruneEffort its
// candidate evaluations.
const (
	pruneRounds = 1000
	pruneStale  = 250
	pruneEffort = 1_000_000
)

// prune lowers the bytes copied once kicks has settled within the bands,
// by ruin and recreate. Each round undoes part of the plan: first each
// moved replica alone, the costliest first; then, at random, one to three
// moved replicas, or every move, or forces one to three moves the plan did
// not take (replicas copying at most what its costliest move does), alone
// or with every move undone. Replicas sent back or forced are tabu for the
// round: leaders (with leaderKicks) and the climb (with swaps competing
// with single moves, and some rounds with noise in the ranking) bring the
// brokers back within the bands by other moves, savings returns what is
// no longer needed, and the round is kept when it ends as far inside the
// bands for fewer bytes copied. The climb alone takes the move with the
// most brought in per byte copied, which can copy a large replica where
// two small ones, a swap or other leaders would do, and keeps moves that
// later ones made unnecessary; prune finds those. Rounds are bounded by
// pruneRounds, pruneStale and pruneEffort candidate evaluations (large
// layouts get few), and the randomness is searchRand's: the plan stays
// deterministic.
func (ls *loadState) prune(effort *int, rng *rand.Rand) {
	w, bs := ls.w, ls.bs
	budget := min(*effort, pruneEffort)
	spent := budget
	defer func() { *effort -= spent - budget }()
	best, stale := ls.save(), 0
	if best.pen > 0 {
		return // outside the bands: kicks has done what it could
	}
	ls.tabu = make([]bool, len(w.slots))
	defer func() { ls.tabu = nil }()
	var moved, picked []int32
	movedSlots := func() []int32 {
		moved = moved[:0]
		for s, b := range w.slots {
			if !w.origHas(int(bs.slotP[s]), b) {
				moved = append(moved, int32(s))
			}
		}
		return moved
	}
	// The first sweep: each moved replica alone, the costliest first.
	sweep := slices.Clone(movedSlots())
	slices.SortStableFunc(sweep, func(a, b int32) int { return cmp.Compare(bs.cost[bs.slotP[b]], bs.cost[bs.slotP[a]]) })
	for round := 0; round < pruneRounds && stale < pruneStale && budget > 0; round++ {
		picked = picked[:0]
		all, back := false, false
		if round < len(sweep) {
			if !w.origHas(int(bs.slotP[sweep[round]]), w.slots[sweep[round]]) {
				picked = append(picked, sweep[round])
			}
		} else {
			m := movedSlots()
			if len(m) == 0 {
				break
			}
			switch rng.IntN(5) {
			case 2:
				// Every move undone and one or two others forced: the
				// climb rebuilds the rest around them.
				all = true
				picked = append(picked, m...)
				for k := 1 + rng.IntN(2); k > 0; k-- {
					ls.force(rng, m)
				}
			case 1:
				// A replica moved that the plan left in place (one that
				// copies at most what the costliest move does), the climb
				// bringing the rest back within the bands around it: a
				// move the greedy never takes first because it overshoots.
				for k := 1 + rng.IntN(3); k > 0; k-- {
					ls.force(rng, m)
				}
				ls.noise = nil
				for k := rng.IntN(3); k > 0; k-- {
					picked = append(picked, m[rng.IntN(len(m))])
				}
				back = true
			case 0:
				// Every move undone, the placement rebuilt with noise.
				all = true
				picked = append(picked, m...)
				ls.noise = rng
			default:
				for k := 1 + rng.IntN(min(3, len(m))); k > 0; k-- {
					if s := m[rng.IntN(len(m))]; !slices.Contains(picked, s) {
						picked = append(picked, s)
					}
				}
				if rng.IntN(2) == 0 {
					ls.noise = rng
				}
			}
		}
		for _, s := range picked {
			i := int(bs.slotP[s])
			orig := w.orig[w.origOff[i]:w.origOff[i+1]]
			k := rng.IntN(len(orig))
			for range orig {
				d := orig[k]
				k = (k + 1) % len(orig)
				if !bs.canTake(s, d) {
					continue
				}
				ls.relocate(relocation{s: s, d: d, lead: w.lead[i] == w.slots[s] || rng.IntN(2) == 0})
				ls.tabu[s], back = !all, true
				break
			}
		}
		if !back {
			ls.noise = nil
			continue
		}
		ls.leaderKicks(&budget, rng)
		ls.climb(&budget)
		ls.noise = nil
		ls.savings(&budget)
		clear(ls.tabu)
		if next := ls.save(); better(next.pen-best.pen, next.spent-best.spent, 1e-12) {
			best, stale = next, 0
		} else {
			ls.restore(best)
			stale++
		}
	}
	ls.restore(best)
}

// force relocates a random replica that has not moved and copies at most
// what the costliest of the moved slots m does to a random broker that can
// take it, and marks it tabu.
func (ls *loadState) force(rng *rand.Rand, m []int32) {
	w, bs := ls.w, ls.bs
	var most int64
	for _, s := range m {
		most = max(most, bs.cost[bs.slotP[s]])
	}
	for tries := 0; tries < 50; tries++ {
		s := int32(rng.IntN(len(w.slots)))
		i := int(bs.slotP[s])
		d := bs.tb[rng.IntN(len(bs.tb))]
		if ls.tabu[s] || bs.cost[i] > most || !w.origHas(i, w.slots[s]) || !bs.canTake(s, d) || !bs.affordable(bs.marginal(i, w.slots[s], d), ls.budget) {
			continue
		}
		ls.relocate(relocation{s: s, d: d, lead: w.lead[i] == w.slots[s] || rng.IntN(2) == 0})
		ls.tabu[s] = true
		return
	}
}

// leaderKicks runs step 2 and, while some broker stays outside the out or
// leader band, escapes its local optima: it hands a random leadership of
// the broker furthest outside to another replica (or has that broker take
// one), runs step 2 again and keeps the result when the brokers end
// further in. Each kick counts its partitions against effort.
func (ls *loadState) leaderKicks(effort *int, rng *rand.Rand) {
	w := ls.w
	ls.leaders()
	lpen := func() (float64, int32) {
		t, x, worst := 0.0, int32(-1), 0.0
		for _, b := range ls.bs.tb {
			p := ls.lpen(b, ls.out[b], ls.ld[b])
			t += p
			if p > worst {
				x, worst = b, p
			}
		}
		return t, x
	}
	best, x := lpen()
	if x < 0 {
		return
	}
	lead, out, ld := slices.Clone(w.lead), slices.Clone(ls.out), slices.Clone(ls.ld)
	for k, stale := 0, 0; k < leaderKicksMax && stale < leaderKicksStale && *effort > 0; k++ {
		*effort -= len(w.c.Partitions)
		for n := 1 + rng.IntN(2); n > 0; n-- {
			h := ls.hosted[x]
			if len(h) == 0 {
				break
			}
			i := int(h[rng.IntN(len(h))])
			reps := w.slots[w.off[i]:w.off[i+1]]
			if len(reps) < 2 {
				continue
			}
			if w.lead[i] != x {
				ls.setLead(i, x)
				continue
			}
			if r := reps[rng.IntN(len(reps))]; r != x {
				ls.setLead(i, r)
			}
		}
		ls.leaders()
		cur, cx := lpen()
		if cur < best-1e-12 {
			best, x, stale = cur, cx, 0
			copy(lead, w.lead)
			copy(out, ls.out)
			copy(ld, ls.ld)
			if x < 0 {
				return
			}
			continue
		}
		copy(w.lead, lead)
		copy(ls.out, out)
		copy(ls.ld, ld)
		stale++
	}
}

// leaderKicksMax and leaderKicksStale bound leaderKicks.
const (
	leaderKicksMax   = 300
	leaderKicksStale = 100
)

// kickBack relocates a random replica the plan moved to a random broker
// that held its partition and can take it again (with the leadership, or
// not, at random); false when no replica moved.
func (ls *loadState) kickBack(rng *rand.Rand) bool {
	w, bs := ls.w, ls.bs
	var moved []int32
	for s, b := range w.slots {
		if !w.origHas(int(bs.slotP[s]), b) {
			moved = append(moved, int32(s))
		}
	}
	if len(moved) == 0 {
		return false
	}
	for tries := 0; tries < 20; tries++ {
		s := moved[rng.IntN(len(moved))]
		i := int(bs.slotP[s])
		reps := w.c.Partitions[i].Replicas
		d := w.pos[reps[rng.IntN(len(reps))]]
		if !bs.canTake(s, d) || !bs.affordable(bs.marginal(i, w.slots[s], d), ls.budget) {
			continue
		}
		ls.relocate(relocation{s: s, d: d, lead: w.lead[i] == w.slots[s] || rng.IntN(2) == 0})
		return true
	}
	return true // nothing kicked: the climb finds nothing new either
}

// savings returns moved replicas to brokers that held them wherever that
// keeps every broker as far inside the bands: fewer bytes copied at no
// cost in balance, the best saving first.
func (ls *loadState) savings(effort *int) {
	w, bs := ls.w, ls.bs
	var buf []bdelta
	for *effort > 0 {
		var best relocation
		var bestDC int64
		for s, a := range w.slots {
			i := int(bs.slotP[s])
			if w.origHas(i, a) {
				continue
			}
			for _, r := range w.c.Partitions[i].Replicas {
				d := w.pos[r]
				*effort--
				if !w.target[d] || !bs.canTake(int32(s), d) {
					continue
				}
				dc := bs.marginal(i, a, d)
				if dc >= bestDC {
					continue
				}
				for _, lead := range []bool{false, true} {
					if !lead && w.lead[i] == a {
						continue
					}
					rl := relocation{s: int32(s), d: d, lead: lead}
					buf = ls.relocDelta(rl, buf)
					if ls.cost(buf) <= 1e-12 {
						best, bestDC = rl, dc
						break
					}
				}
			}
		}
		if bestDC >= 0 {
			return
		}
		ls.relocate(best)
	}
}

// loadSnapshot is a placement kicks may return to.
type loadSnapshot struct {
	snapshot
	lead    []int32
	out, ld []float64
	hosted  [][]int32
	pen     float64
}

func (ls *loadState) save() loadSnapshot {
	s := loadSnapshot{snapshot: ls.bs.save(), lead: slices.Clone(ls.w.lead), out: slices.Clone(ls.out), ld: slices.Clone(ls.ld), hosted: make([][]int32, len(ls.hosted))}
	for b, h := range ls.hosted {
		s.hosted[b] = slices.Clone(h)
	}
	for _, b := range ls.bs.tb {
		s.pen += ls.ipen(b, ls.bs.disk[b]) + ls.lpen(b, ls.out[b], ls.ld[b])
	}
	return s
}

func (ls *loadState) restore(s loadSnapshot) {
	ls.bs.restore(s.snapshot)
	copy(ls.w.lead, s.lead)
	copy(ls.out, s.out)
	copy(ls.ld, s.ld)
	for b := range ls.hosted {
		ls.hosted[b] = append(ls.hosted[b][:0], s.hosted[b]...)
	}
}

// relocate applies relocation r.
func (ls *loadState) relocate(r relocation) {
	w, bs := ls.w, ls.bs
	i := int(bs.slotP[r.s])
	a := w.slots[r.s]
	bs.move(r.s, r.d)
	if k := slices.Index(ls.hosted[a], int32(i)); k >= 0 {
		ls.hosted[a] = slices.Delete(ls.hosted[a], k, k+1)
	}
	ls.hosted[r.d] = append(ls.hosted[r.d], int32(i))
	if r.lead || w.lead[i] == a {
		ls.setLead(i, r.d) // from the leader, which may be a
	}
}

// swapDelta is what swapping slots s (on a) and t (on b) changes: each
// replica takes its leadership along.
func (ls *loadState) swapDelta(s, t int32, buf []bdelta) []bdelta {
	w, bs := ls.w, ls.bs
	a, b := w.slots[s], w.slots[t]
	i, j := int(bs.slotP[s]), int(bs.slotP[t])
	buf = append(buf[:0], bdelta{b: a, in: bs.size[j] - bs.size[i]}, bdelta{b: b, in: bs.size[i] - bs.size[j]})
	if w.lead[i] == a {
		o, p := ls.wo(i), ls.prod[i]
		buf = append(buf, bdelta{b: a, out: -o, ld: -p}, bdelta{b: b, out: o, ld: p})
	}
	if w.lead[j] == b {
		o, p := ls.wo(j), ls.prod[j]
		buf = append(buf, bdelta{b: b, out: -o, ld: -p}, bdelta{b: a, out: o, ld: p})
	}
	return buf
}

// bestSwap finds the swap of a replica on x with one on another broker
// that improves most (as repair ranks moves); false when none does.
func (ls *loadState) bestSwap(x int32, effort *int) ([2]int32, bool) {
	sw, _, _, ok := ls.bestSwapDelta(x, effort)
	return sw, ok
}

// bestSwapDelta is bestSwap with the change in distance outside the bands
// and in bytes copied of the swap it finds.
func (ls *loadState) bestSwapDelta(x int32, effort *int) ([2]int32, float64, int64, bool) {
	w, bs := ls.w, ls.bs
	const eps = 1e-12
	var buf []bdelta
	var best [2]int32
	var bestDV float64
	var bestDC int64
	found := false
	for _, ii := range ls.hosted[x] {
		i := int(ii)
		s := w.off[i]
		for w.slots[s] != x {
			s++
		}
		for t := int32(0); t < int32(len(w.slots)) && *effort > 0; t++ {
			*effort--
			b := w.slots[t]
			j := int(bs.slotP[t])
			if b == x || j == i || bs.size[i] == bs.size[j] && ls.wo(i) == ls.wo(j) || ls.tabu != nil && (ls.tabu[s] || ls.tabu[t]) {
				continue
			}
			buf = ls.swapDelta(s, t, buf)
			dv := ls.cost(buf)
			dc := bs.marginal(i, x, b) + bs.marginal(j, b, x)
			if !better(dv, dc, eps) || found && !preferred(dv, dc, bestDV, bestDC, eps) || !bs.affordable(dc, ls.budget) || !bs.swappable(s, t) {
				continue
			}
			found, bestDV, bestDC, best = true, dv, dc, [2]int32{s, t}
		}
	}
	return best, bestDV, bestDC, found
}

// swap exchanges the brokers of slots s and t, leaderships along.
func (ls *loadState) swap(s, t int32) {
	w, bs := ls.w, ls.bs
	a, b := w.slots[s], w.slots[t]
	i, j := int(bs.slotP[s]), int(bs.slotP[t])
	li, lj := w.lead[i] == a, w.lead[j] == b
	bs.move(s, b)
	bs.move(t, a)
	for _, m := range [][3]int32{{int32(i), a, b}, {int32(j), b, a}} {
		if k := slices.Index(ls.hosted[m[1]], m[0]); k >= 0 {
			ls.hosted[m[1]] = slices.Delete(ls.hosted[m[1]], k, k+1)
		}
		ls.hosted[m[2]] = append(ls.hosted[m[2]], m[0])
	}
	if li {
		ls.setLead(i, b)
	}
	if lj {
		ls.setLead(j, a)
	}
}

// repairEffort bounds the candidate evaluations of step 3.
const repairEffort = 60_000_000

// bdelta is a change of one broker's loads.
type bdelta struct {
	b       int32
	in      int64
	out, ld float64
}

// cost is how much further outside the bands the changes ch put their
// brokers (negative: further in); ch may name a broker more than once.
func (ls *loadState) cost(ch []bdelta) float64 {
	d := 0.0
	for k, c := range ch {
		dup := false
		for _, e := range ch[:k] {
			dup = dup || e.b == c.b
		}
		if dup {
			continue
		}
		in, out, ld := c.in, c.out, c.ld
		for _, e := range ch[k+1:] {
			if e.b == c.b {
				in, out, ld = in+e.in, out+e.out, ld+e.ld
			}
		}
		b := c.b
		d += ls.ipen(b, ls.bs.disk[b]+in) + ls.lpen(b, ls.out[b]+out, ls.ld[b]+ld) - ls.ipen(b, ls.bs.disk[b]) - ls.lpen(b, ls.out[b], ls.ld[b])
	}
	return d
}

// relocation is a replica move: slot s from its broker to d, and, when
// lead, d leads the partition afterwards (it must when the replica left
// was the leader).
type relocation struct {
	s, d int32
	lead bool
}

// relocDelta is what relocation r changes.
func (ls *loadState) relocDelta(r relocation, buf []bdelta) []bdelta {
	w := ls.w
	i := int(ls.bs.slotP[r.s])
	a := w.slots[r.s]
	in := ls.bs.size[i]
	buf = append(buf[:0], bdelta{b: a, in: -in}, bdelta{b: r.d, in: in})
	if r.lead {
		l := w.lead[i]
		o, p := ls.wo(i), ls.prod[i]
		buf = append(buf, bdelta{b: l, out: -o, ld: -p}, bdelta{b: r.d, out: o, ld: p})
	}
	return buf
}

// repair runs step 3: replica moves for the brokers leaders could not
// bring within the bands (off the broker furthest outside them, or onto
// it), and reports whether any replica moved.
func (ls *loadState) repair(effort *int) bool {
	w, bs := ls.w, ls.bs
	stuck := make([]bool, w.n())
	moved := false
	const eps = 1e-12
	var buf []bdelta
	for *effort > 0 {
		x, worst := int32(-1), 0.0
		for _, b := range bs.tb {
			p := ls.lpen(b, ls.out[b], ls.ld[b])
			if ls.tabu != nil {
				// prune's returns can put a broker outside the in band
				// too, which step 1 no longer watches.
				p += ls.ipen(b, bs.disk[b])
			}
			if !stuck[b] && p > worst {
				x, worst = b, p
			}
		}
		if x < 0 {
			break
		}
		found := false
		var bestDV float64
		var bestDC int64
		var best relocation
		consider := func(s, d int32) {
			i := int(bs.slotP[s])
			a := w.slots[s]
			*effort--
			if !bs.canTake(s, d) || ls.tabu != nil && ls.tabu[s] {
				return
			}
			dc := bs.marginal(i, a, d)
			if !bs.affordable(dc, ls.budget) {
				return
			}
			for _, lead := range []bool{false, true} {
				if !lead && w.lead[i] == a {
					continue // a leader's replica takes its leadership along
				}
				r := relocation{s: s, d: d, lead: lead}
				buf = ls.relocDelta(r, buf)
				dv := ls.cost(buf)
				if !better(dv, dc, eps) {
					continue
				}
				if ls.noise != nil {
					dv *= 1 + noiseAmp*ls.noise.Float64()
				}
				if found && !preferred(dv, dc, bestDV, bestDC, eps) {
					continue
				}
				found, bestDV, bestDC, best = true, dv, dc, r
			}
		}
		// Off x.
		for _, ii := range ls.hosted[x] {
			i := int(ii)
			if bs.size[i] == 0 && ls.wo(i) == 0 {
				continue
			}
			s := w.off[i]
			for w.slots[s] != x {
				s++
			}
			for _, d := range bs.tb {
				if d != x {
					consider(s, d)
				}
			}
		}
		// Onto x.
		for i := range w.c.Partitions {
			if bs.size[i] == 0 && ls.wo(i) == 0 || w.holds(i, x) {
				continue
			}
			for s := w.off[i]; s < w.off[i+1]; s++ {
				consider(s, x)
			}
		}
		if found && ls.tabu != nil {
			// Within prune, swaps compete with single moves: with RF 1
			// a swap is often the cheaper way back into the bands.
			if sw, dv, dc, ok := ls.bestSwapDelta(x, effort); ok && preferred(dv, dc, bestDV, bestDC, eps) {
				ls.swap(sw[0], sw[1])
				stuck[bs.w.slots[sw[0]]], stuck[bs.w.slots[sw[1]]] = false, false
				moved = true
				continue
			}
		}
		if !found {
			// No single move: a swap of two replicas between x and
			// another broker moves only their difference (the one way
			// with RF 1, where leaders cannot help).
			if sw, ok := ls.bestSwap(x, effort); ok {
				ls.swap(sw[0], sw[1])
				stuck[bs.w.slots[sw[0]]], stuck[bs.w.slots[sw[1]]] = false, false
				moved = true
				continue
			}
			stuck[x] = true
			continue
		}
		i := int(bs.slotP[best.s])
		a := w.slots[best.s]
		l := w.lead[i]
		ls.relocate(best)
		stuck[a], stuck[best.d], stuck[l] = false, false, false
		moved = true
	}
	return moved
}

// traffic is per dense broker bytes in, out, leader bytes and disk of a
// layout whose partitions are in w.c's order.
type traffic struct {
	in, out, ld []float64
	disk        []int64
}

func (ls *loadState) traffic(parts []topology.Partition) traffic {
	w := ls.w
	n := w.n()
	t := traffic{in: make([]float64, n), out: make([]float64, n), ld: make([]float64, n), disk: make([]int64, n)}
	for i := range parts {
		p := &parts[i]
		lead := p.Leader
		if lead < 0 || !slices.Contains(p.Replicas, lead) {
			lead = p.Replicas[0]
		}
		for _, r := range p.Replicas {
			b := w.pos[r]
			t.in[b] += ls.prod[i]
			t.disk[b] += max(0, w.c.Partitions[i].SizeBytes)
		}
		b := w.pos[lead]
		t.out[b] += ls.cons[i] + float64(len(p.Replicas)-1)*ls.prod[i]
		t.ld[b] += ls.prod[i]
	}
	return t
}

// skews returns the rate skews of t over target brokers and whether each
// of in, out and leader bytes is within the band (cordoned brokers only
// below its top).
func (ls *loadState) skews(t traffic) (in, out, ld, disk RateSkew, within [3]bool) {
	var vi, vo, vl, vd []float64
	within = [3]bool{true, true, true}
	tol := ls.w.opts.Tolerance
	for _, b := range ls.bs.tb {
		vi, vo, vl, vd = append(vi, t.in[b]), append(vo, t.out[b]), append(vl, t.ld[b]), append(vd, float64(t.disk[b]))
		for k, x := range []float64{t.in[b], t.out[b], t.ld[b]} {
			if !inBand(x, []float64{ls.inMean / loadScale, ls.outMean, ls.ldMean}[k], tol, ls.bs.cordon[b]) {
				within[k] = false
			}
		}
	}
	return rateSkew(vi), rateSkew(vo), rateSkew(vl), rateSkew(vd), within
}

// inBand reports whether x is within tol of mean; the slack absorbs the
// rounding of rates to thousandths of a byte/s and of float sums.
func inBand(x, mean, tol float64, cordoned bool) bool {
	slack := 1e-6*mean + 1e-3
	return x <= mean*(1+tol)+slack && (cordoned || x >= mean*(1-tol)-slack)
}

func rateSkew(v []float64) RateSkew {
	if len(v) == 0 {
		return RateSkew{}
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	s := RateSkew{Min: math.Round(slices.Min(v)), Max: math.Round(slices.Max(v)), Mean: math.Round(mean)}
	if mean > 0 {
		s.MaxOverMean, s.MinOverMean = round3(slices.Max(v)/mean), round3(slices.Min(v)/mean)
	}
	return s
}

// summary builds the LoadBalance of the plan.
func (ls *loadState) summary(pl *Plan, forced int64, without int) *LoadBalance {
	w, bs := ls.w, ls.bs
	lb := &LoadBalance{Tolerance: w.opts.Tolerance, Cordoned: []int32{}, BytesMoved: bs.spent, ForcedBytes: forced, WithoutLoad: without}
	before, after := ls.traffic(w.c.Partitions), ls.traffic(pl.Final.Partitions)
	var wa [3]bool
	lb.In.Before, lb.Out.Before, lb.Leaders.Before, lb.Disk.Before, _ = ls.skews(before)
	lb.In.After, lb.Out.After, lb.Leaders.After, lb.Disk.After, wa = ls.skews(after)
	lb.In.Within, lb.Out.Within, lb.Leaders.Within = wa[0], wa[1], wa[2]
	lb.Within = wa[0] && wa[1] && wa[2]
	for _, b := range bs.tb {
		if bs.cordon[b] {
			lb.Cordoned = append(lb.Cordoned, w.ids[b])
		}
		lb.PerBroker = append(lb.PerBroker, BrokerTraffic{Broker: w.ids[b],
			InBefore: math.Round(before.in[b]), InAfter: math.Round(after.in[b]),
			OutBefore: math.Round(before.out[b]), OutAfter: math.Round(after.out[b]),
			LeadersBefore: math.Round(before.ld[b]), LeadersAfter: math.Round(after.ld[b]),
			DiskBefore: before.disk[b], DiskAfter: after.disk[b], Cordoned: bs.cordon[b]})
	}
	return lb
}

// measure returns the loads and bytes copied of another plan of the same
// cluster (the count plan).
func (ls *loadState) measure(p *Plan) *PlanLoad {
	w := ls.w
	var bytes int64
	for i := range p.Final.Partitions {
		for _, r := range p.Final.Partitions[i].Replicas {
			if !slices.Contains(w.c.Partitions[i].Replicas, r) {
				bytes += ls.bs.cost[i]
			}
		}
	}
	pl := &PlanLoad{ReplicasMoved: p.Summary.ReplicasMoved, BytesMoved: bytes}
	var within [3]bool
	pl.In, pl.Out, pl.Leaders, pl.Disk, within = ls.skews(ls.traffic(p.Final.Partitions))
	pl.Within = within[0] && within[1] && within[2]
	return pl
}

// outsideNote names the objectives some broker stays outside of.
func (ls *loadState) outsideNote(lb *LoadBalance) string {
	var what []string
	for _, x := range []struct {
		name string
		ok   bool
	}{{"bytes in", lb.In.Within}, {"bytes out", lb.Out.Within}, {"leader bytes", lb.Leaders.Within}} {
		if !x.ok {
			what = append(what, x.name)
		}
	}
	why := "no leadership handover or replica move that keeps racks, replication factors and cordons brings them closer (a partition heavier than the band, a cordoned broker that cannot take its share, or too few brokers that can take one)"
	if u := lb.WithoutBudget; lb.MaxMoveBytes > 0 && (u == nil || u.BytesMoved > lb.MaxMoveBytes) {
		why = fmt.Sprintf("--max-move-bytes %d (%d copied) leaves the moves that would bring them closer for a later run", lb.MaxMoveBytes, lb.BytesMoved)
		if u := lb.WithoutBudget; u != nil {
			within := "ends within every band"
			if !u.Within {
				within = "still ends outside a band"
			}
			why += fmt.Sprintf("; without the budget the plan copies %d bytes in %d replica moves and %s", u.BytesMoved, u.ReplicasMoved, within)
		}
	}
	return fmt.Sprintf("%s stay outside ±%g%% of the mean on some broker: %s", strings.Join(what, ", "), ls.w.opts.Tolerance*100, why)
}

// betterLoad reports whether a ends further inside the bands than b (the
// summed distances of each objective's max/mean and min/mean outside
// them), or as far for fewer bytes copied.
func betterLoad(a, b *LoadBalance) bool {
	da, db := outsideBy(a), outsideBy(b)
	if math.Abs(da-db) > 1e-9 {
		return da < db
	}
	return a.BytesMoved < b.BytesMoved
}

func outsideBy(lb *LoadBalance) float64 {
	t := lb.Tolerance
	d := 0.0
	for _, s := range []RateSkew{lb.In.After, lb.Out.After, lb.Leaders.After} {
		d += max(0, s.MaxOverMean-1-t) + max(0, 1-t-s.MinOverMean)
	}
	return d
}
