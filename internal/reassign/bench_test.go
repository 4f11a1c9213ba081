package reassign

import (
	"math/rand/v2"
	"testing"

	"github.com/kplan-dev/kplan/internal/topology"
)

// bigLayout is the performance case: 1,000,000 partitions,
// replication factor 3, 500 brokers, placed with skew (broker weights
// exp(0.5·N(0,1)): the busiest broker holds about 3x the least busy's
// replicas), 5,000 topics of 200 partitions.
func bigLayout() *topology.Cluster {
	return generate(rand.New(rand.NewPCG(7, 7)), layout{brokers: 500, firstID: 1, topics: 5000, minParts: 200, maxParts: 200, rf: 3, skew: 0.5})
}

// BenchmarkPlan1M: target under 10 s and 4 GiB for the whole plan
// (replicas, leaders, summary with overlap counts) on this 2-core machine.
func BenchmarkPlan1M(b *testing.B) { benchPlan(b, Options{}) }

// BenchmarkPlan1MDrain5 drains 5 of the 500 brokers.
func BenchmarkPlan1MDrain5(b *testing.B) {
	c := bigLayout()
	benchPlan(b, Options{Brokers: c.Brokers[5:]})
}

// BenchmarkPlan1MFixOverlaps asks for --fix-overlaps (no target stated).
func BenchmarkPlan1MFixOverlaps(b *testing.B) { benchPlan(b, Options{FixOverlaps: true}) }

func benchPlan(b *testing.B, opts Options) {
	c := bigLayout()
	b.Logf("%d partitions", len(c.Partitions))
	if len(c.Partitions) != 1_000_000 {
		b.Fatal("the benchmark layout must have 1,000,000 partitions")
	}
	b.ResetTimer()
	for b.Loop() {
		p, err := Compute(c, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(p.Summary.ReplicasMoved), "moves")
		b.ReportMetric(float64(p.Summary.LowerBound), "bound")
	}
}

// BenchmarkPlan1MNoFailover is BenchmarkPlan1M without the failover order
// (--failover-domain none): the phase's cost is the difference.
func BenchmarkPlan1MNoFailover(b *testing.B) { benchPlan(b, Options{FailoverDomain: FailoverNone}) }
