package audit

import (
	"cmp"
	"runtime"
	"slices"
	"sync"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Domain is what fails together in a failover figure: one broker, or every
// broker of one rack.
type Domain string

// The failure domains.
const (
	DomainBroker Domain = "broker"
	DomainRack   Domain = "rack"
)

// LossFigure is the leader count after one loss (a broker, or a rack's
// brokers) once Kafka has elected new leaders by its clean rule: the
// busiest survivor's leaders against the best any replica order of the same
// replica sets could do, ceil(online partitions / survivors).
type LossFigure struct {
	Domain Domain `json:"domain"`
	// Lost are the brokers lost, sorted; Rack names the rack for a rack loss.
	Lost []int32 `json:"lost"`
	Rack string  `json:"rack,omitempty"`
	// Survivors counts the live brokers left.
	Survivors int `json:"survivors"`
	// Online counts the partitions with a leader after the loss; Offline
	// those the loss leaves without one (no live in-sync replica).
	Online  int `json:"online_partitions"`
	Offline int `json:"offline_partitions"`
	// Moved counts the leaderships the loss hands to survivors.
	Moved int `json:"moved_leaders"`
	// Busiest is the survivor leading the most partitions after the loss
	// (lowest id on ties), and BusiestLeaders how many it leads.
	Busiest        int32 `json:"busiest"`
	BusiestLeaders int   `json:"busiest_leaders"`
	// Optimum is ceil(Online / Survivors); Excess is BusiestLeaders - Optimum.
	Optimum int `json:"optimum"`
	Excess  int `json:"excess"`
}

// TopicFailover is one topic's worst loss: the loss (of the domain
// evaluated) that leaves the topic's busiest survivor furthest above its
// optimum, ceil(the topic's online partitions / the surviving brokers
// holding a replica of it).
type TopicFailover struct {
	Topic          string  `json:"topic"`
	Lost           []int32 `json:"lost"`
	Rack           string  `json:"rack,omitempty"`
	Busiest        int32   `json:"busiest"`
	BusiestLeaders int     `json:"busiest_leaders"`
	Optimum        int     `json:"optimum"`
	Excess         int     `json:"excess"`
}

// FailoverLosses returns the figure of every loss of the domain in c: one
// per live broker (DomainBroker), or one per rack with at least one live
// broker (DomainRack; brokers without a rack belong to none). Losses are
// in broker id or rack name order. Brokers already down (Missing) are
// neither lost nor survivors; partitions already offline count nowhere.
// It costs O(partitions x RF + losses x brokers).
func FailoverLosses(c *topology.Cluster, d Domain) []LossFigure {
	return newFailover(newElectModel(c), d).losses()
}

// Failover returns FailoverLosses and TopicFailovers of one domain at the
// cost of one: the election model is built once for both.
func Failover(c *topology.Cluster, d Domain) ([]LossFigure, []TopicFailover) {
	f := newFailover(newElectModel(c), d)
	return f.losses(), f.topics()
}

// WorstLoss returns the loss of losses with the largest excess (then the
// busiest survivor with the most leaders, then the first in order), or nil
// when losses is empty.
func WorstLoss(losses []LossFigure) *LossFigure {
	var w *LossFigure
	for i := range losses {
		l := &losses[i]
		if w == nil || l.Excess > w.Excess || (l.Excess == w.Excess && l.BusiestLeaders > w.BusiestLeaders) {
			w = l
		}
	}
	if w == nil {
		return nil
	}
	out := *w
	return &out
}

// TopicFailovers returns, for every topic with an excess above zero under
// some loss of the domain, its worst loss; sorted by excess, then topic.
// It costs O(partitions x RF) plus a sort of each topic's brokers.
func TopicFailovers(c *topology.Cluster, d Domain) []TopicFailover {
	return newFailover(newElectModel(c), d).topics()
}

// electModel is the layout as the failover figures read it, built in one
// pass over c's partitions: broker positions resolved once, and no
// Partition (with its topic string and four slices) read again, so every
// later pass streams a few dense arrays.
type electModel struct {
	c    *topology.Cluster
	ix   *topology.Index
	down []bool // brokers already down (Missing)
	live int
	// topicStart[t] is topic t's first partition; one more entry ends the
	// last topic.
	topicStart []int32
	// lpos is each partition's leader position, or -1 (no leader, an
	// unknown broker, or one already down).
	lpos []int32
	// Partition i's replicas are rep[off[i]:off[i+1]] in assignment order:
	// broker positions, -1 for an unknown broker; elig marks those alive,
	// in sync and not offline, the replicas Kafka may elect.
	off  []int32
	rep  []int32
	elig []bool
}

func newElectModel(c *topology.Cluster) *electModel {
	ix := topology.NewIndex(c.Brokers)
	m := &electModel{c: c, ix: ix, down: make([]bool, ix.Len()), lpos: make([]int32, len(c.Partitions)), off: make([]int32, len(c.Partitions)+1)}
	for j, b := range c.Brokers {
		m.down[j] = b.Missing
		if !b.Missing {
			m.live++
		}
	}
	for i := range c.Partitions {
		p := &c.Partitions[i]
		if i == 0 || p.Topic != c.Partitions[i-1].Topic {
			m.topicStart = append(m.topicStart, int32(i))
		}
		m.lpos[i] = -1
		if lj, ok := ix.Pos(p.Leader); ok && p.Leader != topology.NoLeader && !m.down[lj] {
			m.lpos[i] = int32(lj)
		}
		m.off[i+1] = m.off[i] + int32(len(p.Replicas))
	}
	m.rep, m.elig = make([]int32, m.off[len(c.Partitions)]), make([]bool, m.off[len(c.Partitions)])
	// Each partition fills its own slots: ranges of partitions run side by
	// side.
	workers := max(1, min(fillWorkers, len(c.Partitions)/fillChunk))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { m.fill(w*len(c.Partitions)/workers, (w+1)*len(c.Partitions)/workers) })
	}
	wg.Wait()
	m.topicStart = append(m.topicStart, int32(len(c.Partitions)))
	return m
}

// fillWorkers and fillChunk bound newElectModel's goroutines: at most
// fillWorkers, each over at least fillChunk partitions. Tests lower them.
var (
	fillWorkers = runtime.GOMAXPROCS(0)
	fillChunk   = 1 << 16
)

// fill sets the replica positions and electability of partitions [from, to).
func (m *electModel) fill(from, to int) {
	for i := from; i < to; i++ {
		p := &m.c.Partitions[i]
		x := m.off[i]
		for k, r := range p.Replicas {
			j, ok := m.ix.Pos(r)
			if !ok {
				m.rep[int(x)+k] = -1
				continue
			}
			m.rep[int(x)+k] = int32(j)
			// Without an ISR list every replica is in sync.
			m.elig[int(x)+k] = !m.down[j] && (p.ISR == nil || slices.Contains(p.ISR, r)) && (len(p.Offline) == 0 || !slices.Contains(p.Offline, r))
		}
	}
}

// failover holds the dense arrays of one domain's evaluation.
type failover struct {
	c  *topology.Cluster
	m  *electModel
	ix *topology.Index
	d  Domain
	// down marks brokers already down (Missing).
	down []bool
	// units are the loss units (broker positions per unit); unitOf maps a
	// broker position to its unit, or -1.
	units  [][]int
	names  []string
	unitOf []int
	// base is each broker's leader count before the loss (online partitions).
	base   []int
	online int
	// lead[u] lists the partitions led by unit u's brokers; succ[i] is
	// partition i's successor's broker position once its leader's unit is
	// lost, or -1 (offline).
	lead [][]int32
	succ []int32
	// lpos is each partition's leader position, or -1.
	lpos []int32
}

func newFailover(m *electModel, d Domain) *failover {
	c, ix := m.c, m.ix
	n := ix.Len()
	f := &failover{c: c, m: m, ix: ix, d: d, down: m.down, unitOf: make([]int, n), base: make([]int, n)}
	for j := range f.unitOf {
		f.unitOf[j] = -1
	}
	switch d {
	case DomainRack:
		byRack := map[string]int{}
		for j, b := range c.Brokers {
			if b.Missing || b.Rack == "" {
				continue
			}
			u, ok := byRack[b.Rack]
			if !ok {
				u = len(f.units)
				byRack[b.Rack] = u
				f.units = append(f.units, nil)
				f.names = append(f.names, b.Rack)
			}
			f.units[u] = append(f.units[u], j)
			f.unitOf[j] = u
		}
		// Rack name order.
		order := make([]int, len(f.units))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.names[a], f.names[b]) })
		units, names := make([][]int, len(order)), make([]string, len(order))
		for k, u := range order {
			units[k], names[k] = f.units[u], f.names[u]
			for _, j := range f.units[u] {
				f.unitOf[j] = k
			}
		}
		f.units, f.names = units, names
	default:
		for j, b := range c.Brokers {
			if b.Missing {
				continue
			}
			f.unitOf[j] = len(f.units)
			f.units = append(f.units, []int{j})
			f.names = append(f.names, "")
		}
	}
	// Presize each unit's list of led partitions: one counting pass over
	// the leader positions is cheaper than growing them.
	counts := make([]int, len(f.units))
	for _, lj := range m.lpos {
		if lj >= 0 {
			if u := f.unitOf[lj]; u >= 0 {
				counts[u]++
			}
		}
	}
	f.lead = make([][]int32, len(f.units))
	for u, k := range counts {
		f.lead[u] = make([]int32, 0, k)
	}
	f.succ = make([]int32, len(m.lpos))
	f.lpos = m.lpos
	for i, lj := range m.lpos {
		f.succ[i] = -1
		if lj < 0 {
			continue
		}
		f.base[lj]++
		f.online++
		u := f.unitOf[lj]
		if u < 0 {
			continue
		}
		f.lead[u] = append(f.lead[u], int32(i))
		for k := m.off[i]; k < m.off[i+1]; k++ {
			if j := m.rep[k]; m.elig[k] && f.unitOf[j] != u {
				f.succ[i] = j
				break
			}
		}
	}
	return f
}

func (f *failover) losses() []LossFigure {
	out := make([]LossFigure, len(f.units))
	gain := make([]int, f.ix.Len())
	// Live brokers by leaders before the loss, most first, then id: the
	// busiest survivor that gains nothing is the first not lost.
	byBase := make([]int, 0, f.m.live)
	for j := range gain {
		if !f.down[j] {
			byBase = append(byBase, j)
		}
	}
	slices.SortFunc(byBase, func(a, b int) int {
		if c := cmp.Compare(f.base[b], f.base[a]); c != 0 {
			return c
		}
		return cmp.Compare(f.ix.ID(a), f.ix.ID(b))
	})
	for u := range f.units {
		out[u] = f.figure(u, gain, byBase)
	}
	return out
}

// figure evaluates the loss of unit u; gain is zeroed scratch, one entry
// per broker position, left zeroed; byBase the live brokers by leaders,
// most first, then id.
func (f *failover) figure(u int, gain, byBase []int) LossFigure {
	lf := LossFigure{Domain: f.d, Rack: f.names[u], Lost: make([]int32, 0, len(f.units[u]))}
	for _, j := range f.units[u] {
		lf.Lost = append(lf.Lost, f.ix.ID(j))
	}
	slices.Sort(lf.Lost)
	for _, i := range f.lead[u] {
		if s := f.succ[i]; s >= 0 {
			gain[s]++
			lf.Moved++
		} else {
			lf.Offline++
		}
	}
	lf.Online = f.online - lf.Offline
	lf.Survivors = f.m.live - len(f.units[u])
	lf.Busiest, lf.BusiestLeaders = topology.NoLeader, -1
	consider := func(j, v int) {
		if id := f.ix.ID(j); v > lf.BusiestLeaders || (v == lf.BusiestLeaders && id < lf.Busiest) {
			lf.Busiest, lf.BusiestLeaders = id, v
		}
	}
	for _, i := range f.lead[u] {
		if s := f.succ[i]; s >= 0 {
			consider(int(s), f.base[s]+gain[s])
		}
	}
	for _, j := range byBase {
		if f.unitOf[j] != u && gain[j] == 0 {
			consider(j, f.base[j])
			break
		}
	}
	for _, i := range f.lead[u] {
		if s := f.succ[i]; s >= 0 {
			gain[s] = 0
		}
	}
	if lf.Survivors == 0 {
		lf.Busiest, lf.BusiestLeaders = topology.NoLeader, 0
		return lf
	}
	lf.Optimum = ceilDiv(lf.Online, lf.Survivors)
	lf.Excess = lf.BusiestLeaders - lf.Optimum
	return lf
}

// topics evaluates every topic under every loss that takes one of its
// leaders. Per topic and loss, only the brokers gaining leaders change:
// the busiest survivor is the busiest of them or the busiest broker that
// neither gains nor is lost, the first such in the topic's leaders sorted
// by leaders (most first), then id. So a loss costs its lost leaderships
// plus the lost brokers skipped in that order, not every broker, and a
// topic a sort of its leader brokers.
func (f *failover) topics() []TopicFailover {
	return f.topicsOn(runtime.GOMAXPROCS(0))
}

// topicsOn is topics on up to workers goroutines, each over its own range of
// topics with its own scratch; the result is sorted, so it is the same at
// any number of workers (TestFailoverTopicsWorkersAgree).
func (f *failover) topicsOn(workers int) []TopicFailover {
	n := f.ix.Len()
	// rank orders broker positions by id, for ties.
	rank := make([]uint32, n)
	byID := make([]int, n)
	for j := range byID {
		byID[j] = j
	}
	slices.SortFunc(byID, func(a, b int) int { return cmp.Compare(f.ix.ID(a), f.ix.ID(b)) })
	for r, j := range byID {
		rank[j] = uint32(r)
	}
	topics := len(f.m.topicStart) - 1
	workers = max(1, min(workers, topics/64))
	parts := make([][]TopicFailover, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			parts[w] = f.topicRange(w*topics/workers, (w+1)*topics/workers, rank, byID)
		})
	}
	wg.Wait()
	out := slices.Concat(parts...)
	slices.SortFunc(out, func(a, b TopicFailover) int {
		if c := cmp.Compare(b.Excess, a.Excess); c != 0 {
			return c
		}
		return cmp.Compare(a.Topic, b.Topic)
	})
	return out
}

// topicRange returns the worst loss of each topic index in [from, to) that
// has one, in topic order.
func (f *failover) topicRange(from, to int, rank []uint32, byID []int) []TopicFailover {
	n := f.ix.Len()
	t := &topicScratch{base: make([]int, n), gain: make([]int, n), lostIn: make([]int, len(f.units)), byRank: byID}
	holds := make([]bool, n)
	var out []TopicFailover
	m := f.m
	for ti := from; ti < to; ti++ {
		i, end := int(m.topicStart[ti]), int(m.topicStart[ti+1])
		t.touched, t.led, t.order = t.touched[:0], t.led[:0], t.order[:0]
		online := 0
		for k := i; k < end; k++ {
			for x := m.off[k]; x < m.off[k+1]; x++ {
				if j := m.rep[x]; j >= 0 && !f.down[j] && !holds[j] {
					holds[j] = true
					t.touched = append(t.touched, int(j))
				}
			}
			lj := f.lpos[k]
			if lj < 0 {
				continue
			}
			if t.base[lj] == 0 {
				t.order = append(t.order, uint64(rank[lj]))
			}
			t.base[lj]++
			online++
			if u := f.unitOf[lj]; u >= 0 {
				t.led = append(t.led, uint64(u)<<32|uint64(k))
			}
		}
		if worst := f.topicWorst(f.c.Partitions[i].Topic, online, t); worst != nil {
			out = append(out, *worst)
		}
		for _, j := range t.touched {
			t.base[j], holds[j] = 0, false
		}
	}
	return out
}

// topicScratch is topics' working memory, one entry per broker position
// (base, gain, byRank) or loss unit (lostIn), reused from topic to topic.
type topicScratch struct {
	// base holds the topic's leaders per broker; gain and lostIn are zero
	// between topics.
	base, gain, lostIn []int
	// byRank maps an id rank back to a broker position.
	byRank []int
	// touched are the live brokers holding a replica of the topic; led
	// its partitions led by a loss unit's broker (unit<<32 | partition);
	// order its leader brokers by id rank, then by leaders, most first
	// ((^leaders)<<32 | rank).
	touched []int
	led     []uint64
	order   []uint64
}

// topicWorst returns one topic's worst loss, or nil when no loss leaves
// its busiest survivor above its optimum.
func (f *failover) topicWorst(name string, online int, t *topicScratch) *TopicFailover {
	if len(t.led) == 0 {
		return nil
	}
	base, gain, lostIn := t.base, t.gain, t.lostIn
	for _, j := range t.touched {
		if u := f.unitOf[j]; u >= 0 {
			lostIn[u]++
		}
	}
	defer func() {
		for _, j := range t.touched {
			if u := f.unitOf[j]; u >= 0 {
				lostIn[u] = 0
			}
		}
	}()
	for k, r := range t.order {
		t.order[k] = uint64(^uint32(base[t.byRank[r]]))<<32 | r
	}
	slices.Sort(t.order)
	slices.Sort(t.led)
	var worst *TopicFailover
	led := t.led
	for a := 0; a < len(led); {
		u := int(led[a] >> 32)
		b, offline := a, 0
		for ; b < len(led) && int(led[b]>>32) == u; b++ {
			if s := f.succ[uint32(led[b])]; s >= 0 {
				gain[s]++
			} else {
				offline++
			}
		}
		busiest, most := topology.NoLeader, -1
		consider := func(j, v int) {
			if id := f.ix.ID(j); v > most || (v == most && id < busiest) {
				busiest, most = id, v
			}
		}
		for k := a; k < b; k++ {
			if s := int(f.succ[uint32(led[k])]); s >= 0 {
				consider(s, base[s]+gain[s])
			}
		}
		found := false
		for _, key := range t.order {
			if j := t.byRank[uint32(key)]; f.unitOf[j] != u && gain[j] == 0 {
				consider(j, base[j])
				found = true
				break
			}
		}
		if !found {
			// Every leader broker is lost or gains: the others lead none.
			for _, j := range t.touched {
				if f.unitOf[j] != u && gain[j] == 0 {
					consider(j, 0)
				}
			}
		}
		for k := a; k < b; k++ {
			if s := f.succ[uint32(led[k])]; s >= 0 {
				gain[s] = 0
			}
		}
		surv := len(t.touched) - lostIn[u]
		if surv > 0 {
			opt := ceilDiv(online-offline, surv)
			if e := most - opt; e > 0 && (worst == nil || e > worst.Excess) {
				tf := TopicFailover{Topic: name, Rack: f.names[u], Busiest: busiest, BusiestLeaders: most, Optimum: opt, Excess: e}
				for _, j := range f.units[u] {
					tf.Lost = append(tf.Lost, f.ix.ID(j))
				}
				slices.Sort(tf.Lost)
				worst = &tf
			}
		}
		a = b
	}
	return worst
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
