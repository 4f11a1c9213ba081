package measure

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestParsePartitionCounts(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{in: "1,10,100,1000", want: []int{1, 10, 100, 1000}},
		{in: " 100 , 1,10", want: []int{1, 10, 100}},
		{in: "7", want: []int{7}},
		{in: "10000", want: []int{10000}},
		{in: "", err: "empty list"},
		{in: "1,,2", err: "empty count"},
		{in: "1,x", err: `"x" is not a whole number`},
		{in: "0", err: "0: want 1 to 10000"},
		{in: "-5", err: "-5: want 1 to 10000"},
		{in: "10001", err: "10001: want 1 to 10000"},
		{in: "10,10", err: "10 is given twice"},
		{in: "1.5", err: `"1.5" is not a whole number`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePartitionCounts(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tc.err)
				assert.Equal(t, errkind.Usage, errkind.KindOf(err))
				assert.Equal(t, FieldPartitions, errkind.FieldOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParsePartitionCountsTooMany(t *testing.T) {
	s := "1"
	for i := 2; i <= maxUnavailCounts+1; i++ {
		s += "," + strconv.Itoa(i)
	}
	_, err := ParsePartitionCounts(s)
	assert.ErrorContains(t, err, "more than 64 counts")
}

func runs(points ...[2]float64) []UnavailRun {
	out := make([]UnavailRun, len(points))
	for i, p := range points {
		out[i] = UnavailRun{Partitions: int(p[0]), Repeat: 1, AllMS: p[1]}
	}
	return out
}

// line returns runs on y = a + b x at xs, reps times each, with noise drawn
// from r (nil: none).
func line(a, b float64, xs []int, reps int, noise float64, r *rand.Rand) []UnavailRun {
	var out []UnavailRun
	for _, x := range xs {
		for k := range reps {
			y := a + b*float64(x)
			if r != nil {
				y += noise * r.NormFloat64()
			}
			out = append(out, UnavailRun{Partitions: x, Repeat: k + 1, AllMS: y})
		}
	}
	return out
}

func TestFitUnavailabilityExactLines(t *testing.T) {
	tests := []struct {
		name string
		a, b float64
		xs   []int
		reps int
	}{
		{"paper-like", 3000, 2.5, []int{1, 10, 100, 1000}, 3},
		{"steep", 100, 40, []int{1, 2, 3}, 2},
		{"two repeats", 5000, 0.25, []int{1, 10, 100, 1000, 5000}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := FitUnavailability(line(tc.a, tc.b, tc.xs, tc.reps, 0, nil))
			require.NoError(t, err)
			assert.InDelta(t, tc.a, f.DetectionMS, 1e-6*tc.a)
			assert.InDelta(t, tc.b, f.UPerPartitionMS, 1e-9*math.Max(1, tc.a))
			assert.InDelta(t, 1, f.R2, 1e-12)
			assert.Equal(t, 0.0, f.LinearRSS)
			require.NotNil(t, f.USEMS)
			assert.Equal(t, 0.0, *f.USEMS)
			assert.Equal(t, VerdictLinear, f.Verdict, f.Why)
			for _, r := range f.Residuals {
				assert.InDelta(t, 0, r, 1e-6)
			}
			u, bound := f.ElectionTime()
			assert.False(t, bound)
			assert.InDelta(t, tc.b*float64(time.Millisecond), float64(u), float64(time.Microsecond))
		})
	}
}

func TestFitUnavailabilityNoisy(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 3))
	xs := []int{1, 10, 100, 1000}
	const a, b, noise = 3500.0, 2.0, 50.0
	var covered int
	const trials = 200
	for range trials {
		f, err := FitUnavailability(line(a, b, xs, 3, noise, r))
		require.NoError(t, err)
		require.NotNil(t, f.USEMS)
		require.NotNil(t, f.DetectionSEMS)
		assert.Less(t, math.Abs(f.UPerPartitionMS-b), 6**f.USEMS+1e-9)
		assert.Less(t, math.Abs(f.DetectionMS-a), 6**f.DetectionSEMS+1e-9)
		if f.UCI95MS[0] <= b && b <= f.UCI95MS[1] {
			covered++
		}
		assert.Greater(t, f.R2, 0.9)
	}
	// A 95% interval covers the true slope in about 95% of trials.
	assert.Greater(t, covered, trials*85/100)
	assert.Less(t, covered, trials)
}

func TestFitUnavailabilityVerdicts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	xs := []int{1, 10, 100, 1000}
	tests := []struct {
		name string
		runs []UnavailRun
		want string
	}{
		{"linear with noise", line(3000, 3, xs, 3, 30, r), VerdictLinear},
		{"flat with noise", line(3000, 0, xs, 3, 30, r), VerdictConstant},
		{"quadratic", func() []UnavailRun {
			var out []UnavailRun
			for _, x := range []int{1, 10, 100, 300, 600, 1000} {
				for k := range 3 {
					y := 3000 + 0.01*float64(x*x) + 5*r.NormFloat64()
					out = append(out, UnavailRun{Partitions: x, Repeat: k + 1, AllMS: y})
				}
			}
			return out
		}(), VerdictCurved},
		{"step", func() []UnavailRun {
			var out []UnavailRun
			for _, x := range xs {
				for k := range 3 {
					y := 3000.0 + 5*r.NormFloat64()
					if x >= 100 {
						y += 500
					}
					out = append(out, UnavailRun{Partitions: x, Repeat: k + 1, AllMS: y})
				}
			}
			return out
		}(), VerdictCurved},
		{"two counts", line(3000, 3, []int{1, 1000}, 3, 30, r), VerdictUndetermined},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := FitUnavailability(tc.runs)
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.Verdict, f.Why)
			assert.NotEmpty(t, f.Why)
		})
	}
}

func TestFitUnavailabilityDegenerate(t *testing.T) {
	t.Run("one count", func(t *testing.T) {
		_, err := FitUnavailability(line(3000, 1, []int{100}, 3, 0, nil))
		require.Error(t, err)
		assert.ErrorContains(t, err, "two distinct partition counts")
		assert.Equal(t, FieldPartitions, errkind.FieldOf(err))
	})
	t.Run("no runs", func(t *testing.T) {
		_, err := FitUnavailability(nil)
		assert.ErrorContains(t, err, "got 0")
	})
	t.Run("all equal", func(t *testing.T) {
		f, err := FitUnavailability(line(4000, 0, []int{1, 10, 100, 1000}, 2, 0, nil))
		require.NoError(t, err)
		assert.InDelta(t, 4000, f.DetectionMS, 1e-9)
		assert.Equal(t, 0.0, f.UPerPartitionMS)
		assert.Equal(t, 1.0, f.R2)
		require.NotNil(t, f.UP)
		assert.Equal(t, 1.0, *f.UP)
		assert.Equal(t, VerdictConstant, f.Verdict, f.Why)
		u, bound := f.ElectionTime()
		assert.True(t, bound)
		assert.Equal(t, time.Microsecond, u, "a zero slope hands the smallest positive u")
	})
	t.Run("two points", func(t *testing.T) {
		f, err := FitUnavailability(runs([2]float64{1, 100}, [2]float64{11, 200}))
		require.NoError(t, err)
		assert.InDelta(t, 10, f.UPerPartitionMS, 1e-12)
		assert.InDelta(t, 90, f.DetectionMS, 1e-12)
		assert.Nil(t, f.USEMS, "no degrees of freedom for an error")
		assert.Nil(t, f.UP)
		assert.Equal(t, VerdictUndetermined, f.Verdict)
	})
	t.Run("not finite", func(t *testing.T) {
		_, err := FitUnavailability(runs([2]float64{1, 100}, [2]float64{11, math.NaN()}))
		assert.ErrorContains(t, err, "not a finite number")
	})
}

func TestFitUnavailabilityQuadraticExact(t *testing.T) {
	var rs []UnavailRun
	for _, x := range []int{1, 10, 100, 500, 1000} {
		rs = append(rs, UnavailRun{Partitions: x, AllMS: 100 + 2*float64(x) + 0.003*float64(x*x)})
	}
	f, err := FitUnavailability(rs)
	require.NoError(t, err)
	require.Len(t, f.Quadratic, 3)
	assert.InDelta(t, 100, f.Quadratic[0], 1e-6)
	assert.InDelta(t, 2, f.Quadratic[1], 1e-8)
	assert.InDelta(t, 0.003, f.Quadratic[2], 1e-11)
	require.NotNil(t, f.QuadraticRSS)
	assert.Equal(t, 0.0, *f.QuadraticRSS)
	assert.Equal(t, VerdictCurved, f.Verdict, f.Why)
}

func TestSummarizeUnavailRun(t *testing.T) {
	per := []time.Duration{3 * time.Second, 1 * time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}
	r := SummarizeUnavailRun(5, 2, per, 30*time.Millisecond)
	assert.Equal(t, UnavailRun{Partitions: 5, Repeat: 2, AllMS: 5000, FirstMS: 1000, MedianMS: 3000, P90MS: 4600, ProbeLagMS: 30}, r)
	assert.Equal(t, 3*time.Second, per[0], "the input is not reordered")
	assert.Equal(t, UnavailRun{Partitions: 3, Repeat: 1}, SummarizeUnavailRun(3, 1, nil, 0))
}
