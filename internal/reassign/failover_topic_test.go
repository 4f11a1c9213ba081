package reassign

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// dinic is a small maximum-flow solver (Dinic's algorithm) for the tests'
// independent checks.
type dinic struct {
	head       []int
	to, next   []int
	capa       []int
	level, ptr []int
}

func newDinic(nodes int) *dinic {
	d := &dinic{head: make([]int, nodes), level: make([]int, nodes), ptr: make([]int, nodes)}
	for i := range d.head {
		d.head[i] = -1
	}
	return d
}

func (d *dinic) edge(u, v, c int) {
	for _, e := range [][3]int{{u, v, c}, {v, u, 0}} {
		d.to = append(d.to, e[1])
		d.capa = append(d.capa, e[2])
		d.next = append(d.next, d.head[e[0]])
		d.head[e[0]] = len(d.to) - 1
	}
}

func (d *dinic) bfs(s, t int) bool {
	for i := range d.level {
		d.level[i] = -1
	}
	d.level[s] = 0
	q := []int{s}
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		for e := d.head[u]; e >= 0; e = d.next[e] {
			if d.capa[e] > 0 && d.level[d.to[e]] < 0 {
				d.level[d.to[e]] = d.level[u] + 1
				q = append(q, d.to[e])
			}
		}
	}
	return d.level[t] >= 0
}

func (d *dinic) dfs(u, t, f int) int {
	if u == t {
		return f
	}
	for ; d.ptr[u] >= 0; d.ptr[u] = d.next[d.ptr[u]] {
		e := d.ptr[u]
		v := d.to[e]
		if d.capa[e] > 0 && d.level[v] == d.level[u]+1 {
			if got := d.dfs(v, t, min(f, d.capa[e])); got > 0 {
				d.capa[e] -= got
				d.capa[e^1] += got
				return got
			}
		}
	}
	return 0
}

func (d *dinic) flow(s, t int) int {
	total := 0
	for d.bfs(s, t) {
		copy(d.ptr, d.head)
		for {
			f := d.dfs(s, t, 1<<30)
			if f == 0 {
				break
			}
			total += f
		}
	}
	return total
}

// rowItem is one partition led by the lost broker: its topic and the
// survivors that may take it over.
type rowItem struct {
	topic int
	cand  []int
}

// nestedFeasible is whether row's partitions can be handed to their
// candidates with survivor j leading at most rowCap - base[j] more
// overall and, of topic t, at most topicCap[t] - topicBase[t][j] more
// (a maximum flow: partition, (topic, survivor), survivor).
func nestedFeasible(row []rowItem, n int, base []int, rowCap int, topicBase map[int][]int, topicCap map[int]int) bool {
	pair := map[[2]int]int{}
	nodes := 2 + len(row) + n
	for _, it := range row {
		for _, j := range it.cand {
			if _, ok := pair[[2]int{it.topic, j}]; !ok {
				pair[[2]int{it.topic, j}] = nodes
				nodes++
			}
		}
	}
	d := newDinic(nodes)
	s, t := 0, 1
	for j := range n {
		if c := rowCap - base[j]; c > 0 {
			d.edge(2+len(row)+j, t, c)
		}
	}
	for k, v := range pair {
		c := len(row)
		if topicCap != nil {
			c = topicCap[k[0]] - topicBase[k[0]][k[1]]
		}
		if c > 0 {
			d.edge(v, 2+len(row)+k[1], c)
		}
	}
	for x, it := range row {
		d.edge(s, 2+x, 1)
		for _, j := range it.cand {
			d.edge(2+x, pair[[2]int{it.topic, j}], 1)
		}
	}
	return d.flow(s, t) == len(row)
}

// minMaxFlow is the least m such that row's partitions fit with survivor
// j leading at most m - base[j] more (binary search over maxima flows),
// never below the largest base among brokers.
func minMaxFlow(row []rowItem, n int, base []int, brokers []int) int {
	lo := 0
	for _, j := range brokers {
		lo = max(lo, base[j])
	}
	hi := lo + len(row)
	for lo < hi {
		m := (lo + hi) / 2
		if nestedFeasible(row, n, base, m, nil, nil) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// rowProblems are, per single-broker loss of c (brokers by position),
// the partitions it hands over, each survivor's leaders overall and per
// topic, and the exact figures: the row's (overall) and each topic's (the
// summary's TopicOverReachable bound: the busiest of the topic's holders'
// own leaders, or the topic's min-max over its partitions' followers).
type rowProblem struct {
	items     []rowItem
	base      []int
	topicBase map[int][]int
	row       int
	topic     map[int]int
	// busiest is each topic's busiest follower with c's order.
	busiest map[int]int
}

func rowProblems(c *topology.Cluster) []rowProblem {
	ix := topology.NewIndex(c.Brokers)
	n := ix.Len()
	tid := map[string]int{}
	gc := make([]int, n)
	lc := map[int][]int{}
	holds := map[int][]bool{}
	for _, p := range c.Partitions {
		t, ok := tid[p.Topic]
		if !ok {
			t = len(tid)
			tid[p.Topic] = t
			lc[t], holds[t] = make([]int, n), make([]bool, n)
		}
		l, _ := ix.Pos(p.Leader)
		gc[l]++
		lc[t][l]++
		for _, r := range p.Replicas {
			j, _ := ix.Pos(r)
			holds[t][j] = true
		}
	}
	out := make([]rowProblem, n)
	for b := range n {
		rp := rowProblem{base: slices.Clone(gc), topicBase: map[int][]int{}, topic: map[int]int{}, busiest: map[int]int{}}
		rp.base[b] = 0
		gain := map[[2]int]int{}
		for _, p := range c.Partitions {
			if l, _ := ix.Pos(p.Leader); l != b || len(p.Replicas) < 2 {
				continue
			}
			t := tid[p.Topic]
			it := rowItem{topic: t}
			for _, r := range p.Replicas {
				if j, _ := ix.Pos(r); j != b {
					it.cand = append(it.cand, j)
				}
			}
			gain[[2]int{t, it.cand[0]}]++
			rp.items = append(rp.items, it)
		}
		var all []int
		for j := range n {
			if j != b {
				all = append(all, j)
			}
		}
		rp.row = minMaxFlow(rp.items, n, rp.base, all)
		byTopic := map[int][]rowItem{}
		for _, it := range rp.items {
			byTopic[it.topic] = append(byTopic[it.topic], it)
		}
		for t, items := range byTopic {
			base := slices.Clone(lc[t])
			base[b] = 0
			rp.topicBase[t] = base
			var holders []int
			for j := range n {
				if j != b && holds[t][j] {
					holders = append(holders, j)
				}
			}
			rp.topic[t] = minMaxFlow(items, n, base, holders)
			m := 0
			for _, j := range holders {
				m = max(m, base[j]+gain[[2]int{t, j}])
			}
			rp.busiest[t] = m
		}
		out[b] = rp
	}
	return out
}

// scatteredLayout is `kplan generate layout --brokers B --racks 3 --topics
// T --partitions P --replication-factor 3 --skew 1 --scatter 0.3 --uneven
// 0.2 --seed 1` (the same generator and seed as the CLI).
func scatteredLayout(t *testing.T, brokers, topics, partitions int) *topology.Cluster {
	t.Helper()
	c, err := topology.Generate(topology.GenOptions{Brokers: brokers, FirstID: 1, Racks: 3, Topics: topics, Partitions: partitions, ReplicationFactor: 3, Skew: 1, Scatter: 0.3, Uneven: 0.2},
		rand.New(rand.NewPCG(1, 0x6b706c616e)))
	require.NoError(t, err)
	return c
}

// scatteredCase plans a scattered generated layout at tolerance tol and
// checks the figures of issue 20's acceptance: every single-broker loss
// within one of its exact figure per topic (and at it overall with
// --tolerance 0), every rack loss within 2% of its optimum, the moves and
// the leaders per broker those of the plan without the failover order, no
// rack rule broken. The per-topic figure is checked against an
// independent maximum flow per loss and topic (rowProblems). Above
// tolerance 0 the broker losses stay at most reach above their exact
// figures, and where that is more than one, an independent maximum flow
// (rackFeasible, without the topic caps) proves one less impossible for
// some rack with its rack loss within 2% of its optimum.
func scatteredCase(t *testing.T, c *topology.Cluster, tol float64, reach int) {
	t.Helper()
	p, err := Compute(c, Options{Tolerance: tol})
	require.NoError(t, err)
	none, err := Compute(c, Options{Tolerance: tol, FailoverDomain: FailoverNone})
	require.NoError(t, err)
	fo := p.Summary.Failover
	b, r := fo.Broker.After, fo.Rack.After
	t.Logf("tolerance %g: broker loss %d (exact %d, over it %d), topics over their exact %d (before %d); rack loss %d (optimum %d)",
		tol, b.BusiestLeaders, b.Reachable, b.OverReachable, b.TopicOverReachable, fo.Broker.Before.TopicOverReachable, r.BusiestLeaders, r.Optimum)
	assert.LessOrEqual(t, b.TopicOverReachable, 1)
	if tol == 0 {
		// Every broker loss at its exact figure: the topics need none of
		// the slack the pass may take.
		assert.Zero(t, b.OverReachable)
	} else {
		assert.LessOrEqual(t, b.OverReachable, reach)
	}
	assert.LessOrEqual(t, float64(r.BusiestLeaders), 1.02*float64(r.Optimum))
	assert.Equal(t, none.Summary.ReplicasMoved, p.Summary.ReplicasMoved)
	assert.Equal(t, none.Summary.After.Leaders, p.Summary.After.Leaders)
	assert.Zero(t, p.Summary.After.RackViolations)

	worst := 0
	rps := rowProblems(p.Final)
	for _, rp := range rps {
		for tp, m := range rp.busiest {
			worst = max(worst, m-rp.topic[tp])
		}
	}
	assert.Equal(t, worst, b.TopicOverReachable, "the summary's figure against the flow's")
	if tol > 0 && b.OverReachable > 1 {
		// No order of these sets does one better with every rack loss
		// within 2%: some rack's rows and rack row admit no flow.
		proof := false
		for _, rack := range []string{"rack-0", "rack-1", "rack-2"} {
			if !rackFeasible(p.Final, rps, rack, b.OverReachable-1, 1.02) {
				t.Logf("tolerance %g: the losses of %s's brokers cannot all be within %d of their exact figures with its rack loss within 2%%", tol, rack, b.OverReachable-1)
				proof = true
			}
		}
		assert.True(t, proof, "a better order exists")
	}
}

// rackFeasible is whether the partitions led in rack can be handed to
// their followers with every single-broker loss of the rack at most slack
// above its exact figure (rps: rowProblems) and the rack's loss within
// share of its optimum: a maximum flow from each partition to (its
// leader, a follower) (the row's room on that survivor) to the survivor
// (the rack row's room). Every follower must be outside the rack, so it
// is also the rack successor.
func rackFeasible(c *topology.Cluster, rps []rowProblem, rack string, slack int, share float64) bool {
	n := len(c.Brokers)
	in := make([]bool, n)
	size := 0
	for j, br := range c.Brokers {
		if br.Rack == rack {
			in[j] = true
			size++
		}
	}
	gc := make([]int, n)
	for j := range n {
		// Any row's base of another broker is its leaders.
		gc[j] = rps[(j+1)%n].base[j]
	}
	opt := (len(c.Partitions) + n - size - 1) / (n - size)
	rackCap := int(share * float64(opt))
	type pair struct{ b, j int }
	var items []rowItem
	var lead []int
	for b := range n {
		if !in[b] {
			continue
		}
		for _, it := range rps[b].items {
			items = append(items, it)
			lead = append(lead, b)
		}
	}
	pairs := map[pair]int{}
	nodes := 2 + len(items) + n
	for x, it := range items {
		for _, j := range it.cand {
			if in[j] {
				panic("a follower in the leader's rack")
			}
			if _, ok := pairs[pair{lead[x], j}]; !ok {
				pairs[pair{lead[x], j}] = nodes
				nodes++
			}
		}
	}
	d := newDinic(nodes)
	for x, it := range items {
		d.edge(0, 2+x, 1)
		for _, j := range it.cand {
			d.edge(2+x, pairs[pair{lead[x], j}], 1)
		}
	}
	for k, v := range pairs {
		if room := rps[k.b].row + slack - gc[k.j]; room > 0 {
			d.edge(v, 2+len(items)+k.j, room)
		}
	}
	for j := range n {
		if room := rackCap - gc[j]; !in[j] && room > 0 {
			d.edge(2+len(items)+j, 1, room)
		}
	}
	return d.flow(0, 1) == len(items)
}

// TestFailoverScattered10k: g10k of docs/BENCHMARKS.md at both
// tolerances.
func TestFailoverScattered10k(t *testing.T) {
	c := scatteredLayout(t, 30, 100, 10_000)
	for _, tol := range []float64{0, 0.05} {
		scatteredCase(t, c, tol, 2)
	}
}

// TestFailoverScattered100k: g100k of docs/BENCHMARKS.md.
func TestFailoverScattered100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100k partitions")
	}
	c := scatteredLayout(t, 60, 1000, 100_000)
	for _, tol := range []float64{0, 0.05} {
		scatteredCase(t, c, tol, 9)
	}
}

// TestTopicsWithinOneOfTheirFigure: on random generated layouts (6-30
// brokers, no racks or 2-3, RF 2-3, skewed, scattered and uneven topics),
// the summary's per-topic figure equals an independent maximum flow per
// loss and topic, and no single-broker loss leaves a topic more than one
// above its exact figure where the flow says the loss's own busiest
// survivor allows it (each topic within its figure + 1, the row within the
// busiest survivor the plan leaves).
func TestTopicsWithinOneOfTheirFigure(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 22))
	rows, over := 0, 0
	for iter := range 40 {
		o := topology.GenOptions{Brokers: 6 + rng.IntN(25), FirstID: 1, Topics: 5 + rng.IntN(60), ReplicationFactor: 2 + rng.IntN(2),
			Skew: rng.Float64() * 1.5, Scatter: rng.Float64() * 0.4, Uneven: rng.Float64() * 0.3}
		o.Partitions = o.Topics * (10 + rng.IntN(60))
		if rng.IntN(3) > 0 {
			o.Racks = 2 + rng.IntN(2)
		}
		c, err := topology.Generate(o, rand.New(rand.NewPCG(uint64(iter), 5)))
		require.NoError(t, err)
		p, err := Compute(c, Options{})
		require.NoError(t, err)
		busiest := map[int32]int{}
		for _, l := range audit.FailoverLosses(p.Final, audit.DomainBroker) {
			busiest[l.Lost[0]] = l.BusiestLeaders
		}
		worst := 0
		for b, rp := range rowProblems(p.Final) {
			rows++
			row := 0
			for tp, m := range rp.busiest {
				row = max(row, m-rp.topic[tp])
			}
			worst = max(worst, row)
			if row <= 1 {
				continue
			}
			over++
			caps := map[int]int{}
			for tp, m := range rp.topic {
				caps[tp] = m + 1
			}
			assert.False(t, nestedFeasible(rp.items, len(rp.base), rp.base, busiest[p.Final.Brokers[b].ID], rp.topicBase, caps),
				"iteration %d (%+v), loss of broker %d: a topic %d above its figure", iter, o, p.Final.Brokers[b].ID, row)
		}
		require.Equal(t, worst, p.Summary.Failover.Broker.After.TopicOverReachable, "iteration %d", iter)
	}
	t.Logf("%d losses, %d with a topic more than one above its figure", rows, over)
}
