package reassign

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// JBOD log dirs (Options.Dirs). A broker with several log dirs fills them
// unevenly: Kafka puts a new replica in the dir holding the fewest
// partitions, whatever their sizes, so one dir of a broker within its
// band can run out of disk while another is half empty. After the broker
// plan (any --balance), the dir pass gives each replica a target dir
// (Kafka's reassignment JSON "log_dirs"):
//
//   - a new replica on a broker with at least two dirs goes, largest
//     first, to the least-filled dir that is not cordoned (KIP-1066: a
//     cordoned dir receives nothing);
//   - where the broker's dirs still leave the band around their mean
//     (Options.Tolerance; cordoned dirs only above its top), replicas
//     change dir on the same broker (intra-broker moves, which copy disk
//     to disk, not over the network), with the fewest bytes moved: new
//     replicas first, as they cost nothing more, then the set of kept
//     replicas that covers the excess at the least bytes (choose, as the
//     broker-level bytes plan does);
//   - every other replica gets "any" (Kafka's choice), and so does every
//     replica of a broker with one dir.
//
// Dir loads are bytes when every partition's size is known, replica
// counts otherwise. The pass is pure: it reads the dirs from
// Options.Dirs, rewrites Plan.Changes' log_dirs (adding changes for
// partitions whose replicas stay but change dir) and returns its summary.
// Tests hold its bytes moved within 10% of a brute-force optimum on small
// brokers (dirs_test.go).

// AnyDir is log_dirs' "no preference": the broker chooses.
const AnyDir = "any"

// DirReplica names one replica: a partition on a broker.
type DirReplica struct {
	topology.Key
	Broker int32
}

// BrokerDirs are one broker's log dirs.
type BrokerDirs struct {
	// Dirs are the broker's log dirs, empty ones included.
	Dirs []string
	// Cordoned are those of Dirs that take no new replica (KIP-1066).
	Cordoned []string
}

// DirLayout is where a JBOD cluster's replicas live: a live cluster's
// DescribeLogDirs, or a layout file's log_dirs.
type DirLayout struct {
	// Brokers lists each broker's dirs; a broker missing here has the dirs
	// its replicas are in (Current).
	Brokers map[int32]BrokerDirs
	// Current is each replica's dir now; a replica missing here is in an
	// unknown dir, and its broker gets no dir plan.
	Current map[DirReplica]string
	// Others are what the dirs hold beyond the planned layout's partitions
	// (other topics, when the plan covers some): a fixed load each dir
	// keeps, counted in its balance.
	Others map[DirName]DirLoad
}

// DirName is a broker's log dir.
type DirName struct {
	Broker int32
	Dir    string
}

// DirLoad is what a dir holds: bytes and replicas.
type DirLoad struct {
	Bytes    int64
	Replicas int
}

// DirLayoutOf reads the current dirs of a layout file: each replica's
// log_dirs entry (other than "any"), and as each broker's dirs the ones
// named. It returns nil when no broker has two dirs named.
func DirLayoutOf(c *topology.Cluster) *DirLayout {
	l := &DirLayout{Brokers: map[int32]BrokerDirs{}, Current: map[DirReplica]string{}}
	for i := range c.Partitions {
		p := &c.Partitions[i]
		if len(p.LogDirs) != len(p.Replicas) {
			continue
		}
		for j, r := range p.Replicas {
			d := p.LogDirs[j]
			if d == "" || d == AnyDir {
				continue
			}
			l.Current[DirReplica{p.Key(), r}] = d
			bd := l.Brokers[r]
			if !slices.Contains(bd.Dirs, d) {
				bd.Dirs = append(bd.Dirs, d)
				slices.Sort(bd.Dirs)
				l.Brokers[r] = bd
			}
		}
	}
	if !l.Multi() {
		return nil
	}
	return l
}

// Multi reports whether some broker has at least two dirs.
func (l *DirLayout) Multi() bool {
	if l == nil {
		return false
	}
	for _, bd := range l.Brokers {
		if len(bd.Dirs) > 1 {
			return true
		}
	}
	return false
}

// DirsBalance is the dir side of a plan on a JBOD cluster; its JSON is
// the summary's "log_dirs".
type DirsBalance struct {
	// Unit is "bytes" when every partition's size is known (dirs hold the
	// sum of their replicas' sizes), else "replicas" (counts).
	Unit      string  `json:"unit"`
	Tolerance float64 `json:"tolerance"`
	// Brokers lists each broker with at least two dirs.
	Brokers []BrokerDirBalance `json:"brokers"`
	// Placed counts new replicas given a dir.
	Placed int `json:"placed"`
	// IntraMoves are replicas that change dir on their broker (disk to
	// disk, no network); IntraBytes what they move.
	IntraMoves []IntraMove `json:"intra_moves"`
	IntraBytes int64       `json:"intra_bytes"`
	// IntraBound is the least any placement within the band moves between
	// dirs (Unit "bytes"): each dir's kept bytes above the band's top
	// must leave it, new replicas costing nothing.
	IntraBound int64 `json:"intra_lower_bound"`
	// Within is true when every listed broker's dirs end within the band.
	Within bool `json:"within"`
}

// BrokerDirBalance is one broker's dirs before and after the plan.
type BrokerDirBalance struct {
	Broker int32      `json:"broker"`
	Dirs   []DirBytes `json:"dirs"`
	Within bool       `json:"within"`
	// Skipped says why the broker's replicas keep "any" (a replica's dir
	// unknown), when they do.
	Skipped string `json:"skipped,omitempty"`
}

// DirBytes is one dir's load (Unit) before and after.
type DirBytes struct {
	Dir      string `json:"dir"`
	Cordoned bool   `json:"cordoned,omitempty"`
	Before   int64  `json:"before"`
	After    int64  `json:"after"`
}

// IntraMove is a replica that changes dir on its broker.
type IntraMove struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Broker    int32  `json:"broker"`
	From      string `json:"from"`
	To        string `json:"to"`
	Bytes     int64  `json:"bytes"`
}

// dirItem is one replica on a broker after the plan.
type dirItem struct {
	part int   // index in the final layout
	size int64 // its weight (bytes, or 1)
	cur  int   // its dir now, -1 for a new replica
	dst  int   // its dir after the pass
}

// dirBroker is one broker's dir problem.
type dirBroker struct {
	items    []dirItem
	load     []int64
	cordoned []bool
	tol      float64
	// noExact skips the exact search (tests of the greedy steps alone).
	noExact bool
	// fixed is what each dir holds that the pass does not place (nil:
	// nothing).
	fixed []int64
}

// moveCost is what placing item it in dir d costs: nothing for a new
// replica or one staying, its size for a kept replica changing dir.
func (it *dirItem) moveCost(d int) int64 {
	if it.cur < 0 || it.cur == d {
		return 0
	}
	return it.size
}

// band returns the least and most a dir may hold.
func (db *dirBroker) band() (float64, float64) {
	var total int64
	for _, l := range db.load {
		total += l
	}
	mean := float64(total) / float64(len(db.load))
	return mean * (1 - db.tol), mean * (1 + db.tol)
}

// floor is the least dir d may end with (nothing when cordoned: it cannot
// be filled).
func (db *dirBroker) floor(d int, lo float64) float64 {
	if db.cordoned[d] {
		return 0
	}
	return lo
}

// within reports whether every dir is within the band (cordoned ones only
// below its top). A small absolute slack absorbs float rounding.
func (db *dirBroker) within() bool {
	lo, hi := db.band()
	for d, l := range db.load {
		if float64(l) > hi+1e-6 || float64(l) < db.floor(d, lo)-1e-6 {
			return false
		}
	}
	return true
}

// least returns the least-filled dir that is not cordoned, other than
// except; -1 when none.
func (db *dirBroker) least(except int) int {
	best := -1
	for d, l := range db.load {
		if d == except || db.cordoned[d] {
			continue
		}
		if best < 0 || l < db.load[best] {
			best = d
		}
	}
	return best
}

// solve places the new replicas and repairs dirs outside the band.
func (db *dirBroker) solve() {
	for d, f := range db.fixed {
		db.load[d] += f
	}
	for i := range db.items {
		if it := &db.items[i]; it.cur >= 0 {
			it.dst = it.cur
			db.load[it.cur] += it.size
		}
	}
	order := make([]int, 0, len(db.items))
	for i := range db.items {
		if db.items[i].cur < 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(db.items[b].size, db.items[a].size) })
	for _, i := range order {
		d := db.least(-1)
		if d < 0 {
			d = 0 // every dir cordoned: the broker takes nothing new anyway
		}
		db.items[i].dst = d
		db.load[d] += db.items[i].size
	}
	for pass := 0; pass < 4*len(db.load)+4 && !db.within(); pass++ {
		if !db.shed() && !db.pull() {
			break
		}
	}
	db.undo()
	db.improve()
	if len(db.items) <= exactLimit && !db.noExact {
		db.exact()
	}
}

// exactLimit is the most replicas of a broker that exact searches: with
// few, coarse replicas a local optimum can move twice the bytes needed,
// and a bounded search over every placement is cheap.
const exactLimit = 16

// exactNodes bounds exact's search; past it the best placement found so
// far (at worst the local search's) stands.
const exactNodes = 400_000

// exact searches every placement of the items (largest first), pruned by
// bytes moved and by loads already above the band, and keeps the one
// within the band that moves the fewest bytes, if it beats the current.
func (db *dirBroker) exact() {
	n, nd := len(db.items), len(db.load)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(db.items[b].size, db.items[a].size) })
	_, hi := db.band()
	bestCost, found := int64(math.MaxInt64), false
	if db.within() {
		bestCost = db.cost()
	}
	best := make([]int, n)
	cur := make([]int, n)
	load := make([]int64, nd)
	copy(load, db.fixed)
	nodes := 0
	var rec func(k int, cost int64)
	rec = func(k int, cost int64) {
		nodes++
		if cost >= bestCost || nodes > exactNodes {
			return
		}
		if k == n {
			saved := db.load
			db.load = load
			ok := db.within()
			db.load = saved
			if ok {
				bestCost, found = cost, true
				copy(best, cur)
			}
			return
		}
		i := order[k]
		it := &db.items[i]
		// Its own dir first: the cheapest branch, found early.
		for x := -1; x < nd; x++ {
			d := x
			if x < 0 {
				d = it.cur
			}
			if d < 0 || (x >= 0 && d == it.cur) {
				continue
			}
			if !db.allowed(i, d) || float64(load[d]+it.size) > hi+1e-6 {
				continue
			}
			cur[i] = d
			load[d] += it.size
			rec(k+1, cost+it.moveCost(d))
			load[d] -= it.size
		}
	}
	rec(0, 0)
	if !found {
		return
	}
	for i, d := range best {
		db.set(i, d)
	}
}

// intraBound is, before solve, the bytes any placement within the band
// moves out of dirs: each dir's kept load (fixed and kept replicas) above
// the band's top.
func (db *dirBroker) intraBound() int64 {
	kept := make([]int64, len(db.load))
	copy(kept, db.fixed)
	var total int64
	for _, f := range db.fixed {
		total += f
	}
	for _, it := range db.items {
		total += it.size
		if it.cur >= 0 {
			kept[it.cur] += it.size
		}
	}
	hi := float64(total) / float64(len(kept)) * (1 + db.tol)
	var b int64
	for _, k := range kept {
		b += int64(max(0, math.Ceil(float64(k)-hi)))
	}
	return b
}

// localLimit bounds the replicas of a broker for which improve tries
// every pair of moves: quadratic, it only pays where replicas are few and
// coarse, which is where the greedy steps miss (small brokers); with
// thousands of replicas the greedy's steps are fine enough, and single
// moves only run while the dirs are outside the band.
const localLimit = 64

// violation is how far the dirs are outside the band, summed.
func (db *dirBroker) violation() float64 {
	lo, hi := db.band()
	v := 0.0
	for d, l := range db.load {
		v += max(0, float64(l)-hi) + max(0, db.floor(d, lo)-float64(l))
	}
	return v
}

// allowed reports whether item i may end in dir d: not a cordoned dir
// unless it is the replica's own.
func (db *dirBroker) allowed(i, d int) bool {
	return !db.cordoned[d] || db.items[i].cur == d
}

// set moves item i to dir d and returns the change in cost.
func (db *dirBroker) set(i, d int) int64 {
	it := &db.items[i]
	dc := it.moveCost(d) - it.moveCost(it.dst)
	db.load[it.dst] -= it.size
	db.load[d] += it.size
	it.dst = d
	return dc
}

// improve is a local search over moves of one or two replicas: first
// towards the band (the least violation, then the least cost), then,
// within it, towards fewer bytes moved. It stops at a local optimum.
func (db *dirBroker) improve() {
	n := len(db.items)
	pairs := n <= localLimit
	if !pairs && db.within() {
		return
	}
	rounds := 4*n + 16
	if !pairs {
		rounds = 64
	}
	const eps = 1e-9
	nd := len(db.load)
	for range rounds {
		bestV, bestC := db.violation(), int64(0)
		bi, bj, bdi, bdj := -1, -1, -1, -1
		consider := func(dc int64, i, di, j, dj int) {
			v := db.violation()
			if v < bestV-eps || (math.Abs(v-bestV) <= eps && dc < bestC) {
				bestV, bestC, bi, bdi, bj, bdj = v, dc, i, di, j, dj
			}
		}
		for i := range n {
			a := db.items[i].dst
			for d := range nd {
				if d == a || !db.allowed(i, d) {
					continue
				}
				dc := db.set(i, d)
				consider(dc, i, d, -1, -1)
				if pairs {
					for j := i + 1; j < n; j++ {
						b := db.items[j].dst
						for e := range nd {
							if e == b || !db.allowed(j, e) {
								continue
							}
							dc2 := db.set(j, e)
							consider(dc+dc2, i, d, j, e)
							db.set(j, b)
						}
					}
				}
				db.set(i, a)
			}
		}
		if bi < 0 {
			return
		}
		db.set(bi, bdi)
		if bj >= 0 {
			db.set(bj, bdj)
		}
	}
}

// cost is the bytes the broker's intra-broker moves copy.
func (db *dirBroker) cost() int64 {
	var c int64
	for i := range db.items {
		c += db.items[i].moveCost(db.items[i].dst)
	}
	return c
}

// shift moves the items of dir a named by idx to dir d.
func (db *dirBroker) shift(idx []int32, a, d int) {
	for _, i := range idx {
		it := &db.items[i]
		it.dst = d
		db.load[a] -= it.size
		db.load[d] += it.size
	}
}

// cands lists the items in dir a with their cost of moving to d.
func (db *dirBroker) cands(a, d int) []cand {
	var out []cand
	for i := range db.items {
		it := &db.items[i]
		if it.dst == a {
			out = append(out, cand{s: int32(i), size: it.size, cost: it.moveCost(d) - it.moveCost(a)})
		}
	}
	return out
}

// shed moves items off the fullest dir above the band to the least-filled
// one, and reports whether any moved.
func (db *dirBroker) shed() bool {
	lo, hi := db.band()
	a := -1
	for d, l := range db.load {
		if float64(l) > hi+1e-6 && (a < 0 || l > db.load[a]) {
			a = d
		}
	}
	if a < 0 {
		return false
	}
	d := db.least(a)
	if d < 0 {
		return false
	}
	need := float64(db.load[a]) - hi
	room := min(float64(db.load[a])-db.floor(a, lo), hi-float64(db.load[d]))
	if room <= 0 {
		room = float64(db.load[a]-db.load[d]) / 2 // still narrows the gap
	}
	idx := choose(db.cands(a, d), need, room)
	if len(idx) == 0 {
		return false
	}
	db.shift(idx, a, d)
	return true
}

// pull fills the emptiest dir below the band from the fullest one, and
// reports whether any moved.
func (db *dirBroker) pull() bool {
	lo, hi := db.band()
	d := -1
	for x, l := range db.load {
		if !db.cordoned[x] && float64(l) < lo-1e-6 && (d < 0 || l < db.load[d]) {
			d = x
		}
	}
	if d < 0 {
		return false
	}
	a := -1
	for x, l := range db.load {
		if x != d && (a < 0 || l > db.load[a]) {
			a = x
		}
	}
	if a < 0 {
		return false
	}
	need := lo - float64(db.load[d])
	room := min(hi-float64(db.load[d]), float64(db.load[a])-db.floor(a, lo))
	if room <= 0 {
		room = float64(db.load[a]-db.load[d]) / 2
	}
	idx := choose(db.cands(a, d), need, room)
	if len(idx) == 0 {
		return false
	}
	db.shift(idx, a, d)
	return true
}

// undo sends kept replicas back to their own dir, largest first, where
// the dirs stay within the band: the repair may have moved more than
// needed.
func (db *dirBroker) undo() {
	if !db.within() {
		return
	}
	var moved []int
	for i := range db.items {
		if it := &db.items[i]; it.cur >= 0 && it.dst != it.cur {
			moved = append(moved, i)
		}
	}
	slices.SortStableFunc(moved, func(a, b int) int { return cmp.Compare(db.items[b].size, db.items[a].size) })
	for _, i := range moved {
		it := &db.items[i]
		from := it.dst
		db.shift([]int32{int32(i)}, from, it.cur)
		if !db.within() {
			db.shift([]int32{int32(i)}, it.cur, from)
		}
	}
}

// planDirs runs the dir pass over pl (planned from c) and returns its
// summary; nil when opts.Dirs names no broker with two dirs.
func planDirs(c *topology.Cluster, pl *Plan, opts Options) *DirsBalance {
	l := opts.Dirs
	if !l.Multi() {
		return nil
	}
	final := pl.Final
	unit, sizeOf := "bytes", func(p *topology.Partition) int64 { return p.SizeBytes }
	for i := range c.Partitions {
		if c.Partitions[i].SizeBytes < 0 {
			unit, sizeOf = "replicas", func(*topology.Partition) int64 { return 1 }
			break
		}
	}
	// The dirs of every broker: Brokers, else the dirs its replicas are in.
	dirsOf := map[int32]*BrokerDirs{}
	for b, bd := range l.Brokers {
		dirsOf[b] = &BrokerDirs{Dirs: slices.Sorted(slices.Values(bd.Dirs)), Cordoned: bd.Cordoned}
	}
	for r, d := range l.Current {
		bd := dirsOf[r.Broker]
		if bd == nil {
			bd = &BrokerDirs{}
			dirsOf[r.Broker] = bd
		}
		if !slices.Contains(bd.Dirs, d) {
			bd.Dirs = append(bd.Dirs, d)
			slices.Sort(bd.Dirs)
		}
	}
	out := &DirsBalance{Unit: unit, Tolerance: opts.Tolerance, Within: true, IntraMoves: []IntraMove{}}
	brokers := make([]int32, 0, len(dirsOf))
	for b, bd := range dirsOf {
		if len(bd.Dirs) > 1 {
			brokers = append(brokers, b)
		}
	}
	slices.Sort(brokers)
	// Which final partitions each broker holds, and which it held.
	holds, held := map[int32][]int{}, map[int32][]int{}
	for i := range final.Partitions {
		for _, r := range final.Partitions[i].Replicas {
			holds[r] = append(holds[r], i)
		}
	}
	for i := range c.Partitions {
		for _, r := range c.Partitions[i].Replicas {
			held[r] = append(held[r], i)
		}
	}
	target := map[DirReplica]string{}
	for _, b := range brokers {
		bd := dirsOf[b]
		index := make(map[string]int, len(bd.Dirs))
		for d, name := range bd.Dirs {
			index[name] = d
		}
		before := make([]int64, len(bd.Dirs))
		db := &dirBroker{load: make([]int64, len(bd.Dirs)), cordoned: make([]bool, len(bd.Dirs)), tol: opts.Tolerance}
		for _, name := range bd.Cordoned {
			if d, ok := index[name]; ok {
				db.cordoned[d] = true
			}
		}
		skipped := ""
		// Others stay where they are, in both columns.
		for d, name := range bd.Dirs {
			o := l.Others[DirName{b, name}]
			fixed := o.Bytes
			if unit == "replicas" {
				fixed = int64(o.Replicas)
			}
			before[d] += fixed
			db.fixed = append(db.fixed, fixed)
		}
		// Before: what the broker holds now, in its dirs now.
		for _, i := range held[b] {
			p := &c.Partitions[i]
			name, ok := l.Current[DirReplica{p.Key(), b}]
			if !ok {
				skipped = fmt.Sprintf("the dir of %s on broker %d is unknown", p.Key(), b)
				break
			}
			before[index[name]] += sizeOf(p)
		}
		if skipped == "" {
			for _, i := range holds[b] {
				p := &final.Partitions[i]
				it := dirItem{part: i, size: sizeOf(p), cur: -1}
				if name, ok := l.Current[DirReplica{p.Key(), b}]; ok {
					it.cur = index[name]
				} else if j := c.Find(p.Key()); j >= 0 && slices.Contains(c.Partitions[j].Replicas, b) {
					skipped = fmt.Sprintf("the dir of %s on broker %d is unknown", p.Key(), b)
					break
				}
				db.items = append(db.items, it)
			}
		}
		bb := BrokerDirBalance{Broker: b, Skipped: skipped, Within: true}
		if skipped == "" {
			if unit == "bytes" {
				out.IntraBound += db.intraBound()
			}
			db.solve()
			bb.Within = db.within()
			for _, it := range db.items {
				p := &final.Partitions[it.part]
				switch {
				case it.cur < 0:
					out.Placed++
				case it.dst != it.cur:
					out.IntraMoves = append(out.IntraMoves, IntraMove{Topic: p.Topic, Partition: p.Partition, Broker: b,
						From: bd.Dirs[it.cur], To: bd.Dirs[it.dst], Bytes: max(p.SizeBytes, 0)})
					out.IntraBytes += max(p.SizeBytes, 0)
				default:
					continue // stays where it is: "any"
				}
				target[DirReplica{p.Key(), b}] = bd.Dirs[it.dst]
			}
		}
		out.Within = out.Within && bb.Within
		for d, name := range bd.Dirs {
			bb.Dirs = append(bb.Dirs, DirBytes{Dir: name, Cordoned: slices.Contains(bd.Cordoned, name), Before: before[d], After: before[d]})
		}
		if skipped == "" {
			for d, v := range db.load {
				bb.Dirs[d].After = v
			}
		}
		out.Brokers = append(out.Brokers, bb)
	}
	slices.SortFunc(out.IntraMoves, func(a, b IntraMove) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Broker, b.Broker))
	})
	pl.applyDirs(c, target, l)
	pl.Summary.ChangedPartitions = len(pl.Changes)
	return out
}

// applyDirs writes the target dirs into the changes' log_dirs ("any"
// where none), adding a change for each partition whose replicas stay but
// some replica changes dir; the rollback's log_dirs name the dirs now.
func (pl *Plan) applyDirs(c *topology.Cluster, target map[DirReplica]string, l *DirLayout) {
	if len(target) == 0 {
		return
	}
	byKey := map[topology.Key]int{}
	for i := range pl.Changes {
		byKey[pl.Changes[i].New.Key()] = i
	}
	touched := map[topology.Key]bool{}
	for r := range target {
		touched[r.Key] = true
	}
	added := false
	for k := range touched {
		if _, ok := byKey[k]; ok {
			continue
		}
		j := c.Find(k)
		f := pl.Final.Find(k)
		if j < 0 || f < 0 {
			continue
		}
		p := &c.Partitions[j]
		pl.Changes = append(pl.Changes, Change{New: pl.Final.Partitions[f].Clone(), Old: p.Clone()})
		added = true
	}
	if added {
		slices.SortFunc(pl.Changes, func(a, b Change) int { return topology.ComparePartitions(a.New, b.New) })
	}
	for i := range pl.Changes {
		ch := &pl.Changes[i]
		k := ch.New.Key()
		if !touched[k] {
			continue
		}
		ch.New.LogDirs = make([]string, len(ch.New.Replicas))
		for j, r := range ch.New.Replicas {
			d, ok := target[DirReplica{k, r}]
			if !ok {
				d = AnyDir
			}
			ch.New.LogDirs[j] = d
		}
		if ch.Old.LogDirs == nil {
			old := make([]string, len(ch.Old.Replicas))
			for j, r := range ch.Old.Replicas {
				d, ok := l.Current[DirReplica{k, r}]
				if !ok {
					d = AnyDir
				}
				old[j] = d
			}
			ch.Old.LogDirs = old
		}
	}
}
