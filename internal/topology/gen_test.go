package topology

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPartitionCounts(t *testing.T) {
	tests := []struct {
		n, total int
		skew     float64
	}{{1, 1, 0}, {3, 10, 0}, {30000, 2000000, 0}, {100, 1000, 1}, {7, 7, 2}, {5, 1000, 0.5}}
	for _, tt := range tests {
		counts := partitionCounts(tt.n, tt.total, tt.skew)
		sum := 0
		for i, c := range counts {
			require.GreaterOrEqual(t, c, 1)
			if tt.skew == 0 {
				assert.LessOrEqual(t, c-counts[0], 1, "even counts differ by at most one")
				assert.GreaterOrEqual(t, c-counts[0], -1)
			} else if i > 0 {
				assert.LessOrEqual(t, c, counts[i-1]+1, "skewed counts do not grow")
			}
			sum += c
		}
		assert.Equal(t, tt.total, sum)
	}
}

// TestGenerateLaws checks, over random options, what every generated layout
// must satisfy: exact counts, distinct replicas, leader = first replica,
// topics inside their cell, rack-distinct replicas where racks allow it,
// determinism per seed, and that Load reads back what was written.
func TestGenerateLaws(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		o := GenOptions{
			Brokers: 1 + rng.IntN(40), FirstID: int32(rng.IntN(2000)), Topics: 1 + rng.IntN(30),
			Racks: rng.IntN(4), Skew: float64(rng.IntN(3)) / 2, Scatter: float64(rng.IntN(3)) / 4, Uneven: float64(rng.IntN(3)) / 4,
		}
		o.Cells = rng.IntN(min(o.Brokers, 4) + 1)
		o.ReplicationFactor = 1 + rng.IntN(min(o.Brokers/max(o.Cells, 1), 4))
		o.Partitions = o.Topics + rng.IntN(200)
		seed := rng.Uint64()
		c, err := Generate(o, rand.New(rand.NewPCG(seed, 0)))
		require.NoError(t, err, "%+v", o)
		require.Len(t, c.Partitions, o.Partitions)
		require.Len(t, c.Brokers, o.Brokers)
		assert.Len(t, c.Topics(), o.Topics)
		cells := max(o.Cells, 1)
		size := o.Brokers / cells
		rack := map[int32]string{}
		for _, b := range c.Brokers {
			rack[b.ID] = b.Rack
		}
		for ti, tp := range c.Topics() {
			for _, p := range tp.Partitions {
				require.Len(t, p.Replicas, o.ReplicationFactor)
				assert.Equal(t, p.Replicas[0], p.Leader)
				racks := map[string]bool{}
				for j, r := range p.Replicas {
					assert.NotContains(t, p.Replicas[:j], r, "distinct replicas")
					racks[rack[r]] = true
					lo := o.FirstID + int32((ti%cells)*size)
					if tp.Partitions[0].Partition == 0 && o.Scatter == 0 {
						assert.True(t, r >= lo && r < lo+int32(size), "topic %d inside cell %d: %v", ti, ti%cells, p.Replicas)
					}
				}
				if o.Racks > 0 && o.Scatter == 0 && o.Uneven == 0 && cells == 1 {
					assert.Len(t, racks, min(o.ReplicationFactor, o.Racks, o.Brokers), "rack-aware %v", p.Replicas)
				}
			}
		}
		again, err := Generate(o, rand.New(rand.NewPCG(seed, 0)))
		require.NoError(t, err)
		assert.Equal(t, c, again, "same seed, same layout")
		var b bytes.Buffer
		require.NoError(t, WriteLayout(&b, c))
		back, err := Load(&b, "gen.json")
		require.NoError(t, err)
		assert.Equal(t, c, back, "brokers, racks and idle brokers survive the file")
	}
}

func TestGenerateKafkaPlacementBalancesLeaders(t *testing.T) {
	// 10 topics of 12 partitions on 6 brokers: Kafka's round robin gives
	// every broker exactly 2 leaders of each topic.
	c, err := Generate(GenOptions{Brokers: 6, Topics: 10, Partitions: 120, ReplicationFactor: 3}, rand.New(rand.NewPCG(9, 9)))
	require.NoError(t, err)
	for _, tp := range c.Topics() {
		leaders := map[int32]int{}
		for _, p := range tp.Partitions {
			leaders[p.Leader]++
		}
		assert.Len(t, leaders, 6)
		for _, n := range leaders {
			assert.Equal(t, 2, n)
		}
	}
}

func TestGenerateUnevenIsUneven(t *testing.T) {
	c, err := Generate(GenOptions{Brokers: 3, Topics: 1, Partitions: 4, ReplicationFactor: 2, Uneven: 1}, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	leaders := map[int32]int{}
	for _, p := range c.Partitions {
		leaders[p.Leader]++
	}
	// Fig 3.8: four partitions on three brokers, one broker leading two.
	assert.Len(t, leaders, 3)
	counts := []int{}
	for _, n := range leaders {
		counts = append(counts, n)
	}
	assert.ElementsMatch(t, []int{1, 1, 2}, counts)
}

func TestGenerateRejects(t *testing.T) {
	ok := GenOptions{Brokers: 3, Topics: 2, Partitions: 4, ReplicationFactor: 2}
	for name, mut := range map[string]func(*GenOptions){
		"brokers":            func(o *GenOptions) { o.Brokers = 0 },
		"topics":             func(o *GenOptions) { o.Topics = 0 },
		"partitions":         func(o *GenOptions) { o.Partitions = 1 },
		"replication-factor": func(o *GenOptions) { o.ReplicationFactor = 4 },
		"cells":              func(o *GenOptions) { o.Cells = 4 },
		"skew":               func(o *GenOptions) { o.Skew = -1 },
		"scatter":            func(o *GenOptions) { o.Scatter = 1.5 },
		"uneven":             func(o *GenOptions) { o.Uneven = -0.1 },
		"racks":              func(o *GenOptions) { o.Racks = -1 },
	} {
		o := ok
		mut(&o)
		_, err := Generate(o, rand.New(rand.NewPCG(1, 1)))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), name)
	}
}

func TestLayoutBrokersKey(t *testing.T) {
	c := &Cluster{Brokers: []Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "b"}, {ID: 9}}, Partitions: []Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{2, 1}, Leader: 2, SizeBytes: -1},
	}}
	var b bytes.Buffer
	require.NoError(t, WriteLayout(&b, c))
	assert.Equal(t, `{"version":1,"brokers":[{"id":1,"rack":"a"},{"id":2,"rack":"b"},{"id":9}],"partitions":[
  {"topic":"t","partition":0,"replicas":[2,1]}
]}
`, b.String())
	back, err := Load(&b, "l.json")
	require.NoError(t, err)
	assert.Equal(t, c, back)
	for body, want := range map[string]string{
		`{"brokers":[{"id":1},{"id":1}],"partitions":[]}`: "x.json:1:12: brokers: broker 1 listed twice",
		`{"brokers":[{"rack":"a"}],"partitions":[]}`:      "x.json:1:12: brokers: a broker has no id",
		"{\n\"brokers\":[{\"id\":-4}],\"partitions\":[]}": "x.json:2:11: brokers: broker id -4 is out of range",
		`{"brokers":{"id":1},"partitions":[]}`:            "x.json:1:",
	} {
		_, err := Load(strings.NewReader(body), "x.json")
		require.Error(t, err, body)
		assert.Contains(t, err.Error(), want)
	}
}
