package topology

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSizeDist(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SizeDist
		err  string
	}{
		{"lognormal", SizeDist{Kind: "lognormal", Median: 1 << 30, Sigma: 2}, ""},
		{"lognormal:median=1GiB,sigma=2", SizeDist{Kind: "lognormal", Median: 1 << 30, Sigma: 2}, ""},
		{"lognormal:sigma=1.5,median=500MB", SizeDist{Kind: "lognormal", Median: 500e6, Sigma: 1.5}, ""},
		{"pareto:alpha=1.2,min=64MiB", SizeDist{Kind: "pareto", Alpha: 1.2, Min: 64 << 20}, ""},
		{"pareto:min=4096", SizeDist{Kind: "pareto", Alpha: 1.2, Min: 4096}, ""},
		{"zipf", SizeDist{}, "want lognormal"},
		{"lognormal:alpha=1", SizeDist{}, "alpha: not a parameter of lognormal"},
		{"lognormal:median", SizeDist{}, "want NAME=VALUE"},
		{"lognormal:sigma=-1", SizeDist{}, "sigma: \"-1\" is not a positive number"},
		{"lognormal:sigma=11", SizeDist{}, "sigma: at most 10"},
		{"lognormal:sigma=1,sigma=2", SizeDist{}, "sigma given twice"},
		{"pareto:alpha=0.01", SizeDist{}, "alpha: at least 0.1"},
		{"pareto:min=0B", SizeDist{}, "is not a size from 1B to 1PiB"},
		{"pareto:min=2PiB", SizeDist{}, "is not a size"},
		{"lognormal:median=NaNGiB", SizeDist{}, "is not a size"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSizeDist(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			back, err := ParseSizeDist(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, back, "String reads back")
		})
	}
}

// FuzzParseSizeDist: any --sizes value parses or fails with one line, and
// what parses draws sizes within 1 B..MaxDrawBytes.
func FuzzParseSizeDist(f *testing.F) {
	for _, s := range []string{"lognormal", "lognormal:median=1GiB,sigma=2", "pareto:alpha=1.2,min=64MiB", "pareto:min=1.5TB", "x:y=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseSizeDist(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("two lines: %q", err)
			}
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 100 {
			if x := d.Draw(rng); x < 1 || x > MaxDrawBytes {
				t.Fatalf("%s drew %d", s, x)
			}
		}
	})
}

// Draws follow the distribution: the median of lognormal draws is near its
// median parameter, and Pareto's least draw is at least its minimum, with a
// tail: the top 1% of 20,000 partitions holds a large share of the bytes.
func TestSizeDistDraw(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ln := SizeDist{Kind: "lognormal", Median: 1 << 30, Sigma: 2}
	pa := SizeDist{Kind: "pareto", Alpha: 1.2, Min: 64 << 20}
	for _, d := range []SizeDist{ln, pa} {
		v := make([]int64, 20000)
		var total float64
		for i := range v {
			v[i] = d.Draw(rng)
			total += float64(v[i])
		}
		slices.Sort(v)
		var top float64
		for _, x := range v[len(v)-200:] {
			top += float64(x)
		}
		share := top / total
		switch d.Kind {
		case "lognormal":
			med := float64(v[len(v)/2])
			assert.InDelta(t, 1.0, med/float64(1<<30), 0.05, "median")
			// Theory: the top 1% of a lognormal with sigma 2 holds ~25-35%.
			assert.Greater(t, share, 0.15, "lognormal tail share")
		case "pareto":
			assert.GreaterOrEqual(t, v[0], int64(64<<20))
			assert.Greater(t, share, 0.2, "pareto tail share")
		}
		assert.Greater(t, float64(v[len(v)-1])/float64(v[len(v)/2]), 50.0, "%s: the largest is far above the median", d.Kind)
	}
}

// Sizes are drawn after placement: the same seed places the same replicas
// with and without them, and the same seed draws the same sizes.
func TestGenerateSizes(t *testing.T) {
	d := SizeDist{Kind: "lognormal", Median: 1 << 30, Sigma: 2}
	o := GenOptions{Brokers: 9, Racks: 3, Topics: 5, Partitions: 60, ReplicationFactor: 3, Skew: 1}
	plain, err := Generate(o, rand.New(rand.NewPCG(7, 7)))
	require.NoError(t, err)
	o.Sizes = &d
	a, err := Generate(o, rand.New(rand.NewPCG(7, 7)))
	require.NoError(t, err)
	b, err := Generate(o, rand.New(rand.NewPCG(7, 7)))
	require.NoError(t, err)
	for i := range a.Partitions {
		assert.Equal(t, plain.Partitions[i].Replicas, a.Partitions[i].Replicas)
		assert.Equal(t, int64(-1), plain.Partitions[i].SizeBytes)
		assert.Positive(t, a.Partitions[i].SizeBytes)
		assert.Equal(t, a.Partitions[i].SizeBytes, b.Partitions[i].SizeBytes)
	}
	// The sizes survive a layout round trip, through both readers.
	var buf bytes.Buffer
	require.NoError(t, WriteLayout(&buf, a))
	assert.Contains(t, buf.String(), `"size_bytes":`)
	checkFastEqualsSlow(t, buf.Bytes())
	back, err := LoadJSON(buf.Bytes(), "a.json")
	require.NoError(t, err)
	for i := range a.Partitions {
		assert.Equal(t, a.Partitions[i].SizeBytes, back.Partitions[i].SizeBytes)
	}
	// A plan file carries no sizes: Kafka's tool reads it.
	buf.Reset()
	require.NoError(t, WriteReassignment(&buf, a.Partitions))
	assert.NotContains(t, buf.String(), "size_bytes")
}

func TestLoadSizes(t *testing.T) {
	const head = `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]`
	for _, tc := range []struct {
		name        string
		fields      string
		size, local int64
		err         string
	}{
		{"absent", ``, -1, 0, ""},
		{"size", `,"size_bytes":100`, 100, 0, ""},
		{"unknown", `,"size_bytes":-1`, -1, 0, ""},
		{"tiered", `,"size_bytes":100,"local_bytes":7`, 100, 7, ""},
		{"negative", `,"size_bytes":-2`, 0, 0, "size_bytes"},
		{"local above size", `,"size_bytes":100,"local_bytes":101`, 0, 0, "local_bytes"},
		{"local without size", `,"local_bytes":5`, 0, 0, "local_bytes"},
		{"local negative", `,"size_bytes":100,"local_bytes":-5`, 0, 0, "local_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(head + tc.fields + `}]}`)
			checkFastEqualsSlow(t, data)
			c, err := LoadJSON(data, "in.json")
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.NotContains(t, err.Error(), "\n")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.size, c.Partitions[0].SizeBytes)
			assert.Equal(t, tc.local, c.Partitions[0].LocalBytes)
		})
	}
}

func TestCopyBytes(t *testing.T) {
	for _, tc := range []struct{ size, local, want int64 }{
		{100, 0, 100}, {100, 7, 7}, {100, 100, 100}, {-1, 0, -1}, {0, 0, 0},
	} {
		p := Partition{SizeBytes: tc.size, LocalBytes: tc.local}
		assert.Equal(t, tc.want, p.CopyBytes(), "%+v", tc)
	}
}

// KafkaGenerate places every partition anew as Kafka's tool does: same
// keys, replication factors and sizes, replicas on distinct target brokers
// in distinct racks, leaders spread round robin over the brokers.
func TestKafkaGenerate(t *testing.T) {
	d := SizeDist{Kind: "pareto", Alpha: 1.2, Min: 1 << 20}
	c, err := Generate(GenOptions{Brokers: 9, Racks: 3, Topics: 4, Partitions: 90, ReplicationFactor: 3, Scatter: 1, Sizes: &d}, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	c.Normalize()
	g := KafkaGenerate(c, c.Brokers, rand.New(rand.NewPCG(2, 2)))
	require.Len(t, g.Partitions, len(c.Partitions))
	leaders := map[int32]int{}
	moved := 0
	for i, p := range g.Partitions {
		q := c.Partitions[i]
		assert.Equal(t, q.Key(), p.Key())
		assert.Equal(t, q.SizeBytes, p.SizeBytes)
		require.Len(t, p.Replicas, 3)
		racks := map[string]bool{}
		for _, r := range p.Replicas {
			b, ok := c.Broker(r)
			require.True(t, ok)
			racks[b.Rack] = true
			if !slices.Contains(q.Replicas, r) {
				moved++
			}
		}
		assert.Len(t, racks, 3, "%s: replicas in distinct racks", p.Key())
		leaders[p.Replicas[0]]++
	}
	lo, hi := math.MaxInt, 0
	for _, n := range leaders {
		lo, hi = min(lo, n), max(hi, n)
	}
	assert.LessOrEqual(t, hi-lo, 4, "leaders round robin per topic: within one per topic")
	assert.Greater(t, moved, len(c.Partitions), "a fresh placement moves most replicas")
}
