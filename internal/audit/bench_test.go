package audit

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

var (
	bigOnce, scatterOnce       sync.Once
	bigCluster, scatterCluster *topology.Cluster
)

// scattered is the big layout with every topic's replicas on random
// brokers (--scatter 1): 30,000 distinct leader sets, almost every pair of
// them overlapping, the worst case for groups and what-if alike.
func scattered(b *testing.B) *topology.Cluster {
	b.Helper()
	scatterOnce.Do(func() {
		c, err := topology.Generate(topology.GenOptions{Brokers: 1000, FirstID: 1, Topics: 30_000, Partitions: 2_000_000, ReplicationFactor: 3, Scatter: 1},
			rand.New(rand.NewPCG(1, 0x6b706c616e)))
		if err != nil {
			panic(err)
		}
		scatterCluster = c
	})
	return scatterCluster
}

// big is the benchmark layout: 2,000,000 partitions, 30,000
// topics, 1,000 brokers, replication factor 3, placed as Kafka places new
// topics (kplan generate layout --seed 1 builds the same file).
func big(b *testing.B) *topology.Cluster {
	b.Helper()
	bigOnce.Do(func() {
		c, err := topology.Generate(topology.GenOptions{Brokers: 1000, FirstID: 1, Topics: 30_000, Partitions: 2_000_000, ReplicationFactor: 3},
			rand.New(rand.NewPCG(1, 0x6b706c616e)))
		if err != nil {
			panic(err)
		}
		bigCluster = c
	})
	return bigCluster
}

// BenchmarkAudit2M is the full audit of the big layout. Target: with
// BenchmarkWhatIfAll2M, under 2 s on 2 cores.
func BenchmarkAudit2M(b *testing.B) {
	c := big(b)
	b.ResetTimer()
	for b.Loop() {
		_ = Run(c, ByLeaders)
	}
}

// BenchmarkWhatIfAll2M simulates losing each of the 1,000 brokers of the
// big layout, one at a time.
func BenchmarkWhatIfAll2M(b *testing.B) {
	c := big(b)
	b.ResetTimer()
	for b.Loop() {
		if w := WhatIfLoss(c, ByLeaders, nil); len(w) != 1000 {
			b.Fatal(len(w))
		}
	}
}

// BenchmarkWhatIfAll2MScattered is BenchmarkWhatIfAll2M on the scattered
// layout.
func BenchmarkWhatIfAll2MScattered(b *testing.B) {
	c := scattered(b)
	b.ResetTimer()
	for b.Loop() {
		_ = WhatIfLoss(c, ByLeaders, nil)
	}
}

// BenchmarkAudit2MScattered is BenchmarkAudit2M on the scattered layout.
func BenchmarkAudit2MScattered(b *testing.B) {
	c := scattered(b)
	b.ResetTimer()
	for b.Loop() {
		_ = Run(c, ByLeaders)
	}
}

// BenchmarkCountOverlaps2MScattered counts the overlapping pairs of max
// groups of the scattered layout (about 450 million) without listing them.
func BenchmarkCountOverlaps2MScattered(b *testing.B) {
	c := scattered(b)
	ix := topology.NewIndex(c.Brokers)
	names, sets := TopicSets(c, ix, ByLeaders)
	groups := MaxGroups(names, sets)
	b.ResetTimer()
	for b.Loop() {
		if CountOverlaps(groups, ix.Len()) == 0 {
			b.Fatal("no overlaps")
		}
	}
}

// BenchmarkCountOverlaps2M is BenchmarkCountOverlaps2MScattered on the
// layout placed as Kafka places topics.
func BenchmarkCountOverlaps2M(b *testing.B) {
	c := big(b)
	ix := topology.NewIndex(c.Brokers)
	names, sets := TopicSets(c, ix, ByLeaders)
	groups := MaxGroups(names, sets)
	b.ResetTimer()
	for b.Loop() {
		_ = CountOverlaps(groups, ix.Len())
	}
}

// BenchmarkPredictAfterLoss2M predicts every partitioner after losing one
// broker of the big layout (what --what-if broker-N --rates costs per
// broker named).
func BenchmarkPredictAfterLoss2M(b *testing.B) {
	c := big(b)
	b.ResetTimer()
	for b.Loop() {
		lp, err := PredictAfterLoss(c, EqualRates(), workload.TopicKeys{}, ShareOptions{}, []int32{c.Brokers[0].ID})
		if err != nil || len(lp) != 1 {
			b.Fatal(err)
		}
	}
}

// BenchmarkAudit2MFailover is BenchmarkAudit2M with the failover section
// (what kplan audit always runs): to compare side by side with it. Target
// (issue 20): within 1.5x of BenchmarkAudit2M.
func BenchmarkAudit2MFailover(b *testing.B) {
	c := big(b)
	b.ResetTimer()
	for b.Loop() {
		r := Run(c, ByLeaders)
		if err := r.AddFailover(c, FailoverOptions{Rates: EqualRates(), Threshold: DefaultFailoverThreshold}); err != nil || r.Failover.Broker == nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFailover2M is the failover section alone on the big layout:
// every broker loss, the worst, every topic's worst loss, and the round
// robin prediction after the worst.
func BenchmarkFailover2M(b *testing.B) {
	c := big(b)
	b.ResetTimer()
	for b.Loop() {
		var r Report
		if err := r.AddFailover(c, FailoverOptions{Rates: EqualRates(), Threshold: DefaultFailoverThreshold}); err != nil || r.Failover.Broker == nil {
			b.Fatal(err)
		}
	}
}
