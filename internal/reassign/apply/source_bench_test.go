package apply

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kplan-dev/kplan/internal/topology"
)

// BenchmarkNewSource is the drift guard's sidecar for a plan moving every
// other partition of a 1,000,000-partition, 500-broker, RF-3 layout: what
// `kplan reassign --out` computes beside the plan (with its digests) and
// its JSON.
func BenchmarkNewSource(b *testing.B) {
	c, err := topology.Generate(topology.GenOptions{Brokers: 500, Topics: 5000, Partitions: 1_000_000, ReplicationFactor: 3, Skew: 1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	var plan []topology.Partition
	for i, p := range c.Partitions {
		if i%2 == 0 {
			m := p
			m.Replicas = slices.Clone(p.Replicas)
			m.Replicas[len(m.Replicas)-1] = (m.Replicas[len(m.Replicas)-1] + 1) % 500
			plan = append(plan, m)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := NewSource(c, plan)
		if len(s.Partitions) != len(plan) {
			b.Fatalf("%d partitions recorded, want %d", len(s.Partitions), len(plan))
		}
		// What WriteSourceFile writes, without the disk.
		if out := s.appendJSON(nil); len(out) < 40*len(plan) {
			b.Fatalf("sidecar of %d bytes for %d partitions", len(out), len(plan))
		}
	}
}
