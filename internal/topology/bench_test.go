package topology

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// BenchmarkLoad2M reads the benchmark layout (2,000,000
// partitions, 30,000 topics, 1,000 brokers, RF 3, as `kplan generate
// layout --seed 1` writes it) from memory. Target: under 6 s, well under
// 2 GiB.
func BenchmarkLoad2M(b *testing.B) {
	data := func() []byte { // the generated cluster is garbage once written
		c, err := Generate(GenOptions{Brokers: 1000, FirstID: 1, Topics: 30_000, Partitions: 2_000_000, ReplicationFactor: 3},
			rand.New(rand.NewPCG(1, 0x6b706c616e)))
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteLayout(&buf, c); err != nil {
			b.Fatal(err)
		}
		return buf.Bytes()
	}()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		got, err := Load(bytes.NewReader(data), "big.json")
		if err != nil || len(got.Partitions) != 2_000_000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerate2M builds that layout.
func BenchmarkGenerate2M(b *testing.B) {
	for b.Loop() {
		if _, err := Generate(GenOptions{Brokers: 1000, FirstID: 1, Topics: 30_000, Partitions: 2_000_000, ReplicationFactor: 3},
			rand.New(rand.NewPCG(1, 0x6b706c616e))); err != nil {
			b.Fatal(err)
		}
	}
}
