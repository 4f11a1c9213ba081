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
