package topology

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBitsetAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 63, 64, 65, 130, 1000} {
		a, b := NewBitset(n), NewBitset(n)
		ma, mb := map[int]bool{}, map[int]bool{}
		for range n/2 + 1 {
			i, j := rng.IntN(n), rng.IntN(n)
			a.Set(i)
			ma[i] = true
			b.Set(j)
			mb[j] = true
		}
		var want, inter []int
		for i := range n {
			assert.Equal(t, ma[i], a.Has(i))
			if ma[i] {
				want = append(want, i)
				if mb[i] {
					inter = append(inter, i)
				}
			}
		}
		assert.Equal(t, len(ma), a.Count())
		assert.Equal(t, want, nilIfEmpty(a.Indexes()))
		assert.Equal(t, inter, nilIfEmpty(a.And(b).Indexes()))
		assert.Equal(t, len(inter) > 0, a.Intersects(b))
		c := a.Clone()
		assert.True(t, c.Equal(a))
		seed := maphash.MakeSeed()
		assert.Equal(t, a.Hash(seed), c.Hash(seed))
		for _, i := range want {
			c.Clear(i)
		}
		assert.True(t, c.Empty())
		assert.False(t, a.Empty())
	}
}

func nilIfEmpty(s []int) []int {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestIndexSparseIDs(t *testing.T) {
	c := &Cluster{Partitions: []Partition{
		{Topic: "b", Partition: 1, Replicas: []int32{1962, 1737}},
		{Topic: "a", Partition: 0, Replicas: []int32{1800}},
		{Topic: "b", Partition: 0, Replicas: []int32{1737, 1800}},
	}}
	c.Normalize()
	assert.Equal(t, []Broker{{ID: 1737}, {ID: 1800}, {ID: 1962}}, c.Brokers)
	topics := c.Topics()
	require.Len(t, topics, 2)
	assert.Equal(t, "a", topics[0].Name)
	assert.Equal(t, []int32{0, 1}, []int32{topics[1].Partitions[0].Partition, topics[1].Partitions[1].Partition})
	assert.Equal(t, 2, c.Find(Key{"b", 1}))
	assert.Equal(t, -1, c.Find(Key{"b", 7}))
	_, ok := c.Broker(1800)
	assert.True(t, ok)
	_, ok = c.Broker(1)
	assert.False(t, ok)

	ix := NewIndex(c.Brokers)
	s := ix.NewSet()
	p, ok := ix.Pos(1962)
	require.True(t, ok)
	s.Set(p)
	p, _ = ix.Pos(1737)
	s.Set(p)
	assert.Equal(t, []int32{1737, 1962}, ix.IDs(s))
	assert.Equal(t, 3, ix.Len())
}

func TestCloneIsDeep(t *testing.T) {
	c := &Cluster{Partitions: []Partition{{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 2}}}}
	d := c.Clone()
	d.Partitions[0].Replicas[0] = 9
	d.Partitions[0].ISR[0] = 9
	assert.Equal(t, int32(1), c.Partitions[0].Replicas[0])
	assert.Equal(t, int32(1), c.Partitions[0].ISR[0])
}

func TestInSync(t *testing.T) {
	p := Partition{Replicas: []int32{1, 2, 3}}
	assert.True(t, p.InSync(3), "unknown ISR means every replica")
	assert.False(t, p.InSync(4))
	p.ISR = []int32{1}
	assert.False(t, p.InSync(3))
}

func TestWriteReassignment(t *testing.T) {
	parts := []Partition{
		{Topic: "b", Partition: 0, Replicas: []int32{3, 1}},
		{Topic: "a", Partition: 2, Replicas: []int32{1, 2}, LogDirs: []string{"any", "/d\"x"}},
		{Topic: "a", Partition: 10, Replicas: []int32{2, 3}},
	}
	var b bytes.Buffer
	require.NoError(t, WriteReassignment(&b, parts))
	want := `{"version":1,"partitions":[
  {"topic":"a","partition":2,"replicas":[1,2],"log_dirs":["any","/d\"x"]},
  {"topic":"a","partition":10,"replicas":[2,3]},
  {"topic":"b","partition":0,"replicas":[3,1]}
]}
`
	assert.Equal(t, want, b.String())
	var decoded struct {
		Version    int `json:"version"`
		Partitions []struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &decoded))
	assert.Equal(t, 1, decoded.Version)
	assert.Len(t, decoded.Partitions, 3)
	assert.Equal(t, "b", parts[0].Topic, "input slice is not reordered")

	b.Reset()
	require.NoError(t, WriteReassignment(&b, nil))
	assert.Equal(t, "{\"version\":1,\"partitions\":[]}\n", b.String())
	assert.True(t, slices.IsSortedFunc([]Partition{{Topic: "a"}, {Topic: "a", Partition: 1}}, ComparePartitions))
}
