package reassign

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kplan-dev/kplan/internal/topology"
)

// loadedLayout is sizedLayout (100,000 partitions, RF 3, 100 brokers in 3
// racks, lognormal sizes) with heavy-tailed loads: each partition's
// produce bytes/s lognormal (median 10 KiB/s, sigma 1.5: the busiest
// partition about 1,000 times the median) and 0-4 consumer groups reading
// all of it, drawn from seed 22.
func loadedLayout(b *testing.B) (*topology.Cluster, map[topology.Key]Load) {
	c := sizedLayout(b, 100)
	rng := rand.New(rand.NewPCG(22, 22))
	loads := make(map[topology.Key]Load, len(c.Partitions))
	for _, p := range c.Partitions {
		prod := math.Round(10240 * math.Exp(1.5*rng.NormFloat64()))
		loads[p.Key()] = Load{Produce: prod, Consume: prod * float64(rng.IntN(5))}
	}
	return c, loads
}

// BenchmarkLoad100k: `kplan reassign --balance load` on loadedLayout.
// Target: under 5 s on this 2-core machine. Reported beside it: the bytes
// copied, bytes in, bytes out and leader bytes max/mean before and after,
// and the count plan's (--balance replicas) on the same input; it fails
// unless every broker ends within 5% of each mean.
func BenchmarkLoad100k(b *testing.B) {
	const tib = 1 << 40
	c, loads := loadedLayout(b)
	b.ResetTimer()
	for b.Loop() {
		p, err := Compute(c, Options{Balance: BalanceLoad, Tolerance: 0.05, Loads: loads})
		if err != nil {
			b.Fatal(err)
		}
		s := p.Summary.Load
		if !s.Within {
			b.Fatalf("outside the band (%v %v %v): in %+v, out %+v, leaders %+v", s.In.Within, s.Out.Within, s.Leaders.Within, s.In.After, s.Out.After, s.Leaders.After)
		}
		b.ReportMetric(float64(s.BytesMoved)/tib, "TiB-copied")
		b.ReportMetric(float64(p.Summary.ReplicasMoved), "replicas-moved")
		b.ReportMetric(float64(p.Summary.LeaderChanges), "leader-changes")
		b.ReportMetric(s.In.Before.MaxOverMean, "in-max/mean-before")
		b.ReportMetric(s.In.After.MaxOverMean, "in-max/mean-after")
		b.ReportMetric(s.Out.Before.MaxOverMean, "out-max/mean-before")
		b.ReportMetric(s.Out.After.MaxOverMean, "out-max/mean-after")
		b.ReportMetric(s.Leaders.Before.MaxOverMean, "lead-max/mean-before")
		b.ReportMetric(s.Leaders.After.MaxOverMean, "lead-max/mean-after")
		b.ReportMetric(float64(s.Replicas.BytesMoved)/tib, "TiB-count-plan")
		b.ReportMetric(s.Replicas.In.MaxOverMean, "in-max/mean-count-plan")
		b.ReportMetric(s.Replicas.Out.MaxOverMean, "out-max/mean-count-plan")
	}
}
