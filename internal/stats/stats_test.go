package stats

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSkewOf(t *testing.T) {
	tests := []struct {
		name        string
		in          map[int32]float64
		maxOverMean float64
		cv          float64
		jain        float64
	}{
		{"even", map[int32]float64{1: 100, 2: 100, 3: 100}, 1, 0, 1},
		{"roundrobin after a leader move", map[int32]float64{1: 200, 2: 100}, 4.0 / 3, 1.0 / 3, 0.9},
		{"all on one of three", map[int32]float64{1: 0, 2: 9, 3: 0}, 3, math.Sqrt2, 1.0 / 3},
		{"single broker", map[int32]float64{7: 5}, 1, 0, 1},
		{"all zero", map[int32]float64{1: 0, 2: 0}, 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SkewOf(tt.in)
			assert.InDelta(t, tt.maxOverMean, s.MaxOverMean, 1e-12)
			assert.InDelta(t, tt.cv, s.CV, 1e-12)
			assert.InDelta(t, tt.jain, s.Jain, 1e-12)
			require.Len(t, s.Shares, len(tt.in))
			for i := 1; i < len(s.Shares); i++ {
				assert.Less(t, s.Shares[i-1].ID, s.Shares[i].ID, "sorted by id")
			}
		})
	}
	assert.Equal(t, Skew{}, SkewOf(nil))
	c := SkewOfCounts(map[int32]int64{1: 2, 2: 1})
	assert.InDelta(t, 2.0/3, c.Shares[0].Share, 1e-12)
}

// Properties: Jain in [1/n, 1], max/mean in [1, n], CV >= 0, shares sum to 1,
// and every figure is scale invariant.
func TestSkewProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for range 2000 {
		n := 1 + rng.Intn(20)
		in := map[int32]float64{}
		scaled := map[int32]float64{}
		k := 0.5 + rng.Float64()*100
		for i := range n {
			v := float64(rng.Intn(4)) * rng.Float64() * 1000
			in[int32(i)] = v
			scaled[int32(i)] = v * k
		}
		s := SkewOf(in)
		fn := float64(n)
		assert.GreaterOrEqual(t, s.Jain, 1/fn-1e-12)
		assert.LessOrEqual(t, s.Jain, 1+1e-12)
		assert.GreaterOrEqual(t, s.MaxOverMean, 1-1e-12)
		assert.LessOrEqual(t, s.MaxOverMean, fn+1e-12)
		assert.GreaterOrEqual(t, s.CV, 0.0)
		// Jain = 1 / (1 + CV^2) for the population CV.
		assert.InDelta(t, 1/(1+s.CV*s.CV), s.Jain, 1e-9)
		total := 0.0
		for _, sh := range s.Shares {
			total += sh.Share
		}
		if s.Shares[0].Value+total > 0 && total > 0 {
			assert.InDelta(t, 1, total, 1e-9)
		}
		s2 := SkewOf(scaled)
		assert.InDelta(t, s.Jain, s2.Jain, 1e-9)
		assert.InDelta(t, s.MaxOverMean, s2.MaxOverMean, 1e-9)
	}
}

func TestLatency(t *testing.T) {
	l, err := NewLatency(time.Minute, 100*time.Millisecond)
	require.NoError(t, err)
	for i := 1; i <= 1000; i++ {
		l.Record(time.Duration(i) * time.Millisecond) // 1..1000 ms
	}
	l.Record(2 * time.Minute) // clamped
	l.Record(-time.Millisecond)
	s := l.Summary()
	assert.Equal(t, int64(1002), s.Count)
	assert.Equal(t, int64(1), l.Clamped())
	// HdrHistogram keeps 3 significant digits.
	assert.InEpsilon(t, 500, s.P50, 0.002)
	assert.InEpsilon(t, 950, s.P95, 0.002)
	assert.InEpsilon(t, 990, s.P99, 0.002)
	assert.InEpsilon(t, 999, s.P999, 0.002)
	assert.InEpsilon(t, 60000, s.Max, 0.002)
	assert.InDelta(t, 901.0/1002, s.ViolationRate, 1e-12, "901 samples above 100 ms (101..1000 and the clamped one)")

	other, err := NewLatency(time.Minute, 100*time.Millisecond)
	require.NoError(t, err)
	other.Record(time.Second)
	require.NoError(t, l.Merge(other))
	assert.Equal(t, int64(1003), l.Count())
	odd, err := NewLatency(time.Minute, time.Second)
	require.NoError(t, err)
	require.Error(t, l.Merge(odd), "different objectives do not merge")
	assert.InDelta(t, 902.0/1003, l.ViolationRate(), 1e-12)

	none, err := NewLatency(time.Second, 0)
	require.NoError(t, err)
	assert.Zero(t, none.ViolationRate())
	none.Record(time.Hour)
	assert.Zero(t, none.ViolationRate(), "no objective, no violations")

	_, err = NewLatency(time.Microsecond, 0)
	require.Error(t, err)
	_, err = NewLatency(time.Second, -1)
	require.Error(t, err)
}

func TestRates(t *testing.T) {
	samples := []time.Duration{10, 20, 30, 40}
	assert.InDelta(t, 0.5, ViolationRate(samples, 20), 1e-12, "strictly above the objective")
	assert.Zero(t, ViolationRate(nil, 1))
	assert.InDelta(t, 0.01, LossRate(1, 100), 1e-12)
	assert.Zero(t, LossRate(0, 0))
	tests := []struct{ tput, viol, loss, want float64 }{
		{100, 0, 0, 100},
		{100, 0.1, 0, 90},
		{100, 0.1, 0.5, 45},
		{100, 1, 0, 0},
		{100, -0.2, 1.5, 0}, // clamped rates
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, TimelyThroughput(tt.tput, tt.viol, tt.loss), 1e-12)
	}
}

func TestMeanCI(t *testing.T) {
	// Reference: scipy.stats.t.ppf(0.995, 4) = 4.604094871349992; half width
	// t*s/sqrt(n) = 0.9477728070735977 (see TestKS2AgainstScipy for the script).
	ci, err := MeanCI([]float64{15.52, 14.9, 16.1, 15.3, 15.8}, 0.99)
	require.NoError(t, err)
	assert.InDelta(t, 15.524, ci.Mean, 1e-12)
	assert.InDelta(t, 0.9477728070735977, ci.Half, 1e-9)
	assert.InDelta(t, ci.Mean-ci.Half, ci.Low, 1e-12)
	assert.InDelta(t, ci.Mean+ci.Half, ci.High, 1e-12)
	assert.Equal(t, 5, ci.N)

	same, err := MeanCI([]float64{3, 3, 3}, 0.99)
	require.NoError(t, err)
	assert.Zero(t, same.Half)

	_, err = MeanCI([]float64{1}, 0.99)
	require.ErrorContains(t, err, "at least 2")
	_, err = MeanCI([]float64{1, 2}, 1)
	require.ErrorContains(t, err, "level")
}

// frac returns frac(i*sqrt(k))*scale + shift for i = 1..n: a deterministic
// sample both Go and numpy compute bit for bit.
func frac(n int, k, scale, shift float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		x := float64(i+1) * math.Sqrt(k)
		out[i] = (x-math.Floor(x))*scale + shift
	}
	return out
}

// Reference values from scipy 1.17.1:
//
//	stats.ks_2samp(a, b)                 -> D, p (method auto: exact when n1*n2 <= 10000)
//	stats.kstwobign.sf(lambda_stephens)  -> the asymptotic p KS2 computes
//	stats.ks_2samp(a, b, method="asymp") -> scipy's own asymptotic p (kstwo with rounded ne)
func TestKS2AgainstScipy(t *testing.T) {
	small1 := []float64{0.61, 0.29, 0.06, 0.59, -1.73, -0.74, 0.51, -0.56, 0.39, 1.64, 0.05, -0.06, 0.64, -0.82, 0.37, 1.77, 1.09, -1.28, 2.36, 1.31, 1.05, -0.32, -0.4, 1.06, -2.47}
	small2 := []float64{2.2, 1.66, 1.38, 0.2, 0.36, 0.0, 0.96, 1.56, 0.44, 1.5, -0.3, 0.66, 2.31, 3.29, -0.27, -0.37, -0.38, -0.29, -0.71, 1.48}
	tests := []struct {
		name       string
		a, b       []float64
		d, p       float64
		exact      bool
		scipyAsymp float64
	}{
		{"small 25x20", small1, small2, 0.28, 0.2933789985549772, true, 0.29590926388673755},
		{"exact 50x60", frac(50, 2, 1, 0), frac(60, 3, 1.2, 0), 0.19333333333333333, 0.2280575658333467, true, 0.23303855752765879},
		{"exact 100x100", frac(100, 2, 1, 0), frac(100, 3, 1, 0.1), 0.12, 0.469506448503778, true, 0.43376796613102275},
		{"asymptotic 300x400", frac(300, 2, 1, 0), frac(400, 3, 1.1, 0), 0.095, 0.08524687895019713, false, 0.08550907001444419},
		{"asymptotic 2000x1500", frac(2000, 2, 1, 0), frac(1500, 3, 1, 0.03), 0.032, 0.33888226283392114, false, 0.3368529973109078},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := KS2(tt.a, tt.b)
			require.NoError(t, err)
			assert.InDelta(t, tt.d, r.D, 1e-12)
			assert.Equal(t, tt.exact, r.Exact)
			assert.InDelta(t, tt.p, r.P, 1e-9)
			// Our asymptotic formula and scipy's differ in the effective-n
			// correction only: within 0.01 of each other.
			assert.InDelta(t, tt.scipyAsymp, KolmogorovQ(ksLambda(r.D, r.N1, r.N2)), 0.01)
		})
	}
}

func TestKolmogorovQ(t *testing.T) {
	// scipy.stats.kstwobign.sf(lambda)
	ref := map[float64]float64{
		0.3: 0.9999906941986655, 0.5: 0.9639452436648751, 0.8: 0.5441424115741981,
		1.0: 0.26999967167735456, 1.36: 0.049485876755377876, 1.63: 0.009846364888486529,
		2.0: 0.0006709252557796953, 3.0: 3.045995948942526e-08,
	}
	for l, want := range ref {
		assert.InDelta(t, want, KolmogorovQ(l), 1e-9*math.Max(1, want*1e3), "lambda %v", l)
	}
	assert.Equal(t, 1.0, KolmogorovQ(0))
	assert.Equal(t, 1.0, KolmogorovQ(0.1))
}

// Properties: identical samples give D = 0 and p = 1; p is in [0, 1]; D is
// symmetric; the test does not modify its inputs; shifting one sample far
// away gives D = 1 and a tiny p.
func TestKS2Properties(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for range 200 {
		n1, n2 := 1+rng.Intn(150), 1+rng.Intn(150)
		a, b := make([]float64, n1), make([]float64, n2)
		for i := range a {
			a[i] = rng.NormFloat64()
		}
		for i := range b {
			b[i] = rng.NormFloat64() + rng.Float64()
		}
		a0 := append([]float64(nil), a...)
		r1, err := KS2(a, b)
		require.NoError(t, err)
		r2, err := KS2(b, a)
		require.NoError(t, err)
		assert.Equal(t, a0, a, "input unchanged")
		assert.InDelta(t, r1.D, r2.D, 1e-12)
		assert.InDelta(t, r1.P, r2.P, 1e-9)
		assert.True(t, r1.P >= 0 && r1.P <= 1, "p %v", r1.P)
		same, err := KS2(a, a)
		require.NoError(t, err)
		assert.Zero(t, same.D)
		assert.InDelta(t, 1, same.P, 1e-9)
	}
	far := frac(200, 2, 1, 10)
	r, err := KS2(frac(200, 3, 1, 0), far)
	require.NoError(t, err)
	assert.Equal(t, 1.0, r.D)
	assert.Less(t, r.P, 1e-50)

	_, err = KS2(nil, []float64{1})
	require.Error(t, err)
	_, err = KS2([]float64{math.NaN()}, []float64{1})
	require.Error(t, err)
}

func TestLatencyEncodeRoundTrip(t *testing.T) {
	l, err := NewLatency(time.Minute, 10*time.Millisecond)
	require.NoError(t, err)
	for i := range 5000 {
		l.Record(time.Duration(i*37) * time.Microsecond)
	}
	l.Record(2 * time.Minute) // clamped
	enc, err := l.Encode()
	require.NoError(t, err)
	got, err := DecodeLatency(enc, time.Minute, 10*time.Millisecond, l.Violating(), l.Clamped())
	require.NoError(t, err)
	assert.Equal(t, l.Summary(), got.Summary())
	assert.Equal(t, l.Clamped(), got.Clamped())

	// Another range or precision is refused before its counts are read.
	_, err = DecodeLatency(enc, time.Hour, 10*time.Millisecond, 0, 0)
	require.ErrorContains(t, err, "covers 1..60000000µs")
	for _, bad := range []string{"", "!!", "AAAA", enc[:20]} {
		_, err = DecodeLatency(bad, time.Minute, 0, 0, 0)
		assert.Error(t, err, "%q", bad)
	}
	_, err = DecodeLatency(enc, time.Minute, 0, l.Count()+1, 0)
	assert.ErrorContains(t, err, "violating")
}
