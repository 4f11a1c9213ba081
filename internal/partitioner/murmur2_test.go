package partitioner

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/workload"
)

// TestPartitionOfMatchesFranzGo: the prediction's rule for keyed records
// (workload.PartitionOf, Kafka's murmur2) sends every key where franz-go's
// default keyed partitioner (StickyKeyPartitioner with Kafka's hasher, what
// kplan chaos's hash and default partitioners use) sends it.
func TestPartitionOfMatchesFranzGo(t *testing.T) {
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	rng := rand.New(rand.NewPCG(13, 6))
	keys := [][]byte{{}, {0}, {0xff, 0xfe, 0xfd}, []byte("21"), []byte("foobar")}
	for i := range 2000 {
		keys = append(keys, workload.Key(i))
	}
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		keys = append(keys, b)
	}
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 100, 1000} {
		for _, k := range keys {
			assert.Equal(t, p.Partition(&kgo.Record{Key: k}, n), workload.PartitionOf(k, n), "key %q over %d partitions", k, n)
		}
	}
}
