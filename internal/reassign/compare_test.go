package reassign

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

type compareCase struct {
	name    string
	c       *topology.Cluster
	brokers []topology.Broker
}

// compareCases are the quality cases: the kafka-kit production map
// as it is, with one broker added, with its most loaded broker drained, and
// generated multi-topic layouts (topology.Generate, Kafka's placement with
// 20% of topics scattered) with 1 and 3 brokers added or removed.
func compareCases(t testing.TB) []compareCase {
	kk := load(t, "../../testdata/layouts/kafkakit-optimize-input.json")
	added := append(slices.Clone(kk.Brokers), topology.Broker{ID: 2000})
	counts := map[int32]int{}
	for _, p := range kk.Partitions {
		for _, r := range p.Replicas {
			counts[r]++
		}
	}
	busiest := kk.Brokers[0].ID
	for _, b := range kk.Brokers {
		if counts[b.ID] > counts[busiest] {
			busiest = b.ID
		}
	}
	drained := slices.DeleteFunc(slices.Clone(kk.Brokers), func(b topology.Broker) bool { return b.ID == busiest })
	out := []compareCase{
		{"kafka-kit map as is", kk, nil},
		{"kafka-kit map, broker 2000 added", kk, added},
		{fmt.Sprintf("kafka-kit map, busiest broker %d drained", busiest), kk, drained},
	}
	gen, err := topology.Generate(topology.GenOptions{Brokers: 48, FirstID: 1, Topics: 300, Partitions: 12000, ReplicationFactor: 3, Skew: 1, Scatter: 0.2}, rand.New(rand.NewPCG(11, 12)))
	require.NoError(t, err)
	for _, k := range []int{1, 3} {
		plus := slices.Clone(gen.Brokers)
		for j := range k {
			plus = append(plus, topology.Broker{ID: 1000 + int32(j)})
		}
		out = append(out,
			compareCase{fmt.Sprintf("generated 48 brokers, %d added", k), gen, plus},
			compareCase{fmt.Sprintf("generated 48 brokers, %d removed", k), gen, slices.Clone(gen.Brokers[k:])})
	}
	return out
}

// TestMovesTable checks the quality target (replicas moved at most
// 1.10x the lower bound) and prints the comparison with Kafka's --generate
// placement for docs/BENCHMARKS.md:
//
//	go test -run TestMovesTable -v ./internal/reassign/
func TestMovesTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| case | replicas | lower bound | kplan moves | kplan/bound | kplan replicas/broker | kplan leaders/broker | topics with even leaders (before -> kplan) | --generate moves (mean of 5 seeds) | --generate/bound | --generate replicas/broker |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | ---: | --- |\n")
	for _, tc := range compareCases(t) {
		opts := Options{Brokers: tc.brokers}
		p, err := Compute(tc.c, opts)
		require.NoError(t, err, tc.name)
		checkPlan(t, tc.c, opts, p)
		s := p.Summary
		reps, leads := balanced(p)
		assert.True(t, reps && leads, tc.name)
		assert.LessOrEqual(t, float64(s.ReplicasMoved), 1.10*float64(s.LowerBound), tc.name)
		target := tc.brokers
		if target == nil {
			target = tc.c.Brokers
		}
		genMoves, genSpread := 0, ""
		for seed := range uint64(5) {
			g := kafkaGenerate(rand.New(rand.NewPCG(seed, 99)), tc.c, target, 0)
			genMoves += movesBetween(tc.c, g)
			if seed == 0 {
				genSpread = countSpread(g)
			}
		}
		total := 0
		for _, p := range tc.c.Partitions {
			total += len(p.Replicas)
		}
		ratio := func(m float64) string {
			if s.LowerBound == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", m/float64(s.LowerBound))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %d-%d | %d-%d | %d -> %d of %d | %.0f | %s | %s |\n", tc.name, total, s.LowerBound, s.ReplicasMoved, ratio(float64(s.ReplicasMoved)),
			s.After.Replicas.Min, s.After.Replicas.Max, s.After.Leaders.Min, s.After.Leaders.Max,
			s.Before.TopicsLeadersWithinOne, s.After.TopicsLeadersWithinOne, s.After.Topics, float64(genMoves)/5, ratio(float64(genMoves)/5), genSpread)
	}
	t.Log("\n" + b.String())
}

// countSpread formats min-max replicas per broker.
func countSpread(c *topology.Cluster) string {
	counts := map[int32]int{}
	for _, b := range c.Brokers {
		counts[b.ID] = 0
	}
	for _, p := range c.Partitions {
		for _, r := range p.Replicas {
			counts[r]++
		}
	}
	lo, hi := -1, 0
	for _, v := range counts {
		if lo < 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}
