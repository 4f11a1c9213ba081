package audit

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// layout builds a cluster from topic -> leader of each partition.
func layout(topics map[string][]int32) *topology.Cluster {
	c := &topology.Cluster{}
	for t, leaders := range topics {
		for p, l := range leaders {
			c.Partitions = append(c.Partitions, topology.Partition{Topic: t, Partition: int32(p), Replicas: []int32{l}, Leader: l})
		}
	}
	c.Normalize()
	return c
}

func analyse(c *topology.Cluster) ([]Group, []Overlap, []BrokerView, *topology.Index) {
	ix := topology.NewIndex(c.Brokers)
	names, sets := TopicSets(c, ix, ByLeaders)
	g := MaxGroups(names, sets)
	return g, Overlaps(g, ix.Len()), BrokerViews(g, ix.Len()), ix
}

// TestFig33 is the thesis's worked example (§3.2, Fig 3.3).
func TestFig33(t *testing.T) {
	c := layout(map[string][]int32{"A": {1, 2, 3}, "B": {2, 3}, "C": {3, 2}, "D": {1}})
	groups, overlaps, view, ix := analyse(c)
	require.Len(t, groups, 3)
	assert.Equal(t, []string{"A"}, groups[0].Topics)
	assert.Equal(t, []string{"B", "C"}, groups[1].Topics)
	assert.Equal(t, []int32{2, 3}, ix.IDs(groups[1].Brokers))
	assert.Equal(t, []string{"D"}, groups[2].Topics)
	require.Len(t, overlaps, 2)
	assert.Equal(t, [2]int{1, 2}, [2]int{overlaps[0].A, overlaps[0].B})
	assert.Equal(t, []int32{2, 3}, ix.IDs(overlaps[0].Shared))
	assert.Equal(t, [2]int{1, 3}, [2]int{overlaps[1].A, overlaps[1].B})
	assert.Equal(t, []int32{1}, ix.IDs(overlaps[1].Shared))
	require.Len(t, view, 3)
	assert.Equal(t, []int{1, 3}, view[0].Groups, "broker 1: {A}, {D}")
	assert.Equal(t, []int{1, 2}, view[1].Groups, "broker 2: {A}, {B,C}")
}

// TestFig37 is the worst case: 3 brokers, all 2^3-1 broker sets, 7 groups,
// every pair overlapping except the disjoint ones.
func TestFig37(t *testing.T) {
	c := layout(map[string][]int32{"t1": {1}, "t2": {2}, "t3": {3}, "t12": {1, 2}, "t13": {1, 3}, "t23": {2, 3}, "t123": {1, 2, 3}})
	groups, overlaps, view, _ := analyse(c)
	assert.Len(t, groups, 7)
	assert.Len(t, overlaps, 21-3-3, "21 pairs less {1}-{2},{1}-{3},{2}-{3} and {1}-{23},{2}-{13},{3}-{12}")
	assert.Len(t, view, 3)
}

func TestByReplicas(t *testing.T) {
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "a", Partition: 0, Replicas: []int32{1, 2}, Leader: 1},
		{Topic: "b", Partition: 0, Replicas: []int32{3, 2}, Leader: 3},
		{Topic: "c", Partition: 0, Replicas: []int32{2, 1}, Leader: topology.NoLeader},
	}}
	c.Normalize()
	ix := topology.NewIndex(c.Brokers)
	names, sets := TopicSets(c, ix, ByLeaders)
	assert.Len(t, MaxGroups(names, sets), 2, "an offline topic has no leaders")
	assert.Empty(t, Overlaps(MaxGroups(names, sets), ix.Len()))
	names, sets = TopicSets(c, ix, ByReplicas)
	g := MaxGroups(names, sets)
	require.Len(t, g, 2)
	assert.Equal(t, []string{"a", "c"}, g[0].Topics)
	require.Len(t, Overlaps(g, ix.Len()), 1, "followers on broker 2 overlap")
}

// TestFastEqualsLiteral compares the fast algorithms with the thesis's
// literal ones on random layouts, broker counts past one 64-bit word
// included.
func TestFastEqualsLiteral(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		brokers := 1 + rng.IntN(80)
		topics := map[string][]int32{}
		for tn := range 1 + rng.IntN(60) {
			// Few distinct sets, so groups have several topics.
			span := 1 + rng.IntN(min(brokers, 4))
			startB := rng.IntN(brokers)
			var leaders []int32
			for p := range span + rng.IntN(3) {
				leaders = append(leaders, int32(1000+(startB+p%span)%brokers))
			}
			topics[fmt.Sprintf("t%03d", tn)] = leaders
		}
		c := layout(topics)
		ix := topology.NewIndex(c.Brokers)
		names, sets := TopicSets(c, ix, ByLeaders)
		fast := MaxGroups(names, sets)
		lit := literalMaxGroups(names, sets)
		require.Equal(t, lit, fast, "layout %d", i)
		want := literalDPO(lit)
		assert.Equal(t, want, nilIfEmpty(Overlaps(fast, ix.Len())), "layout %d", i)
		view := brokerGroups(fast, ix.Len())
		assert.Equal(t, len(want), CountOverlaps(fast, ix.Len()), "layout %d", i)
		assert.Equal(t, len(want), countByStamps(fast, view), "layout %d, by stamps", i)
		assert.Equal(t, len(want), countByBitsets(fast, view, ix.Len()), "layout %d, by bitsets", i)
		assert.Equal(t, literalDPO2(lit, ix.Len()), BrokerViews(fast, ix.Len()), "layout %d", i)
	}
}

func nilIfEmpty(o []Overlap) []Overlap {
	if len(o) == 0 {
		return nil
	}
	return o
}

func benchLayout(topics, brokers int) ([]string, []topology.Bitset, int) {
	rng := rand.New(rand.NewPCG(1, 1))
	names := make([]string, topics)
	sets := make([]topology.Bitset, topics)
	for i := range sets {
		names[i] = fmt.Sprintf("t%05d", i)
		s := topology.NewBitset(brokers)
		start, span := rng.IntN(brokers), 3+rng.IntN(6)
		for j := range span {
			s.Set((start + j) % brokers)
		}
		sets[i] = s
	}
	return names, sets, brokers
}

// BenchmarkGroups compares the fast and literal algorithms at 10,000
// topics on 1,000 brokers, in one run.
func BenchmarkGroups(b *testing.B) {
	names, sets, n := benchLayout(10_000, 1000)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			g := MaxGroups(names, sets)
			_ = Overlaps(g, n)
			_ = BrokerViews(g, n)
		}
	})
	b.Run("literal", func(b *testing.B) {
		for b.Loop() {
			g := literalMaxGroups(names, sets)
			_ = literalDPO(g)
			_ = literalDPO2(g, n)
		}
	})
}

// TestOverlapsUpToIsAPrefix: a capped list is the first pairs of the full
// one, in (A, B) order, and says it was cut.
func TestOverlapsUpToIsAPrefix(t *testing.T) {
	names, sets, n := benchLayout(2000, 300)
	g := MaxGroups(names, sets)
	all, cut := OverlapsUpTo(g, n, 0)
	require.False(t, cut)
	require.Greater(t, len(all), 100)
	for _, limit := range []int{1, 7, 100, len(all) - 1} {
		some, cut := OverlapsUpTo(g, n, limit)
		assert.True(t, cut, "limit %d", limit)
		assert.Equal(t, all[:limit], some, "limit %d", limit)
	}
	some, cut := OverlapsUpTo(g, n, len(all))
	assert.False(t, cut, "exactly the limit is not cut")
	assert.Equal(t, all, some)
}

// BenchmarkAlgorithms times each of the thesis's three algorithms against
// its fast counterpart at 10,000 topics on 1,000 brokers.
func BenchmarkAlgorithms(b *testing.B) {
	names, sets, n := benchLayout(10_000, 1000)
	g := MaxGroups(names, sets)
	b.Run("maxgroups/fast", func(b *testing.B) {
		for b.Loop() {
			_ = MaxGroups(names, sets)
		}
	})
	b.Run("maxgroups/literal", func(b *testing.B) {
		for b.Loop() {
			_ = literalMaxGroups(names, sets)
		}
	})
	b.Run("overlaps/fast", func(b *testing.B) {
		for b.Loop() {
			_ = Overlaps(g, n)
		}
	})
	b.Run("overlaps/literal", func(b *testing.B) {
		for b.Loop() {
			_ = literalDPO(g)
		}
	})
	b.Run("brokerview/fast", func(b *testing.B) {
		for b.Loop() {
			_ = BrokerViews(g, n)
		}
	})
	b.Run("brokerview/literal", func(b *testing.B) {
		for b.Loop() {
			_ = literalDPO2(g, n)
		}
	})
}

// TestCountOverlapsScattered counts the overlapping pairs of a generated
// scattered layout, far more than the list holds, and checks the count
// against every pair compared by brute force.
func TestCountOverlapsScattered(t *testing.T) {
	c, err := topology.Generate(topology.GenOptions{Brokers: 150, FirstID: 1, Topics: 400, Partitions: 4000, ReplicationFactor: 3, Scatter: 1},
		rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	ix := topology.NewIndex(c.Brokers)
	names, sets := TopicSets(c, ix, ByLeaders)
	groups := MaxGroups(names, sets)
	brute := 0
	for i := range groups {
		for j := i + 1; j < len(groups); j++ {
			if groups[i].Brokers.Intersects(groups[j].Brokers) {
				brute++
			}
		}
	}
	require.Greater(t, brute, MaxOverlaps, "the layout must overlap in more pairs than the list holds")
	assert.Equal(t, brute, CountOverlaps(groups, ix.Len()))
	view := brokerGroups(groups, ix.Len())
	assert.Equal(t, brute, countByStamps(groups, view))
	assert.Equal(t, brute, countByBitsets(groups, view, ix.Len()))

	r := Run(c, ByLeaders)
	assert.Equal(t, brute, r.OverlapCount)
	assert.Len(t, r.Overlaps, MaxOverlaps)
	assert.True(t, r.OverlapsTruncated)
	all := RunWith(c, Options{By: ByLeaders, ListOverlaps: 0})
	assert.Len(t, all.Overlaps, brute, "0 lists every pair")
	assert.False(t, all.OverlapsTruncated)
	few := RunWith(c, Options{By: ByLeaders, ListOverlaps: 5})
	assert.Len(t, few.Overlaps, 5)
	assert.Equal(t, brute, few.OverlapCount)
}
