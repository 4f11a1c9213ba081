package workload

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestParseKeys(t *testing.T) {
	valid := []struct {
		in   string
		want Keys
	}{
		{"none", Keys{}},
		{" none ", Keys{}},
		{"uniform:1", Keys{Kind: KeysUniform, N: 1}},
		{"uniform:1000", Keys{Kind: KeysUniform, N: 1000}},
		{"uniform:1000000", Keys{Kind: KeysUniform, N: MaxKeys}},
		{"zipf:1.2:500", Keys{Kind: KeysZipf, S: 1.2, N: 500}},
		{"zipf:0:10", Keys{Kind: KeysZipf, S: 0, N: 10}},
		{"zipf:100:3", Keys{Kind: KeysZipf, S: 100, N: 3}},
	}
	for _, tt := range valid {
		got, err := ParseKeys(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	for _, bad := range []string{
		"", " ", ":", "none:1", "uniform", "uniform:", "uniform:0", "uniform:-3", "uniform:x", "uniform:1000001",
		"uniform:10:2", "zipf", "zipf:1", "zipf:1:", "zipf::10", "zipf:-1:10", "zipf:NaN:10", "zipf:101:10",
		"zipf:1:0", "zipf:1:10:2", "zipf:x:10", "hot:10", "UNIFORM:10",
	} {
		_, err := ParseKeys(bad)
		require.Error(t, err, bad)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), bad)
		assert.Equal(t, FieldKeys, errkind.FieldOf(err), bad)
		assert.ErrorContains(t, err, "keys ", bad)
	}
}

func TestKeysStringRoundTrip(t *testing.T) {
	for _, k := range []Keys{{}, {Kind: KeysUniform, N: 7}, {Kind: KeysZipf, S: 1.25, N: 300}, {Kind: KeysZipf, S: 0, N: 1}, {Kind: KeysZipf, S: 0.1, N: MaxKeys}} {
		got, err := ParseKeys(k.String())
		require.NoError(t, err, k.String())
		assert.Equal(t, k, got, k.String())
	}
	assert.Equal(t, "none", Keys{}.String())
	assert.Equal(t, "zipf:1.5:20", Keys{Kind: KeysZipf, S: 1.5, N: 20}.String())
}

func TestWeights(t *testing.T) {
	assert.Nil(t, Keys{}.Weights(), "keyless")
	assert.False(t, Keys{}.Keyed())
	for _, k := range []Keys{{Kind: KeysUniform, N: 1}, {Kind: KeysUniform, N: 13}, {Kind: KeysZipf, S: 1, N: 100}, {Kind: KeysZipf, S: 2.5, N: 1000}, {Kind: KeysZipf, S: 0, N: 8}} {
		w := k.Weights()
		require.Len(t, w, k.N, k.String())
		var sum float64
		for _, x := range w {
			sum += x
		}
		assert.InDelta(t, 1, sum, 1e-9, k.String())
	}
	u := Keys{Kind: KeysUniform, N: 4}.Weights()
	assert.Equal(t, []float64{0.25, 0.25, 0.25, 0.25}, u)
	// zipf:1:3: weights 1, 1/2, 1/3 over their sum 11/6.
	z := Keys{Kind: KeysZipf, S: 1, N: 3}.Weights()
	assert.InDeltaSlice(t, []float64{6.0 / 11, 3.0 / 11, 2.0 / 11}, z, 1e-12)
	// zipf with S 0 is uniform.
	assert.InDeltaSlice(t, []float64{0.2, 0.2, 0.2, 0.2, 0.2}, Keys{Kind: KeysZipf, S: 0, N: 5}.Weights(), 1e-12)
}

func TestZipfOrdering(t *testing.T) {
	for _, s := range []float64{0.5, 1, 1.2, 3} {
		w := Keys{Kind: KeysZipf, S: s, N: 200}.Weights()
		for i := 1; i < len(w); i++ {
			assert.Less(t, w[i], w[i-1], "zipf:%g key %d", s, i)
			// The ratio of consecutive weights is ((i)/(i+1))^S.
			assert.InDelta(t, math.Pow(float64(i)/float64(i+1), s), w[i]/w[i-1], 1e-12)
		}
	}
}

func TestKey(t *testing.T) {
	assert.Equal(t, []byte("key-0"), Key(0))
	assert.Equal(t, []byte("key-12345"), Key(12345))
}

func TestPartitionMass(t *testing.T) {
	for _, k := range []Keys{{}, {Kind: KeysUniform, N: 1}, {Kind: KeysUniform, N: 97}, {Kind: KeysZipf, S: 1.1, N: 1000}, {Kind: KeysZipf, S: 2, N: 5}} {
		for _, n := range []int{1, 2, 3, 7, 12, 64} {
			mass := k.PartitionMass(n)
			require.Len(t, mass, n)
			var sum float64
			for _, m := range mass {
				sum += m
			}
			assert.InDelta(t, 1, sum, 1e-9, "%s over %d", k, n)
			// Brute force: hash every key, count its weight by hand.
			want := make([]float64, n)
			if !k.Keyed() {
				for p := range want {
					want[p] = 1 / float64(n)
				}
			} else {
				for i := range k.N {
					h := Murmur2([]byte("key-" + itoa(i)))
					p := int(h&0x7fffffff) % n
					switch k.Kind {
					case KeysUniform:
						want[p]++
					case KeysZipf:
						want[p] += math.Pow(float64(i+1), -k.S)
					}
				}
				var total float64
				for _, x := range want {
					total += x
				}
				for p := range want {
					want[p] /= total
				}
			}
			assert.InDeltaSlice(t, want, mass, 1e-12, "%s over %d", k, n)
		}
	}
	assert.Empty(t, Keys{Kind: KeysUniform, N: 3}.PartitionMass(0))
	// A single key lands wholly on one partition.
	one := Keys{Kind: KeysUniform, N: 1}.PartitionMass(5)
	var full int
	for _, m := range one {
		if m == 1 {
			full++
		} else {
			assert.Zero(t, m)
		}
	}
	assert.Equal(t, 1, full)
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestSampler(t *testing.T) {
	assert.Nil(t, NewSampler(Keys{}, rand.New(rand.NewPCG(1, 2))), "keyless")
	const draws = 200_000
	for _, k := range []Keys{{Kind: KeysUniform, N: 10}, {Kind: KeysZipf, S: 1.2, N: 50}, {Kind: KeysZipf, S: 0.8, N: 1}} {
		s := NewSampler(k, rand.New(rand.NewPCG(4, 2)))
		counts := make([]int, k.N)
		for range draws {
			i := s.Next()
			require.True(t, i >= 0 && i < k.N, "%s: index %d", k, i)
			counts[i]++
		}
		for i, w := range k.Weights() {
			// Five standard deviations of a binomial frequency.
			tol := 5 * math.Sqrt(w*(1-w)/draws)
			assert.InDelta(t, w, float64(counts[i])/draws, tol+1e-12, "%s key %d", k, i)
		}
	}
}

func TestSamplerDeterministic(t *testing.T) {
	k := Keys{Kind: KeysZipf, S: 1, N: 100}
	a, b := NewSampler(k, rand.New(rand.NewPCG(9, 9))), NewSampler(k, rand.New(rand.NewPCG(9, 9)))
	for range 1000 {
		require.Equal(t, a.Next(), b.Next())
	}
}

// TestMurmur2KafkaVectors are Kafka's own (clients UtilsTest.testMurmur2),
// as Java's signed int.
func TestMurmur2KafkaVectors(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		assert.Equal(t, tt.want, int32(Murmur2([]byte(tt.in))), tt.in)
	}
}

func FuzzParseKeys(f *testing.F) {
	for _, s := range []string{"none", "uniform:100", "zipf:1.2:1000", "zipf:0:1", "uniform:", "zipf:1e400:3", "::", "zipf:NaN:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKeys(s)
		if err != nil {
			if errkind.FieldOf(err) != FieldKeys {
				t.Fatalf("%q: error %v does not name %s", s, err, FieldKeys)
			}
			return
		}
		if k.Keyed() && (k.N < 1 || k.N > MaxKeys || !(k.S >= 0) || k.S > 100) {
			t.Fatalf("%q: out of range %+v", s, k)
		}
		back, err := ParseKeys(k.String())
		if err != nil || back != k {
			t.Fatalf("%q: %+v does not round-trip through %q: %+v, %v", s, k, k.String(), back, err)
		}
	})
}
