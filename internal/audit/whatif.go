package audit

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/kplan-dev/kplan/internal/topology"
)

// MaxListed bounds the partitions a what-if lists per lost broker; the
// counts are always exact.
const MaxListed = 1000

// WhatIf is what losing one broker would do to the layout.
type WhatIf struct {
	Broker int32 `json:"broker"`
	// LeadersMoved counts partitions the broker led that elect a new
	// leader; those left with no one to elect count in OfflineCount
	// instead.
	LeadersMoved int `json:"leaders_moved"`
	// OfflinePartitions had no other live in-sync replica (the first
	// MaxListed, sorted); OfflineCount is exact.
	OfflinePartitions []string `json:"offline_partitions"`
	OfflineCount      int      `json:"offline_count"`
	// Elections lists every partition the broker led, in partition order,
	// with the leader Kafka would elect: LeadersMoved + OfflineCount
	// entries, so a real kill can be checked against it partition by
	// partition.
	Elections []Election `json:"elections"`
	// SingleISR are partitions left with exactly one in-sync replica (the
	// first MaxListed, sorted); SingleISRCount is exact.
	SingleISR          []string `json:"single_isr_partitions"`
	SingleISRCount     int      `json:"single_isr_count"`
	LeadersMaxOverMean float64  `json:"leaders_max_over_mean"`
	LeadersMax         int      `json:"leaders_max"`
	BusiestBroker      int32    `json:"busiest_broker"`
	// LiveBrokers is how many brokers are left up after the loss;
	// RFAboveBrokers counts the partitions whose replication factor is
	// above it (they stay under-replicated until a broker comes back).
	LiveBrokers    int `json:"live_brokers"`
	RFAboveBrokers int `json:"rf_above_brokers"`
	// TopicsGainingBrokers counts topics whose new leaders include a broker
	// that led none of their partitions before.
	TopicsGainingBrokers int `json:"topics_gaining_brokers"`
	// NewOverlaps counts pairs of max groups that overlap after the loss
	// although no topic of one shared a leader broker with a topic of the
	// other before it: traffic that was kept apart now meets on a broker.
	NewOverlaps int `json:"new_overlaps"`
	// NewOverlapExample names one such pair, when there is one.
	NewOverlapExample string `json:"new_overlap_example,omitempty"`

	rfAboveExample string // the first partition counted in RFAboveBrokers
}

// Election is one partition a lost broker led and the leader it elects.
type Election struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// NewLeader is the broker elected, or -1 (topology.NoLeader, Kafka's
	// own "no leader") when none is left and the partition goes offline.
	NewLeader int32 `json:"new_leader"`
}

// maxInterWords bounds the group-by-group intersection table (256 MiB);
// past it, intersections are computed per query instead.
const maxInterWords = 32 << 20

// lossModel is what every simulated loss shares, computed once: topics'
// broker sets and max groups, which groups hold each broker, which groups
// intersect each group, and which partitions each broker leads or holds.
// A loss then costs only the lost broker's own partitions and the topics
// they touch, not the whole cluster.
type lossModel struct {
	c       *topology.Cluster
	ix      *topology.Index
	by      By
	sets    []topology.Bitset // per topic
	groups  []Group
	groupOf []int // topic -> index into groups
	seed    maphash.Seed
	byHash  map[uint64][]int // set hash -> group indexes
	// gb[b] is the set of group indexes holding broker b (M bits).
	gb []topology.Bitset
	// inter[g] is the set of groups whose broker set intersects group g's;
	// nil when M² bits would be too many.
	inter   []topology.Bitset
	led     [][]int32 // partitions each broker leads
	holds   [][]int32 // partitions with a replica on each broker
	topicOf []int32   // partition -> topic
	leaders []int     // leaders per broker before any loss
	// missing holds the brokers already down (topology.Broker.Missing); nil
	// when none is.
	missing map[int32]bool
	live    int // brokers up before any loss
	// rfCount[r] counts partitions with replication factor r; rfFirst[r]
	// is the first of them.
	rfCount, rfFirst []int
}

func newLossModel(c *topology.Cluster, by By, interLimit int) *lossModel {
	ix := topology.NewIndex(c.Brokers)
	n := ix.Len()
	m := &lossModel{c: c, ix: ix, by: by, seed: maphash.MakeSeed()}
	var names []string
	names, m.sets = TopicSets(c, ix, by)
	m.groups = MaxGroups(names, m.sets)
	topicIdx := make(map[string]int, len(names))
	for i, name := range names {
		topicIdx[name] = i
	}
	m.groupOf = make([]int, len(names))
	for i := range m.groupOf {
		m.groupOf[i] = -1
	}
	m.byHash = make(map[uint64][]int, len(m.groups))
	words := (len(m.groups) + 63) / 64
	gbBack := make([]uint64, n*words)
	m.gb = make([]topology.Bitset, n)
	for b := range m.gb {
		m.gb[b] = gbBack[b*words : (b+1)*words : (b+1)*words]
	}
	for gi, g := range m.groups {
		for _, t := range g.Topics {
			m.groupOf[topicIdx[t]] = gi
		}
		h := g.Brokers.Hash(m.seed)
		m.byHash[h] = append(m.byHash[h], gi)
		for _, b := range g.Brokers.Indexes() {
			m.gb[b].Set(gi)
		}
	}
	if len(m.groups)*words <= interLimit {
		back := make([]uint64, len(m.groups)*words)
		m.inter = make([]topology.Bitset, len(m.groups))
		for gi, g := range m.groups {
			row := topology.Bitset(back[gi*words : (gi+1)*words : (gi+1)*words])
			for _, b := range g.Brokers.Indexes() {
				orInto(row, m.gb[b])
			}
			m.inter[gi] = row
		}
	}
	for _, b := range c.Brokers {
		if b.Missing {
			if m.missing == nil {
				m.missing = map[int32]bool{}
			}
			m.missing[b.ID] = true
		} else {
			m.live++
		}
	}
	m.led = make([][]int32, n)
	m.holds = make([][]int32, n)
	m.leaders = make([]int, n)
	m.topicOf = make([]int32, len(c.Partitions))
	t := int32(-1)
	for i := range c.Partitions {
		p := &c.Partitions[i]
		if i == 0 || p.Topic != c.Partitions[i-1].Topic {
			t++
		}
		m.topicOf[i] = t
		for len(m.rfCount) <= len(p.Replicas) {
			m.rfCount = append(m.rfCount, 0)
			m.rfFirst = append(m.rfFirst, -1)
		}
		if m.rfCount[len(p.Replicas)] == 0 {
			m.rfFirst[len(p.Replicas)] = i
		}
		m.rfCount[len(p.Replicas)]++
		for _, r := range p.Replicas {
			if j, ok := ix.Pos(r); ok {
				m.holds[j] = append(m.holds[j], int32(i))
			}
		}
		if j, ok := ix.Pos(p.Leader); ok {
			m.led[j] = append(m.led[j], int32(i))
			m.leaders[j]++
		}
	}
	return m
}

func orInto(dst, src topology.Bitset) {
	for i := range dst {
		dst[i] |= src[i]
	}
}

// WhatIfLoss simulates losing each broker in lost (every broker up when
// lost is empty), one at a time.
func WhatIfLoss(c *topology.Cluster, by By, lost []int32) []WhatIf {
	return whatIfLoss(c, by, lost, maxInterWords)
}

// whatIfLoss is WhatIfLoss with the intersection table's size limit in
// words (0: never build it).
func whatIfLoss(c *topology.Cluster, by By, lost []int32, interLimit int) []WhatIf {
	m := newLossModel(c, by, interLimit)
	if len(lost) == 0 {
		for _, b := range c.Brokers {
			if !b.Missing {
				lost = append(lost, b.ID)
			}
		}
	}
	var idx []int
	for _, b := range lost {
		if bi, ok := m.ix.Pos(b); ok {
			idx = append(idx, bi)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if len(idx) < 8 {
		workers = 1
	}
	return m.loseAll(idx, workers)
}

// loseAll simulates the loss of each broker position in idx on up to
// workers goroutines. Losses share only the read-only model: each worker has
// its own scratch and fills its own slots, so the result is the same at any
// number of workers (TestWhatIfLossWorkersAgree).
func (m *lossModel) loseAll(idx []int, workers int) []WhatIf {
	out := make([]WhatIf, len(idx))
	workers = max(1, min(workers, len(idx)))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			s := m.newScratch()
			for i := w; i < len(idx); i += workers {
				out[i] = m.lose(idx[i], s)
			}
		})
	}
	wg.Wait()
	return out
}

// scratch is per-loss working memory, reused from one loss to the next.
type scratch struct {
	leaders []int
	arena   []uint64 // new and past broker sets of touched topics
	local   map[uint64][]int
	groups  []localGroup
	merged  topology.Bitset // base groups absorbed by a changed group
	mask    topology.Bitset
	excl    topology.Bitset
	offline []int32
	single  []int32
}

// localGroup is a max group after the loss that holds a touched topic.
type localGroup struct {
	set, past topology.Bitset // after the loss; union of its topics' sets before
	sources   []int           // base groups its topics (or merged group) came from
	topic     int             // one of its topics
}

func (m *lossModel) newScratch() *scratch {
	words := (len(m.groups) + 63) / 64
	return &scratch{leaders: make([]int, m.ix.Len()), local: map[uint64][]int{},
		merged: make(topology.Bitset, words), mask: make(topology.Bitset, words), excl: make(topology.Bitset, words)}
}

func (s *scratch) alloc(words int) topology.Bitset {
	if len(s.arena)+words > cap(s.arena) {
		// Grow into a fresh array: sets already handed out keep the old one.
		s.arena = make([]uint64, 0, max(2*cap(s.arena), 64*words))
	}
	n := len(s.arena)
	s.arena = s.arena[:n+words]
	out := topology.Bitset(s.arena[n : n+words : n+words])
	clear(out)
	return out
}

func (m *lossModel) lose(bi int, s *scratch) WhatIf {
	c := m.c
	b := m.ix.ID(bi)
	w := WhatIf{Broker: b, OfflinePartitions: []string{}, SingleISR: []string{}, Elections: make([]Election, 0, len(m.led[bi]))}
	dead := func(r int32) bool { return r == b }
	if m.missing != nil {
		dead = func(r int32) bool { return r == b || m.missing[r] }
	}
	copy(s.leaders, m.leaders)
	s.leaders[bi] = 0
	s.offline, s.single = s.offline[:0], s.single[:0]
	for _, pi := range m.holds[bi] {
		p := &c.Partitions[pi]
		isr := len(p.Replicas) - 1 // every replica in sync and alive
		if p.ISR != nil || len(p.Offline) > 0 || m.missing != nil {
			isr = 0
			for _, r := range p.Replicas {
				if !dead(r) && p.InSync(r) && !slices.Contains(p.Offline, r) {
					isr++
				}
			}
		}
		if isr == 1 && p.Leader != topology.NoLeader {
			s.single = append(s.single, pi)
		}
	}
	// Elections, topic by topic (led[bi] is in partition order, so each
	// topic's partitions are contiguous).
	s.arena = s.arena[:0]
	s.groups = s.groups[:0]
	clear(s.local)
	words := (m.ix.Len() + 63) / 64
	led := m.led[bi]
	for i := 0; i < len(led); {
		t := m.topicOf[led[i]]
		j := i
		var set topology.Bitset
		if m.by == ByLeaders {
			set = s.alloc(words)
			copy(set, m.sets[t])
			set.Clear(bi)
		}
		for ; j < len(led) && m.topicOf[led[j]] == t; j++ {
			p := &c.Partitions[led[j]]
			nl := topology.ElectAfterLoss(p, dead)
			w.Elections = append(w.Elections, Election{Topic: p.Topic, Partition: p.Partition, NewLeader: nl})
			if nl == topology.NoLeader {
				s.offline = append(s.offline, led[j])
				continue
			}
			w.LeadersMoved++
			if k, ok := m.ix.Pos(nl); ok {
				s.leaders[k]++
				if set != nil {
					set.Set(k)
				}
			}
		}
		if set != nil {
			for wi := range set {
				if set[wi]&^m.sets[t][wi] != 0 {
					w.TopicsGainingBrokers++
					break
				}
			}
			m.place(s, int(t), set, bi)
		}
		i = j
	}
	m.skew(&w, s.leaders, bi)
	w.LiveBrokers = m.live
	if m.missing == nil || !m.missing[b] {
		w.LiveBrokers--
	}
	first := -1
	for rf := w.LiveBrokers + 1; rf < len(m.rfCount); rf++ {
		w.RFAboveBrokers += m.rfCount[rf]
		if f := m.rfFirst[rf]; f >= 0 && (first < 0 || f < first) {
			first = f
		}
	}
	if first >= 0 {
		w.rfAboveExample = c.Partitions[first].Key().String()
	}
	w.OfflineCount, w.SingleISRCount = len(s.offline), len(s.single)
	w.OfflinePartitions = m.keys(s.offline)
	w.SingleISR = m.keys(s.single)
	if m.by == ByLeaders {
		m.newOverlaps(&w, s)
	}
	return w
}

// place files touched topic t, with its set after the loss, under the local
// group with that set, creating it (and absorbing an unchanged base group
// with the same set) when new.
func (m *lossModel) place(s *scratch, t int, set topology.Bitset, bi int) {
	if set.Empty() {
		return // every partition offline: the topic leaves the groups
	}
	h := set.Hash(m.seed)
	for _, li := range s.local[h] {
		lg := &s.groups[li]
		if lg.set.Equal(set) {
			orInto(lg.past, m.sets[t])
			lg.sources = append(lg.sources, m.groupOf[t])
			return
		}
	}
	lg := localGroup{set: set, past: s.alloc(len(set)), sources: []int{m.groupOf[t]}, topic: t}
	copy(lg.past, m.sets[t])
	for _, gi := range m.byHash[h] {
		if g := m.groups[gi]; !g.Brokers.Has(bi) && g.Brokers.Equal(set) {
			// An untouched group with this very set: its topics join.
			orInto(lg.past, g.Brokers)
			lg.sources = append(lg.sources, gi)
			s.merged.Set(gi)
		}
	}
	s.local[h] = append(s.local[h], len(s.groups))
	s.groups = append(s.groups, lg)
}

// newOverlaps counts pairs (X, U) where X is a group after the loss holding
// a touched topic and U an untouched group, U shares a broker with X now but
// with none of X's topics' leader brokers before. Two changed groups never
// count: every touched topic was led on the lost broker, so they met there.
func (m *lossModel) newOverlaps(w *WhatIf, s *scratch) {
	anyMerged := !s.merged.Empty()
	for i := range s.groups {
		lg := &s.groups[i]
		nFresh, oneFresh := 0, -1
		for wi := range lg.set {
			if f := lg.set[wi] &^ lg.past[wi]; f != 0 {
				nFresh += bits.OnesCount64(f)
				oneFresh = wi*64 + bits.TrailingZeros64(f)
			}
		}
		if nFresh == 0 {
			continue
		}
		// Groups holding a fresh broker...
		mask := s.mask
		if nFresh == 1 {
			mask = m.gb[oneFresh] // the usual case: no copy
		} else {
			clear(mask)
			for wi := range lg.set {
				for f := lg.set[wi] &^ lg.past[wi]; f != 0; f &= f - 1 {
					orInto(mask, m.gb[wi*64+bits.TrailingZeros64(f)])
				}
			}
		}
		// ...less those meeting the group's past brokers.
		excl := s.excl
		switch {
		case m.inter != nil && len(lg.sources) == 1:
			excl = m.inter[lg.sources[0]] // the usual case: no copy
		case m.inter != nil:
			clear(excl)
			for _, g := range lg.sources {
				orInto(excl, m.inter[g])
			}
		default:
			clear(excl)
			for _, b := range lg.past.Indexes() {
				orInto(excl, m.gb[b])
			}
		}
		n := 0
		if anyMerged {
			for wi := range mask {
				n += bits.OnesCount64(mask[wi] &^ excl[wi] &^ s.merged[wi])
			}
		} else {
			excl = excl[:len(mask)]
			for wi, x := range mask {
				n += bits.OnesCount64(x &^ excl[wi])
			}
		}
		first := -1
		if n > 0 && w.NewOverlapExample == "" {
			for wi := range mask {
				if x := mask[wi] &^ excl[wi] &^ s.merged[wi]; x != 0 {
					first = wi*64 + bits.TrailingZeros64(x)
					break
				}
			}
		}
		if n > 0 && w.NewOverlapExample == "" {
			fresh := make(topology.Bitset, len(lg.set))
			for wi := range fresh {
				fresh[wi] = lg.set[wi] &^ lg.past[wi]
			}
			u := m.groups[first]
			more := ""
			if len(u.Topics) > 1 {
				more = fmt.Sprintf(" and %d more", len(u.Topics)-1)
			}
			w.NewOverlapExample = fmt.Sprintf("%s would be led on broker %s too, where group %d (%s%s) leads; they shared no broker before",
				m.c.Partitions[m.firstPartition(lg.topic)].Topic, ints32(m.ix.IDs(fresh), 3), u.ID, u.Topics[0], more)
		}
		w.NewOverlaps += n
	}
	// Groups absorbed in this loss are counted under their changed group.
	clear(s.merged)
}

func (m *lossModel) firstPartition(t int) int {
	i, _ := slices.BinarySearch(m.topicOf, int32(t))
	return i
}

// skew takes the leaders' max/mean over the brokers still up: neither the
// lost broker nor one already down (Missing) counts in the mean.
func (m *lossModel) skew(w *WhatIf, leaders []int, bi int) {
	sum, up := 0, 0
	for j, n := range leaders {
		if j == bi || (m.missing != nil && m.missing[m.ix.ID(j)]) {
			continue
		}
		up++
		sum += n
		if n > w.LeadersMax {
			w.LeadersMax, w.BusiestBroker = n, m.ix.ID(j)
		}
	}
	if sum > 0 {
		w.LeadersMaxOverMean = round3(float64(w.LeadersMax) * float64(up) / float64(sum))
	}
}

// keys names the first MaxListed partitions (indexes in partition order,
// so the names come out sorted by topic, then partition).
func (m *lossModel) keys(idx []int32) []string {
	idx = slices.Clone(idx)
	slices.Sort(idx)
	out := make([]string, 0, min(len(idx), MaxListed))
	for _, i := range idx[:min(len(idx), MaxListed)] {
		out = append(out, m.c.Partitions[i].Key().String())
	}
	return out
}

// ints32 joins up to limit ids with commas, "..." marking the rest.
func ints32(v []int32, limit int) string {
	out := ""
	for i, x := range v {
		if i == limit {
			return out + ",..."
		}
		if i > 0 {
			out += ","
		}
		out += strconv.Itoa(int(x))
	}
	return out
}
