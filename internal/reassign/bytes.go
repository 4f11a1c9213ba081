package reassign

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Balance by bytes (Options.Balance "bytes"). Partitions differ by orders
// of magnitude in size, so a count-balanced plan can leave one broker with
// twice the disk of another, and its fewest moves can copy terabytes where
// another plan copies gigabytes. The bytes objective:
//
//   - every target broker's disk (the sum of its replicas' SizeBytes) ends
//     within Options.Tolerance of the mean (cordoned brokers only below
//     the band's top: they receive nothing, so they cannot be filled);
//   - with the fewest bytes copied, where a move costs what the new replica
//     copies (Partition.CopyBytes: the local bytes of a tiered topic);
//   - rack rules and replication factors hold as in the count plan, and
//     replicas that must move (drained brokers, a larger replication
//     factor, rack violations) move first, to the emptiest broker;
//   - leaders and the failover order are then chosen within the new sets by
//     the count plan's own phases (assignLeaders, orderFollowers).
//
// The placement is greedy and local, so it scales to millions of
// replicas: each broker above the band sheds a set of its replicas whose
// sizes add up to at least its excess and at most what keeps it above the
// band's bottom, at the least copy cost per byte relieved, each to the
// emptiest broker that can take it without rising above the band; then
// each non-cordoned broker below the band pulls, the same way, from
// brokers that stay within it. For the set it sheds, a broker compares the
// cheapest single replica that covers the whole excess with a greedy fill
// (cheapest bytes first, largest first, never past the excess) completed by
// the cheapest replica that covers the rest, and takes the cheaper.
// Tests hold its bytes within 10% of a branch-and-bound optimum on small
// layouts (bytes_test.go).

// Balance objectives (Options.Balance).
const (
	BalanceReplicas = "replicas"
	BalanceBytes    = "bytes"
	BalanceLoad     = "load"
)

// BytesBalance is the disk side of a --balance bytes plan; its JSON is the
// summary's "bytes".
type BytesBalance struct {
	// Tolerance is the band around the mean disk per broker.
	Tolerance float64 `json:"tolerance"`
	// Cordoned brokers receive no new replica; their own may leave.
	Cordoned []int32 `json:"cordoned"`
	// MaxMoveBytes is the budget of bytes copied (0: none).
	MaxMoveBytes int64 `json:"max_move_bytes,omitempty"`
	// Before and After are disk bytes per target broker.
	Before DiskSkew `json:"before"`
	After  DiskSkew `json:"after"`
	// BytesMoved is what the plan copies (tiered topics: local bytes);
	// ForcedBytes the part of it that replicas which had to move cost
	// (drained brokers, a larger replication factor, rack rules).
	BytesMoved  int64 `json:"bytes_moved"`
	ForcedBytes int64 `json:"forced_bytes"`
	// LowerBound is the bytes any plan within the band must copy beyond
	// ForcedBytes when moves cost their size: the larger of the excess
	// above the band and the deficit below it (0 for tiered topics, whose
	// moves can cost less than they relieve).
	LowerBound int64 `json:"lower_bound"`
	// Within is true when every target broker ends within the band.
	Within bool `json:"within"`
	// PerBroker lists every target broker.
	PerBroker []BrokerBytes `json:"per_broker"`
	// TradeOff is the balance the plan's moves reach within budgets of
	// bytes copied: the moves run in the plan's order (fullest broker
	// first), so an operator can pick a budget (--max-move-bytes).
	TradeOff []BudgetStep `json:"trade_off"`
	// Replicas is the count-balanced plan (--balance replicas) on the same
	// input, for comparison.
	Replicas *PlanBytes `json:"replicas_plan,omitempty"`
}

// DiskSkew is disk bytes per broker: least, most, mean and max/mean.
type DiskSkew struct {
	Min         int64   `json:"min"`
	Max         int64   `json:"max"`
	Mean        float64 `json:"mean"`
	MaxOverMean float64 `json:"max_over_mean"`
	// MinOverMean shows the bottom of the band.
	MinOverMean float64 `json:"min_over_mean"`
}

// BrokerBytes is one target broker's disk bytes before and after.
type BrokerBytes struct {
	Broker   int32 `json:"broker"`
	Before   int64 `json:"before"`
	After    int64 `json:"after"`
	Cordoned bool  `json:"cordoned,omitempty"`
}

// BudgetStep is the balance reached within a budget of bytes copied.
type BudgetStep struct {
	Budget      int64   `json:"budget"`
	BytesMoved  int64   `json:"bytes_moved"`
	Moves       int     `json:"moves"`
	MaxOverMean float64 `json:"max_over_mean"`
	MinOverMean float64 `json:"min_over_mean"`
	Within      bool    `json:"within"`
}

// PlanBytes measures another plan of the same input by bytes.
type PlanBytes struct {
	ReplicasMoved int      `json:"replicas_moved"`
	BytesMoved    int64    `json:"bytes_moved"`
	After         DiskSkew `json:"after"`
	Within        bool     `json:"within"`
}

// checkBalance validates the balance options before any planning.
func checkBalance(c *topology.Cluster, o Options) error {
	switch o.Balance {
	case "", BalanceReplicas:
		switch {
		case len(o.Cordon) > 0 && o.FailoverMoves != 0:
			return targetErr("failover-moves", "moves followers without regard to cordons: it cannot go with --cordon (or a cluster's cordoned brokers) yet")
		case o.MaxMoveBytes != 0:
			return targetErr("max-move-bytes", "applies with --balance bytes or load only (the count plan's cap is --max-moves)")
		}
		return nil
	case BalanceBytes:
	case BalanceLoad:
		if err := checkLoads(c, o); err != nil {
			return err
		}
	default:
		return targetErr("balance", "want replicas, bytes or load, got %q", o.Balance)
	}
	switch {
	case o.MaxMoveBytes < 0:
		return targetErr("max-move-bytes", "must be positive, got %d", o.MaxMoveBytes)
	case o.Tolerance <= 0:
		return targetErr("tolerance", "--balance %s needs a band above 0 (sizes never divide evenly), got %g", o.Balance, o.Tolerance)
	case o.FixOverlaps:
		return targetErr("fix-overlaps", "applies with --balance replicas only")
	case o.ReorderOnly:
		return targetErr("reorder-only", "moves no data: it cannot go with --balance %s", o.Balance)
	case o.MaxMoves > 0:
		return targetErr("max-moves", "caps replica moves: with --balance %s the budget is bytes copied (--max-move-bytes)", o.Balance)
	case o.FailoverMoves != 0:
		return targetErr("failover-moves", "swaps followers between brokers, which changes disk bytes and load: it cannot go with --balance %s", o.Balance)
	}
	unknown := 0
	for i := range c.Partitions {
		if c.Partitions[i].SizeBytes < 0 {
			unknown++
		}
	}
	if unknown > 0 {
		return targetErr("balance", "%s needs every partition's size: %d of %d partitions have none (size_bytes in the layout, or a live cluster's DescribeLogDirs)",
			o.Balance, unknown, len(c.Partitions))
	}
	return nil
}

// scalarWork starts a bytes or load plan: c's reassignments in progress
// settled, the work built (targets, racks and cordons checked: see
// indexCordons), its notes, the failover domains checked, and the cordon
// mask the scalar state reads (every broker false when none is cordoned).
func scalarWork(c *topology.Cluster, opts Options) (*work, []bool, error) {
	c, settled := settle(c, opts.Ongoing)
	w, err := newWork(c, opts)
	if err != nil {
		return nil, nil, err
	}
	w.notes = append(append(settled, w.notes...), w.lostNotes()...)
	if _, _, err := w.failoverDomains(); err != nil {
		return nil, nil, err
	}
	cordon := w.cordon
	if cordon == nil {
		cordon = make([]bool, w.n())
	}
	return w, cordon, nil
}

// computeBytes is Compute for Options.Balance "bytes".
func computeBytes(c *topology.Cluster, opts Options) (*Plan, error) {
	w, cordon, err := scalarWork(c, opts)
	if err != nil {
		return nil, err
	}
	c = w.c
	w.prepare()
	w.fixRacks()
	bs := newBytesState(w, cordon)
	if err := bs.fillHoles(); err != nil {
		return nil, err
	}
	forced := bs.spent
	bs.setBound()
	// The trade-off comes from the greedy placement without a budget:
	// every point of it is a placement within that many bytes. With a
	// budget, the plan is the same greedy with moves beyond the budget
	// left out, then the search within the budget.
	var curve []curvePoint
	if opts.MaxMoveBytes > 0 {
		slots := slices.Clone(w.slots)
		cnt, tc, moves, moved := slices.Clone(w.cnt), slices.Clone(w.tc), w.moves, bs.moved
		disk := slices.Clone(bs.disk)
		bs.balance(-1)
		curve = bs.curve
		copy(w.slots, slots)
		copy(w.cnt, cnt)
		copy(w.tc, tc)
		copy(bs.disk, disk)
		w.moves, bs.spent, bs.moved, bs.curve = moves, forced, moved, nil
		bs.balance(opts.MaxMoveBytes)
		bs.search(opts.MaxMoveBytes, searchRand(opts))
	} else {
		bs.balance(-1)
		bs.search(-1, searchRand(opts))
		curve = bs.curve
	}
	w.assignLeaders()
	w.orderFollowers()
	pl := w.plan()
	if w.widened {
		pl.Summary.Tolerance = opts.Tolerance
	}
	bs.curve = nil
	bs.record()
	curve = append(curve, bs.curve...) // the plan itself
	bb := bs.summary(forced, curve)
	if opts.MaxMoveBytes > 0 && forced > opts.MaxMoveBytes {
		w.notes = append(w.notes, fmt.Sprintf("--max-move-bytes %d: the replicas that must move (drained brokers, rack rules, a new replication factor) copy %d bytes alone", opts.MaxMoveBytes, forced))
		pl.Summary.Notes = append(pl.Summary.Notes, w.notes[len(w.notes)-1])
	}
	if !bb.Within {
		pl.Summary.Notes = append(pl.Summary.Notes, bs.outsideNote(opts.MaxMoveBytes > 0))
	}
	// The count plan on the same input, for comparison.
	ro := opts
	ro.Balance, ro.Cordon, ro.MaxMoveBytes = BalanceReplicas, nil, 0
	if rp, err := Compute(c, ro); err == nil {
		bb.Replicas = bs.measure(rp)
	}
	pl.Summary.Bytes = bb
	return pl, nil
}

// searchRand is the exchange search's randomness: Options.Rand, or a
// fixed seed so that the plan stays deterministic.
func searchRand(o Options) *rand.Rand {
	if o.Rand != nil {
		return o.Rand
	}
	return rand.New(rand.NewPCG(22, 0x6b706c616e))
}

// bytesState is the disk view of a work during the bytes placement.
type bytesState struct {
	w      *work
	cordon []bool
	tb     []int32 // target brokers, dense
	size   []int64 // per partition
	cost   []int64 // per partition: bytes a new replica copies
	disk   []int64 // per dense broker
	lo, hi float64 // the band
	mean   float64
	// invMean is 1/mean, for pen.
	invMean float64
	// onB lists, per broker, slots that held it at some point (stale
	// entries are skipped: w.slots is the truth).
	onB   [][]int32
	slotP []int32 // slot -> partition
	spent int64   // bytes copied so far, counted against the original
	moved int     // replicas on brokers that did not hold them
	curve []curvePoint
	// bound is the lower bound after the forced moves (lowerBound).
	bound int64
}

// setBound measures the excess above the band and the deficit below it.
func (bs *bytesState) setBound() {
	var over, under float64
	for _, b := range bs.tb {
		x := float64(bs.disk[b])
		over += max(0, x-bs.hi)
		if !bs.cordon[b] {
			under += max(0, bs.lo-x)
		}
	}
	bs.bound = int64(math.Ceil(max(over, under) - 1e-6))
}

type curvePoint struct {
	spent    int64
	moves    int
	max, min float64
	within   bool
}

func newBytesState(w *work, cordon []bool) *bytesState { return newScalarState(w, cordon, nil) }

// newScalarState is newBytesState over another additive per-replica
// quantity: size(i), when non-nil, replaces partition i's SizeBytes as
// what each of its replicas adds to its broker (the load plan balances
// bytes in this way, load.go); moves still cost CopyBytes.
func newScalarState(w *work, cordon []bool, size func(i int) int64) *bytesState {
	np := len(w.c.Partitions)
	bs := &bytesState{w: w, cordon: cordon, size: make([]int64, np), cost: make([]int64, np), disk: make([]int64, w.n()),
		onB: make([][]int32, w.n()), slotP: make([]int32, len(w.slots))}
	var total int64
	for i := range w.c.Partitions {
		p := &w.c.Partitions[i]
		bs.size[i], bs.cost[i] = p.SizeBytes, p.CopyBytes()
		if size != nil {
			bs.size[i] = size(i)
		}
		total += bs.size[i] * int64(w.off[i+1]-w.off[i])
		for s := w.off[i]; s < w.off[i+1]; s++ {
			bs.slotP[s] = int32(i)
			if b := w.slots[s]; b >= 0 {
				bs.disk[b] += bs.size[i]
				bs.onB[b] = append(bs.onB[b], s)
			}
		}
	}
	for b := range w.ids {
		if w.target[b] {
			bs.tb = append(bs.tb, int32(b))
		}
	}
	bs.mean = float64(total) / float64(len(bs.tb))
	bs.invMean = 1 / max(bs.mean, 1)
	// Disk sums are integers: the band's edges rounded inwards change no
	// answer and keep every distance outside it an exact integer (as a
	// float64, exact below 2^53 bytes, 8 PiB, per broker).
	bs.lo, bs.hi = math.Ceil(bs.mean*(1-w.opts.Tolerance)), math.Floor(bs.mean*(1+w.opts.Tolerance))
	return bs
}

// floor is the least disk broker b may end with: the band's bottom, or
// nothing for a cordoned broker (it cannot be filled, so the band's bottom
// does not bind it).
func (bs *bytesState) floor(b int32) float64 {
	if bs.cordon[b] {
		return 0
	}
	return bs.lo
}

// marginal is what moving partition i's replica from a (or a hole, -1) to
// d adds to the bytes copied against the original assignment.
func (bs *bytesState) marginal(i int, a, d int32) int64 {
	var m int64
	if !bs.w.origHas(i, d) {
		m += bs.cost[i]
	}
	if a >= 0 && !bs.w.origHas(i, a) {
		m -= bs.cost[i]
	}
	return m
}

// move puts broker d in slot s.
func (bs *bytesState) move(s, d int32) {
	i := int(bs.slotP[s])
	a := bs.w.slots[s]
	bs.spent += bs.marginal(i, a, d)
	if !bs.w.origHas(i, d) {
		bs.moved++
	}
	if a >= 0 && !bs.w.origHas(i, a) {
		bs.moved--
	}
	if a >= 0 {
		bs.disk[a] -= bs.size[i]
	}
	bs.disk[d] += bs.size[i]
	bs.onB[d] = append(bs.onB[d], s)
	bs.w.put(i, s, d)
}

// canTake reports whether broker d may receive slot s's partition.
func (bs *bytesState) canTake(s, d int32) bool {
	i := int(bs.slotP[s])
	return bs.w.target[d] && (!bs.cordon[d] || bs.w.origHas(i, d)) && !bs.w.holds(i, d) && bs.w.rackFree(i, d, s)
}

// emptiest returns the target broker with the least disk that can take
// slot s and stays at or below limit with it; -1 when none.
func (bs *bytesState) emptiest(s int32, limit float64, except int32) int32 {
	i := bs.slotP[s]
	best := int32(-1)
	for _, d := range bs.tb {
		if d == except || float64(bs.disk[d]+bs.size[i]) > limit || best >= 0 && bs.disk[d] >= bs.disk[best] {
			continue
		}
		if bs.canTake(s, d) {
			best = d
		}
	}
	return best
}

// fillHoles places every replica that must move on the emptiest broker
// that can take it, largest partitions first.
func (bs *bytesState) fillHoles() error {
	w := bs.w
	var holes []int32
	for s, b := range w.slots {
		if b < 0 {
			holes = append(holes, int32(s))
		}
	}
	slices.SortStableFunc(holes, func(a, b int32) int { return cmp.Compare(bs.size[bs.slotP[b]], bs.size[bs.slotP[a]]) })
	for _, s := range holes {
		d := bs.emptiest(s, math.Inf(1), -1)
		if d < 0 {
			i := int(bs.slotP[s])
			// Racks cannot hold it: any non-cordoned broker, as the count
			// plan does.
			for _, b := range bs.tb {
				if !bs.cordon[b] && !w.holds(i, b) && (d < 0 || bs.disk[b] < bs.disk[d]) {
					d = b
				}
			}
			if d < 0 {
				return targetErr("cordon", "partition %s needs a new replica and every target broker that could take it is cordoned or holds it", w.c.Partitions[i].Key())
			}
		}
		bs.move(s, d)
		w.forced++
	}
	return nil
}

// cand is a replica a broker may shed (or pull): slot, partition size and
// marginal cost.
type cand struct {
	s    int32
	size int64
	cost int64
}

// choose returns the slots to move among cands so that their sizes add
// up to at least need and at most room, at the least cost it finds (nil
// when none): the cheaper of the cheapest single replica covering need and
// a greedy fill completed by the cheapest replica covering the rest.
func choose(cands []cand, need, room float64) []int32 {
	single, singleCost, singleSize := int32(-1), int64(math.MaxInt64), int64(0)
	for _, c := range cands {
		if sz := float64(c.size); sz >= need && sz <= room && (c.cost < singleCost || c.cost == singleCost && c.size < singleSize) {
			single, singleCost, singleSize = c.s, c.cost, c.size
		}
	}
	// Greedy: cheapest per byte, then largest, never past need.
	order := slices.Clone(cands)
	slices.SortFunc(order, func(a, b cand) int {
		// a.cost/a.size < b.cost/b.size without division.
		if x, y := float64(a.cost)*float64(b.size), float64(b.cost)*float64(a.size); x != y {
			return cmp.Compare(x, y)
		}
		if c := cmp.Compare(b.size, a.size); c != 0 {
			return c
		}
		return cmp.Compare(a.s, b.s) // slots are unique: a total order
	})
	var fill []int32
	var got float64
	var fillCost int64
	taken := map[int32]bool{}
	for _, c := range order {
		if got >= need {
			break
		}
		if sz := float64(c.size); got+sz <= need {
			fill = append(fill, c.s)
			got += sz
			fillCost += c.cost
			taken[c.s] = true
		}
	}
	if got < need {
		fin, finCost := int32(-1), int64(math.MaxInt64)
		for _, c := range order {
			if sz := float64(c.size); !taken[c.s] && got+sz >= need && got+sz <= room && c.cost < finCost {
				fin, finCost = c.s, c.cost
			}
		}
		if fin >= 0 {
			fill = append(fill, fin)
			fillCost += finCost
			got = need
		}
	}
	fillOK := got >= need && len(fill) > 0
	switch {
	case single >= 0 && (!fillOK || singleCost <= fillCost):
		return []int32{single}
	case fillOK:
		return fill
	case len(fill) > 0:
		return fill // partial: the most this broker can do
	}
	return nil
}

// balance runs the greedy placement; budget < 0 means none.
func (bs *bytesState) balance(budget int64) {
	w := bs.w
	bs.record()
	stuck := make([]bool, w.n())
	for pass := 0; pass < 4; pass++ {
		changed := false
		// Brokers above the band shed, fullest first.
		for {
			a := int32(-1)
			for _, b := range bs.tb {
				if !stuck[b] && float64(bs.disk[b]) > bs.hi && (a < 0 || bs.disk[b] > bs.disk[a]) {
					a = b
				}
			}
			if a < 0 {
				break
			}
			if !bs.shed(a, budget) {
				stuck[a] = true
				continue
			}
			changed = true
		}
		clear(stuck)
		// Non-cordoned brokers below the band pull, emptiest first.
		for {
			d := int32(-1)
			for _, b := range bs.tb {
				if !stuck[b] && !bs.cordon[b] && float64(bs.disk[b]) < bs.lo && (d < 0 || bs.disk[b] < bs.disk[d]) {
					d = b
				}
			}
			if d < 0 {
				break
			}
			if !bs.pull(d, budget) {
				stuck[d] = true
				continue
			}
			changed = true
		}
		clear(stuck)
		if !changed {
			break
		}
	}
}

func (bs *bytesState) affordable(m, budget int64) bool {
	return budget < 0 || bs.spent+m <= budget
}

// shed moves replicas off broker a (above the band) and reports whether
// any moved.
func (bs *bytesState) shed(a int32, budget int64) bool {
	w := bs.w
	need := float64(bs.disk[a]) - bs.hi
	room := float64(bs.disk[a]) - bs.floor(a)
	var cands []cand
	live := bs.onB[a][:0]
	for _, s := range bs.onB[a] {
		if w.slots[s] != a {
			continue
		}
		live = append(live, s)
		i := int(bs.slotP[s])
		if bs.size[i] == 0 || bs.emptiest(s, bs.hi, a) < 0 {
			continue
		}
		// The cost to choose by: a copy, unless the replica is one this
		// plan placed (moving it on copies nothing more). The exact
		// marginal, with the destination, is checked against the budget
		// when it moves; the exchange search finds returns to a broker
		// that held the partition, which cost nothing.
		m := bs.cost[i]
		if !w.origHas(i, a) {
			m = 0 // moving a replica this plan placed costs nothing more
		}
		if !bs.affordable(m, budget) {
			continue
		}
		cands = append(cands, cand{s, bs.size[i], m})
	}
	bs.onB[a] = live
	moved := false
	for _, s := range choose(cands, need, room) {
		d := bs.emptiest(s, bs.hi, a)
		i := int(bs.slotP[s])
		if d < 0 || float64(bs.disk[a]-bs.size[i]) < bs.floor(a) || !bs.affordable(bs.marginal(i, a, d), budget) {
			continue
		}
		bs.move(s, d)
		bs.record()
		moved = true
	}
	return moved
}

// pull moves replicas onto broker d (below the band) from brokers that
// stay within it, and reports whether any moved.
func (bs *bytesState) pull(d int32, budget int64) bool {
	w := bs.w
	need := bs.lo - float64(bs.disk[d])
	room := bs.hi - float64(bs.disk[d])
	var cands []cand
	for _, a := range bs.tb {
		// Sources above the mean: pulling from a broker below it only
		// moves the deficit.
		if a == d || float64(bs.disk[a]) <= max(bs.lo, bs.mean) {
			continue
		}
		for _, s := range bs.onB[a] {
			if w.slots[s] != a {
				continue
			}
			i := int(bs.slotP[s])
			if bs.size[i] == 0 || float64(bs.size[i]) > room || float64(bs.disk[a]-bs.size[i]) < bs.floor(a) || !bs.canTake(s, d) {
				continue
			}
			m := bs.marginal(i, a, d)
			if !bs.affordable(m, budget) {
				continue
			}
			cands = append(cands, cand{s, bs.size[i], m})
		}
	}
	moved := false
	for _, s := range choose(cands, need, room) {
		i := int(bs.slotP[s])
		a := w.slots[s]
		if a < 0 || float64(bs.disk[a]-bs.size[i]) < bs.floor(a) || float64(bs.disk[d]+bs.size[i]) > bs.hi || !bs.canTake(s, d) ||
			!bs.affordable(bs.marginal(i, a, d), budget) {
			continue
		}
		bs.move(s, d)
		bs.record()
		moved = true
	}
	return moved
}

// record appends the balance after the moves so far to the curve.
func (bs *bytesState) record() {
	hi, lo, within := bs.extremes()
	bs.curve = append(bs.curve, curvePoint{spent: bs.spent, moves: bs.moved, max: hi / bs.mean, min: lo / bs.mean, within: within})
}

// extremes returns the most and least disk over target brokers and whether
// all are within the band (cordoned ones only below its top).
func (bs *bytesState) extremes() (float64, float64, bool) {
	hi, lo := math.Inf(-1), math.Inf(1)
	within := true
	for _, b := range bs.tb {
		x := float64(bs.disk[b])
		hi, lo = max(hi, x), min(lo, x)
		if x > bs.hi || x < bs.lo && !bs.cordon[b] {
			within = false
		}
	}
	return hi, lo, within
}

// summary builds the BytesBalance of the plan.
func (bs *bytesState) summary(forced int64, curve []curvePoint) *BytesBalance {
	w := bs.w
	bb := &BytesBalance{Tolerance: w.opts.Tolerance, Cordoned: []int32{}, MaxMoveBytes: w.opts.MaxMoveBytes, BytesMoved: bs.spent, ForcedBytes: forced}
	before := make([]int64, w.n())
	for i := range w.c.Partitions {
		for _, r := range w.c.Partitions[i].Replicas {
			before[w.pos[r]] += bs.size[i]
		}
	}
	var bv, av []int64
	for _, b := range bs.tb {
		if bs.cordon[b] {
			bb.Cordoned = append(bb.Cordoned, w.ids[b])
		}
		bb.PerBroker = append(bb.PerBroker, BrokerBytes{Broker: w.ids[b], Before: before[b], After: bs.disk[b], Cordoned: bs.cordon[b]})
		bv = append(bv, before[b])
		av = append(av, bs.disk[b])
	}
	bb.Before, bb.After = diskSkew(bv, bs.mean), diskSkew(av, bs.mean)
	_, _, bb.Within = bs.extremes()
	bb.LowerBound = bs.lowerBound()
	bb.TradeOff = tradeOff(curve, forced)
	return bb
}

// lowerBound is the bytes beyond the forced ones any plan within the band
// copies when every move costs the size it relieves: the larger of the
// total excess above the band and the total deficit below it (non-cordoned
// brokers), measured after the forced moves. With tiered topics a move
// can cost less than it relieves, so no such bound holds: 0.
func (bs *bytesState) lowerBound() int64 {
	for i := range bs.cost {
		if bs.cost[i] < bs.size[i] {
			return 0
		}
	}
	return bs.bound
}

// tradeOff picks budget steps: the forced bytes, then 10%, 25%, 50% and
// 75% of what the plan copies beyond them, and the plan itself (the last
// point of curve). Each step shows the best balance among the placements
// of the curve within its budget: the greedy's placements, in its order
// (the fullest broker first), then the plan.
func tradeOff(curve []curvePoint, forced int64) []BudgetStep {
	if len(curve) == 0 {
		return []BudgetStep{}
	}
	plan := curve[len(curve)-1]
	var out []BudgetStep
	for _, f := range []float64{0, 0.1, 0.25, 0.5, 0.75, 1} {
		budget := forced + int64(f*float64(plan.spent-forced))
		k := -1
		for j, p := range curve {
			if p.spent <= budget && (k < 0 || p.within && !curve[k].within || p.within == curve[k].within && p.max < curve[k].max) {
				k = j
			}
		}
		if k < 0 {
			continue
		}
		p := curve[k]
		st := BudgetStep{Budget: budget, BytesMoved: p.spent, Moves: p.moves, MaxOverMean: round3(p.max), MinOverMean: round3(p.min), Within: p.within}
		if len(out) > 0 && out[len(out)-1].BytesMoved == st.BytesMoved {
			continue
		}
		out = append(out, st)
	}
	return out
}

func diskSkew(v []int64, mean float64) DiskSkew {
	if len(v) == 0 || mean <= 0 {
		return DiskSkew{}
	}
	s := DiskSkew{Min: slices.Min(v), Max: slices.Max(v), Mean: math.Round(mean)}
	s.MaxOverMean = round3(float64(s.Max) / mean)
	s.MinOverMean = round3(float64(s.Min) / mean)
	return s
}

// measure returns the disk balance and bytes copied of another plan of the
// same cluster (the count plan).
func (bs *bytesState) measure(p *Plan) *PlanBytes {
	w := bs.w
	disk := make([]int64, w.n())
	var bytes int64
	for i := range p.Final.Partitions {
		q := &p.Final.Partitions[i]
		for _, r := range q.Replicas {
			disk[w.pos[r]] += bs.size[i]
			if !slices.Contains(w.c.Partitions[i].Replicas, r) {
				bytes += bs.cost[i]
			}
		}
	}
	var v []int64
	within := true
	for _, b := range bs.tb {
		v = append(v, disk[b])
		if x := float64(disk[b]); x > bs.hi || x < bs.lo {
			within = false
		}
	}
	return &PlanBytes{ReplicasMoved: p.Summary.ReplicasMoved, BytesMoved: bytes, After: diskSkew(v, bs.mean), Within: within}
}

// outsideNote says which brokers stay outside the band and why.
func (bs *bytesState) outsideNote(budgeted bool) string {
	var over, under []int32
	for _, b := range bs.tb {
		switch x := float64(bs.disk[b]); {
		case x > bs.hi:
			over = append(over, bs.w.ids[b])
		case x < bs.lo && !bs.cordon[b]:
			under = append(under, bs.w.ids[b])
		}
	}
	why := "no move of a replica keeps racks, replication factors and cordons and brings them inside (a partition larger than the band, or too few brokers that can take one)"
	if budgeted {
		why = "--max-move-bytes leaves the moves that would bring them inside for a later run"
	}
	return fmt.Sprintf("disk bytes stay outside ±%g%% of the mean on %s above and %s below: %s",
		bs.w.opts.Tolerance*100, plural(len(over), "broker"), plural(len(under), "broker"), why)
}
