package audit

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// brutePairs counts, for every pair of live brokers, the partitions left
// with fewer live in-sync replicas than m once both are lost.
func brutePairs(c *topology.Cluster, minOf func(topic string) int) (best int, lost [2]int32, offline int, pairs int) {
	best = -1
	var live []int32
	for _, b := range c.Brokers {
		if !b.Missing {
			live = append(live, b.ID)
		}
	}
	if len(live) < 3 {
		return -1, lost, 0, 0
	}
	for x, a := range live {
		for _, b := range live[x+1:] {
			pairs++
			under, off := 0, 0
			for _, p := range c.Partitions {
				left := 0
				for _, r := range p.Replicas {
					br, _ := c.Broker(r)
					if r != a && r != b && !br.Missing && p.InSync(r) && !slices.Contains(p.Offline, r) {
						left++
					}
				}
				if left < minOf(p.Topic) {
					under++
				}
				if left == 0 {
					off++
				}
			}
			if under > best {
				best, lost, offline = under, [2]int32{a, b}, off
			}
		}
	}
	return best, lost, offline, pairs
}

// TestWorstPairLossEqualsBruteForce: the pair counts built from per-broker
// and per-pair tallies equal losing every pair and counting, through the
// dense table and the sparse map alike.
func TestWorstPairLossEqualsBruteForce(t *testing.T) {
	defer func(v int) { maxDensePairs = v }(maxDensePairs)
	for seed := range uint64(80) {
		rng := rand.New(rand.NewPCG(seed, 3))
		o := topology.GenOptions{Brokers: 3 + rng.IntN(8), Topics: 1 + rng.IntN(4), Partitions: 5 + rng.IntN(40),
			ReplicationFactor: 1 + rng.IntN(4), Scatter: rng.Float64()}
		o.ReplicationFactor = min(o.ReplicationFactor, o.Brokers)
		c, err := topology.Generate(o, rng)
		require.NoError(t, err)
		// Short ISRs and a broker down, sometimes.
		for i := range c.Partitions {
			if p := &c.Partitions[i]; rng.IntN(4) == 0 && len(p.Replicas) > 1 {
				p.ISR = slices.Clone(p.Replicas[:len(p.Replicas)-1])
			}
		}
		if rng.IntN(3) == 0 {
			c = AfterLoss(c, c.Brokers[rng.IntN(len(c.Brokers))].ID)
		}
		m := 1 + rng.IntN(3)
		maxDensePairs = []int{4096, 0}[seed%2]
		// Every topic at m, or (a live cluster's configs) each topic at
		// its own, some left to the default m.
		mi := MinInsyncs{Default: m}
		if seed%4 >= 2 {
			mi.ByTopic = map[string]int{}
			for _, p := range c.Partitions {
				if _, ok := mi.ByTopic[p.Topic]; !ok && rng.IntN(4) > 0 {
					mi.ByTopic[p.Topic] = 1 + rng.IntN(3)
				}
			}
		}
		got := newElectModel(c).worstPair(mi)
		best, lost, offline, pairs := brutePairs(c, func(topic string) int {
			if v, ok := mi.ByTopic[topic]; ok {
				return v
			}
			return m
		})
		if best < 0 {
			assert.Nil(t, got, "seed %d: fewer than three brokers up", seed)
			continue
		}
		require.NotNil(t, got, "seed %d", seed)
		assert.Equal(t, best, got.UnderMinISR, "seed %d", seed)
		assert.Equal(t, lost, got.Lost, "seed %d", seed)
		assert.Equal(t, offline, got.Offline, "seed %d", seed)
		assert.Equal(t, pairs, got.Pairs, "seed %d", seed)
		n := got.Avoidable
		for _, u := range got.Unavoidable {
			assert.Less(t, u.RF-2, u.MinInsync)
			assert.Positive(t, u.Partitions)
			n += u.Partitions
		}
		assert.Equal(t, got.UnderMinISR, n, "seed %d: every partition under min ISR is classified", seed)
		assert.LessOrEqual(t, got.AlreadyUnder, got.UnderMinISR)
	}
}

// TestWorstPairLossRF3MinISR2: RF 3 with min ISR 2 over 4 brokers, full
// ISRs: any pair holding two replicas of a partition takes it under min ISR,
// which no placement avoids ("unavoidable with RF 3 and min ISR 2"); the
// least any placement can do is the mean over the 6 pairs.
func TestWorstPairLossRF3MinISR2(t *testing.T) {
	c := &topology.Cluster{}
	sets := [][]int32{{1, 2, 3}, {2, 3, 4}, {3, 4, 1}, {4, 1, 2}, {1, 2, 3}, {1, 2, 4}}
	for i, s := range sets {
		c.Partitions = append(c.Partitions, topology.Partition{Topic: "t", Partition: int32(i), Replicas: s, Leader: s[0]})
	}
	c.Normalize()
	got := WorstPairLoss(c, 2)
	require.NotNil(t, got)
	// Pair 1,2 holds two replicas of t-0, t-3, t-4 and t-5.
	assert.Equal(t, [2]int32{1, 2}, got.Lost)
	assert.Equal(t, 4, got.UnderMinISR)
	assert.Equal(t, []UnavoidableMinISR{{RF: 3, MinInsync: 2, Partitions: 4}}, got.Unavoidable)
	assert.Equal(t, 0, got.Avoidable)
	// 6 partitions x 3 pairs each over 6 pairs: at least 3 for any placement.
	assert.Equal(t, 3, got.LeastAnyPlacement)
	assert.Equal(t, []string{"t-0", "t-3", "t-4", "t-5"}, got.Examples)
	// Min ISR 1: two losses never take an RF-3 partition under.
	assert.Equal(t, 0, WorstPairLoss(c, 1).UnderMinISR)
}
