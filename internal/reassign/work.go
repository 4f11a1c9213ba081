package reassign

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/topology"
)

// work is the planner's dense state. Brokers are indexes 0..N-1 over the
// union of current and target brokers in id order; partitions are indexes
// into c.Partitions.
type work struct {
	c    *topology.Cluster
	opts Options

	ids    []int32 // dense index -> broker id
	pos    map[int32]int32
	target []bool  // in the target set
	cordon []bool  // cordoned (Options.Cordon): no new replica; nil when none
	rack   []int32 // rack index, -1 when unknown
	nrack  int
	names  []string // rack names by rack index
	// rackAware: every target broker has a rack, so a partition's replicas
	// spread over racks as far as its cell's racks allow: no rack holds more
	// than rcap[i] replicas of partition i (see racks.go).
	rackAware bool
	rcap      []int32
	// rackRoom[c][r] is the most replicas rack r of cell c can hold.
	rackRoom [][]int

	// cells: target brokers per cell (one cell unless FixOverlaps with a
	// cell size); cellOf[b] is b's cell or -1 for drained brokers.
	cells  [][]int32
	cellOf []int32
	// blocks: brokers a topic's leaders may use (see blocks.go).
	blocks  [][]int32
	blockOf []int32
	tblock  []int32

	// Partitions. slots[off[i]:off[i+1]] are partition i's replicas in
	// target order (dense broker or -1 for a hole still to fill).
	ptopic []int32
	off    []int32
	slots  []int32
	first  []int32 // current preferred leader (first replica), dense
	lead   []int32 // intended leader, dense
	// orig[origOff[i]:origOff[i+1]] are partition i's replicas before the
	// plan, dense, in their order (origHas reads them instead of the
	// cluster's partitions: one flat array, no id lookup).
	origOff []int32
	orig    []int32
	// mark is per-broker scratch of markHolders, all zero between calls.
	mark []uint8

	// Topics: partitions tstart[t]..tstart[t+1]-1, cell tcell[t].
	tname  []string
	tstart []int32
	tcell  []int32

	cnt []int // replicas per broker
	tgt []int // replica target per broker
	// boundTgt are the targets the lower bound counts against, evenTgt
	// those of an even spread (floor/ceil of the cell's mean), capped[c]
	// the racks of cell c whose room capped boundTgt.
	boundTgt []int
	evenTgt  []int
	capped   [][]int32
	tc       []int32 // replicas of topic t on broker b at t*N+b
	lc       []int32 // leaders of topic t on broker b at t*N+b

	// fw is each partition's failover weight (produce + consume bytes/s)
	// when the plan has loads, nil otherwise (failover_weight.go).
	fw []float64

	moves int // replicas placed on brokers that did not hold them
	lower int // the lower bound, computed before any move
	// countBound is, under FixOverlaps, the lower bound of the same target
	// without it (count balance over all target brokers).
	countBound *int
	forced     int  // holes: replicas that had to move or be created
	widened    bool // the tolerance widened some band beyond floor/ceil
	notes      []string
	// quota, while shed's first pass runs, caps the replicas of topic t a
	// destination may hold (see shed); nil otherwise.
	quota []int32
	// shedLog lists, per source broker, the replicas shed moved off it
	// (see spreadTopics); nil outside shed.
	shedLog [][]shedMove
	// under lists, per cell, the brokers under target while shed runs
	// (nil otherwise), in bestUnder's order; underAt and underTie index
	// and order them (see under.go).
	under    [][]int32
	underAt  []int32
	underTie []int32
	// foExtra are the moves the failover placement added (negative: saved)
	// and foMore how many more would reach the failover optimum (0: it is
	// reached or not measured, -1: not within autoMovesCap).
	foExtra, foMore int
	// before are the failover figures of the layout before the plan,
	// started early (Compute) so they run beside the plan; nil until then.
	before *figures
}

func (w *work) n() int { return len(w.ids) }

func newWork(c *topology.Cluster, o Options) (*work, error) {
	w := &work{c: c, opts: o}
	racks, targetSet, err := w.targetBrokers()
	if err != nil {
		return nil, err
	}
	if err := w.indexBrokers(racks, targetSet); err != nil {
		return nil, err
	}
	maxRF, err := w.indexPartitions()
	if err != nil {
		return nil, err
	}
	nTarget := len(targetSet)
	if maxRF > nTarget {
		return nil, targetErr(rfField(o), "%s cannot hold replication factor %d", plural(nTarget, "target broker"), maxRF)
	}
	if err := w.indexCordons(nTarget, maxRF); err != nil {
		return nil, err
	}
	if err := w.makeCells(nTarget, maxRF); err != nil {
		return nil, err
	}
	return w, nil
}

// targetBrokers reads the target broker set (Options.Brokers, else the
// cluster's) and every broker's rack: an explicit rack in Options.Brokers
// wins over the cluster's. Brokers that only hold replicas get no rack.
func (w *work) targetBrokers() (map[int32]string, map[int32]bool, error) {
	c, o := w.c, w.opts
	racks := map[int32]string{}
	for _, b := range c.Brokers {
		racks[b.ID] = b.Rack
	}
	targetSet := map[int32]bool{}
	tb := o.Brokers
	if len(tb) == 0 {
		tb = LiveBrokers(c)
		for _, b := range c.Brokers {
			if b.Missing {
				w.notes = append(w.notes, fmt.Sprintf("broker %d is down (replicas name it, the cluster's broker list does not): it is drained, never a target", b.ID))
			}
		}
	}
	for _, b := range tb {
		if b.ID < 0 {
			return nil, nil, targetErr("brokers", "broker id %d is negative", b.ID)
		}
		if targetSet[b.ID] {
			return nil, nil, targetErr("brokers", "broker %d is listed twice", b.ID)
		}
		if cb, ok := c.Broker(b.ID); ok && cb.Missing {
			return nil, nil, targetErr("brokers", "broker %d is down (replicas name it, the cluster's broker list does not): it can be drained, not a target", b.ID)
		}
		targetSet[b.ID] = true
		if b.Rack != "" {
			if old := racks[b.ID]; old != "" && old != b.Rack && len(o.Brokers) > 0 {
				// An explicit rack wins; the cluster may simply not know it.
				w.notes = append(w.notes, fmt.Sprintf("broker %d moves from rack %s to rack %s as --brokers says", b.ID, old, b.Rack))
			}
			racks[b.ID] = b.Rack
		} else if _, ok := racks[b.ID]; !ok {
			racks[b.ID] = ""
		}
	}
	if len(targetSet) == 0 {
		return nil, nil, targetErr("brokers", "no target brokers")
	}
	for i := range c.Partitions {
		for _, r := range c.Partitions[i].Replicas {
			if _, ok := racks[r]; !ok {
				racks[r] = ""
			}
		}
	}
	return racks, targetSet, nil
}

// LiveBrokers returns c's brokers that are not Missing: the default target
// set, since a down broker can only be drained.
func LiveBrokers(c *topology.Cluster) []topology.Broker {
	out := make([]topology.Broker, 0, len(c.Brokers))
	for _, b := range c.Brokers {
		if !b.Missing {
			out = append(out, b)
		}
	}
	return out
}

// indexBrokers numbers the brokers densely in id order and their racks in
// name order. A target broker without a rack beside others with one is an
// error when the brokers come from Options.Brokers; when they come from the
// cluster, each such broker counts as a rack of its own (with a note), so
// the brokers with racks keep their rack rules. (Ignoring racks for the
// whole plan, as kplan once did, let one rack-less broker put two replicas
// of a partition in one rack.)
func (w *work) indexBrokers(racks map[int32]string, targetSet map[int32]bool) error {
	ids := make([]int32, 0, len(racks))
	for id := range racks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	withRack, withoutRack := int32(-1), int32(-1)
	for _, id := range ids {
		if targetSet[id] {
			if racks[id] != "" {
				withRack = id
			} else {
				withoutRack = id
			}
		}
	}
	useRacks := true
	var rackless []int32 // target brokers planned as a rack of their own
	if withRack >= 0 && withoutRack >= 0 {
		if len(w.opts.Brokers) > 0 {
			return targetErr("brokers", "broker %d has no rack while broker %d has one: give every target broker a rack (ID:RACK) or none", withoutRack, withRack)
		}
		for _, id := range ids {
			if targetSet[id] && racks[id] == "" {
				rackless = append(rackless, id)
			}
		}
		w.notes = append(w.notes, fmt.Sprintf("%s without a rack beside brokers with one (e.g. %d): each counts as a rack of its own, the others keep their racks",
			idsNote(rackless), withRack))
	}
	w.ids = ids
	w.pos = make(map[int32]int32, len(ids))
	w.target = make([]bool, len(ids))
	w.rack = make([]int32, len(ids))
	rackIx := map[string]int32{}
	var rackNames []string
	for _, id := range ids {
		if r := racks[id]; useRacks && r != "" && targetSet[id] {
			if _, ok := rackIx[r]; !ok {
				rackIx[r] = 0
				rackNames = append(rackNames, r)
			}
		}
	}
	slices.Sort(rackNames)
	for i, r := range rackNames {
		rackIx[r] = int32(i)
	}
	for i, id := range ids {
		w.pos[id] = int32(i)
		w.target[i] = targetSet[id]
		w.rack[i] = -1
		if r, ok := rackIx[racks[id]]; ok && racks[id] != "" {
			w.rack[i] = r
		} else if slices.Contains(rackless, id) {
			// A rack of its own, unnamed: rackName stays "".
			w.rack[i] = int32(len(rackNames))
			rackNames = append(rackNames, "")
		}
	}
	w.nrack = len(rackNames)
	w.names = rackNames
	w.rackAware = w.nrack > 0
	return nil
}

// indexPartitions checks the partitions (sorted, replicas on distinct
// brokers), lays out their slots and topics, and returns the largest
// target replication factor.
func (w *work) indexPartitions() (int, error) {
	c, o := w.c, w.opts
	if o.ReplicationFactor < 0 {
		return 0, targetErr("replication-factor", "must be at least 1, got %d", o.ReplicationFactor)
	}
	maxRF := 0
	np := len(c.Partitions)
	w.ptopic = make([]int32, np)
	w.off = make([]int32, np+1)
	w.first = make([]int32, np)
	w.lead = make([]int32, np)
	w.origOff = make([]int32, np+1)
	total := 0
	for i := range c.Partitions {
		p := &c.Partitions[i]
		if i > 0 && topology.ComparePartitions(c.Partitions[i-1], *p) >= 0 {
			return 0, targetErr("", "partitions are not sorted or %s is listed twice (normalize the cluster first)", p.Key())
		}
		if len(p.Replicas) == 0 {
			return 0, targetErr("", "partition %s has no replicas", p.Key())
		}
		for j, r := range p.Replicas {
			if slices.Contains(p.Replicas[:j], r) {
				return 0, targetErr("", "partition %s lists broker %d twice", p.Key(), r)
			}
		}
		w.origOff[i+1] = w.origOff[i] + int32(len(p.Replicas))
		rf := len(p.Replicas)
		if o.ReplicationFactor > 0 {
			rf = o.ReplicationFactor
		}
		maxRF = max(maxRF, rf)
		total += rf
		w.off[i+1] = int32(total)
		if len(w.tname) == 0 || w.tname[len(w.tname)-1] != p.Topic {
			w.tname = append(w.tname, p.Topic)
			w.tstart = append(w.tstart, int32(i))
		}
		w.ptopic[i] = int32(len(w.tname) - 1)
	}
	w.tstart = append(w.tstart, int32(np))
	w.orig = make([]int32, w.origOff[np])
	for i := range c.Partitions {
		for k, r := range c.Partitions[i].Replicas {
			w.orig[int(w.origOff[i])+k] = w.pos[r]
		}
	}
	return maxRF, nil
}

// makeCells checks the cell size and splits the target brokers into cells
// (one cell unless FixOverlaps with a cell size).
func (w *work) makeCells(nTarget, maxRF int) error {
	o := w.opts
	w.cellOf = make([]int32, len(w.ids))
	for i := range w.cellOf {
		w.cellOf[i] = -1
	}
	if o.CellSize < 0 {
		return targetErr("cell-size", "must be positive, got %d", o.CellSize)
	}
	if o.CellSize > 0 && !o.FixOverlaps {
		return targetErr("cell-size", "only applies with fix-overlaps")
	}
	k := nTarget
	if o.FixOverlaps && o.CellSize > 0 {
		k = o.CellSize
		switch {
		case k > nTarget:
			return targetErr("cell-size", "%d is larger than the %d target brokers", k, nTarget)
		case nTarget%k != 0:
			return targetErr("cell-size", "%d does not divide the %d target brokers into whole cells", k, nTarget)
		case k < maxRF:
			return targetErr("cell-size", "a cell of %d brokers cannot hold replication factor %d", k, maxRF)
		}
	}
	w.cells = w.splitCells(k)
	for ci, cell := range w.cells {
		for _, b := range cell {
			w.cellOf[b] = int32(ci)
		}
	}
	w.tcell = make([]int32, len(w.tname))
	return nil
}

// rfField names the option a replication factor comes from: the one the
// user gave, or none when the layout itself sets it.
func rfField(o Options) string {
	switch {
	case o.ReplicationFactor > 0:
		return "replication-factor"
	case len(o.Brokers) > 0:
		return "brokers"
	}
	return ""
}

// splitCells splits the target brokers into cells of k brokers so that
// every cell gets as many racks as it can: brokers grouped by rack, dealt
// round robin, so each rack's brokers spread over floor or ceil of their
// share of cells and racks too small to reach every cell reach consecutive
// ones (the most rack-cell pairs any split has, spread within one).
func (w *work) splitCells(k int) [][]int32 {
	var tb []int32
	for b := range w.ids {
		if w.target[b] {
			tb = append(tb, int32(b))
		}
	}
	m := len(tb) / k
	if m <= 1 {
		return [][]int32{tb}
	}
	order := tb
	if w.nrack > 0 {
		byRack := make([][]int32, w.nrack)
		for _, b := range tb {
			byRack[w.rack[b]] = append(byRack[w.rack[b]], b)
		}
		order = slices.Concat(byRack...)
	}
	cells := make([][]int32, m)
	for i, b := range order {
		cells[i%m] = append(cells[i%m], b)
	}
	for _, cell := range cells {
		slices.Sort(cell)
	}
	return cells
}

// holds reports whether partition i has a replica on broker b.
// indexCordons marks Options.Cordon's brokers, which must be target
// brokers: a cordoned broker keeps the replicas it holds but takes no new
// one (KIP-1066).
// Enough others must remain for the largest replication factor, so that a
// replica that has to move always finds a broker.
func (w *work) indexCordons(nTarget, maxRF int) error {
	if len(w.opts.Cordon) == 0 {
		return nil
	}
	w.cordon = make([]bool, w.n())
	n := 0
	for _, id := range w.opts.Cordon {
		b, ok := w.pos[id]
		if !ok || !w.target[b] {
			return targetErr("cordon", "broker %d is not a target broker", id)
		}
		if !w.cordon[b] {
			n++
		}
		w.cordon[b] = true
	}
	if (w.opts.Balance == "" || w.opts.Balance == BalanceReplicas) && nTarget-n < maxRF {
		return targetErr("cordon", "%s cordoned leave %s to take new replicas; replication factor %d needs %d",
			plural(n, "broker"), plural(nTarget-n, "target broker"), maxRF, maxRF)
	}
	return nil
}

// mayTake reports whether broker b may hold partition i in the plan: it
// is not cordoned, or it held i before.
func (w *work) mayTake(i int, b int32) bool {
	return w.cordon == nil || !w.cordon[b] || w.origHas(i, b)
}

func (w *work) holds(i int, b int32) bool {
	return slices.Contains(w.slots[w.off[i]:w.off[i+1]], b)
}

// rackFree reports whether broker b's rack holds fewer than rackCap(i)
// replicas of partition i other than the one in slot skip (-1: none
// skipped).
func (w *work) rackFree(i int, b int32, skip int32) bool {
	if !w.rackAware {
		return true
	}
	r := w.rack[b]
	k := int32(0)
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if s != skip && w.slots[s] >= 0 && w.slots[s] != b && w.rack[w.slots[s]] == r {
			k++
		}
	}
	return k < w.rcap[i]
}

// floorCeil assigns targets floor/ceil of total/len(bs) to brokers bs, the
// ceilings to the brokers with the highest load (ties: tie order).
func floorCeil(bs []int32, total int, load func(int32) int, tie []int32, out []int) {
	if len(bs) == 0 {
		return
	}
	base, extra := total/len(bs), total%len(bs)
	order := slices.Clone(bs)
	slices.SortStableFunc(order, func(a, b int32) int {
		if c := cmp.Compare(load(b), load(a)); c != 0 {
			return c
		}
		return cmp.Compare(tie[a], tie[b])
	})
	for j, b := range order {
		out[b] = base
		if j < extra {
			out[b]++
		}
	}
}

// tieOrder ranks brokers for tie-breaks: by id, or shuffled by opts.Rand.
func (w *work) tieOrder() []int32 {
	tie := make([]int32, w.n())
	for i := range tie {
		tie[i] = int32(i)
	}
	if w.opts.Rand != nil {
		w.opts.Rand.Shuffle(len(tie), func(i, j int) { tie[i], tie[j] = tie[j], tie[i] })
	}
	return tie
}

// idsNote names brokers for a note: "broker 3" or "brokers 3, 5".
func idsNote(ids []int32) string {
	if len(ids) == 1 {
		return fmt.Sprintf("broker %d", ids[0])
	}
	s := make([]string, len(ids))
	for j, id := range ids {
		s[j] = fmt.Sprint(id)
	}
	return "brokers " + strings.Join(s, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
