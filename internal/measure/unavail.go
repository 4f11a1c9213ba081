package measure

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// FieldPartitions is the field `measure unavailability`'s partition-count
// list is about.
const FieldPartitions = "partitions"

// MaxUnavailPartitions bounds one count of --partitions: a broker leading
// more than this on a test cluster is beyond what the measurement is for.
const MaxUnavailPartitions = 10000

// maxUnavailCounts bounds how many counts one list may name.
const maxUnavailCounts = 64

// ParsePartitionCounts parses a comma-separated list of partition counts
// ("1,10,100,1000"): each a positive integer up to MaxUnavailPartitions,
// no repeats. The counts are returned ascending.
func ParsePartitionCounts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errkind.Usagef(FieldPartitions, "empty list (want counts such as 1,10,100,1000)")
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, errkind.Usagef(FieldPartitions, "empty count in %q", s)
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, errkind.Usagef(FieldPartitions, "%q is not a whole number", f)
		}
		if n < 1 || n > MaxUnavailPartitions {
			return nil, errkind.Usagef(FieldPartitions, "%d: want 1 to %d partitions", n, MaxUnavailPartitions)
		}
		if slices.Contains(out, n) {
			return nil, errkind.Usagef(FieldPartitions, "%d is given twice", n)
		}
		if len(out) == maxUnavailCounts {
			return nil, errkind.Usagef(FieldPartitions, "more than %d counts", maxUnavailCounts)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// UnavailRun is one kill of a broker leading Partitions partitions: how long
// after the kill each of them accepted an acks=all write again.
type UnavailRun struct {
	Partitions int `json:"partitions"`
	// Repeat numbers the runs of one count from 1.
	Repeat int `json:"repeat"`
	// AllMS is the unavailability: until the last partition accepted a
	// write. FirstMS the first one, MedianMS and P90MS the per-partition
	// median and 90th percentile.
	AllMS    float64 `json:"all_ms"`
	FirstMS  float64 `json:"first_ms"`
	MedianMS float64 `json:"median_ms"`
	P90MS    float64 `json:"p90_ms"`
	// ProbeLagMS is how long after the kill the probes started (the
	// killer's report of the kill time against the probes' first send).
	ProbeLagMS float64 `json:"probe_lag_ms"`
}

// SummarizeUnavailRun summarises the per-partition times of one run.
func SummarizeUnavailRun(partitions, repeat int, perPartition []time.Duration, probeLag time.Duration) UnavailRun {
	r := UnavailRun{Partitions: partitions, Repeat: repeat, ProbeLagMS: ms(probeLag)}
	if len(perPartition) == 0 {
		return r
	}
	s := slices.Clone(perPartition)
	slices.Sort(s)
	r.FirstMS, r.AllMS = ms(s[0]), ms(s[len(s)-1])
	r.MedianMS = unavailQuantile(s, 0.5)
	r.P90MS = unavailQuantile(s, 0.9)
	return r
}

// unavailQuantile is the q-quantile of sorted s in ms, interpolated
// between the closest ranks.
func unavailQuantile(s []time.Duration, q float64) float64 {
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	f := pos - float64(lo)
	return ms(s[lo])*(1-f) + ms(s[hi])*f
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Verdicts of UnavailFit.Verdict.
const (
	VerdictLinear       = "linear"
	VerdictConstant     = "constant"
	VerdictCurved       = "curved"
	VerdictUndetermined = "undetermined"
)

// unavailAlpha is the significance level of the fit's tests.
const unavailAlpha = 0.05

// UnavailFit is the least-squares line unavailability = detection + u *
// partitions over every run (each run one point), with the models it is
// compared against. Optional figures are nil where the data cannot give
// them (too few points or distinct counts).
type UnavailFit struct {
	Points int `json:"points"`
	Counts int `json:"distinct_counts"`
	// DetectionMS is the intercept, UPerPartitionMS the slope, each with
	// its standard error and 95% confidence interval.
	DetectionMS     float64   `json:"detection_ms"`
	DetectionSEMS   *float64  `json:"detection_se_ms,omitempty"`
	DetectionCI95MS []float64 `json:"detection_ci95_ms,omitempty"`
	UPerPartitionMS float64   `json:"u_per_partition_ms"`
	USEMS           *float64  `json:"u_se_ms,omitempty"`
	UCI95MS         []float64 `json:"u_ci95_ms,omitempty"`
	// UP is the p-value of the slope against 0 (t test).
	UP *float64 `json:"u_p,omitempty"`
	R2 float64  `json:"r2"`
	// Residuals are each point's measured minus fitted ms, in the order of
	// the points.
	Residuals []float64 `json:"residuals_ms"`
	// RSS of the constant (mean), linear and quadratic models; the
	// quadratic's coefficients (ms, ms per partition, ms per partition²)
	// and the p-value of its F test against the line.
	ConstantRSS  float64   `json:"constant_rss"`
	LinearRSS    float64   `json:"linear_rss"`
	QuadraticRSS *float64  `json:"quadratic_rss,omitempty"`
	Quadratic    []float64 `json:"quadratic_coefficients,omitempty"`
	QuadraticP   *float64  `json:"quadratic_p,omitempty"`
	// LackOfFitP is the lack-of-fit F test's p-value (the line's residuals
	// against the spread among repeats of one count): small means the
	// means of the counts do not lie on a line.
	LackOfFitP *float64 `json:"lack_of_fit_p,omitempty"`
	// Verdict is linear, constant, curved or undetermined; Why says it in
	// a sentence with the figures.
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}

// FitUnavailability fits the runs. It needs two distinct partition counts
// (a usage error of field "partitions" otherwise).
func FitUnavailability(runs []UnavailRun) (*UnavailFit, error) {
	xs := make([]float64, len(runs))
	ys := make([]float64, len(runs))
	for i, r := range runs {
		xs[i], ys[i] = float64(r.Partitions), r.AllMS
	}
	return unavailFitXY(xs, ys)
}

// unavailFitXY is FitUnavailability on points.
func unavailFitXY(xs, ys []float64) (*UnavailFit, error) {
	n := len(xs)
	groups := unavailGroups(xs, ys)
	k := len(groups)
	if k < 2 {
		return nil, errkind.Usagef(FieldPartitions, "a line needs at least two distinct partition counts, got %d", k)
	}
	for i := range ys {
		if math.IsNaN(ys[i]) || math.IsInf(ys[i], 0) || math.IsNaN(xs[i]) || math.IsInf(xs[i], 0) {
			return nil, errkind.Usagef(FieldPartitions, "point %d is not a finite number", i+1)
		}
	}
	xm, ym := unavailMean(xs), unavailMean(ys)
	var sxx, sxy, sst float64
	for i := range xs {
		dx, dy := xs[i]-xm, ys[i]-ym
		sxx += dx * dx
		sxy += dx * dy
		sst += dy * dy
	}
	b := sxy / sxx
	a := ym - b*xm
	f := &UnavailFit{Points: n, Counts: k, DetectionMS: a, UPerPartitionMS: b, ConstantRSS: sst}
	f.Residuals = make([]float64, n)
	var rss float64
	for i := range xs {
		r := ys[i] - (a + b*xs[i])
		f.Residuals[i] = r
		rss += r * r
	}
	rss = unavailClean(rss, sst)
	f.LinearRSS = rss
	f.R2 = 1
	if sst > 0 {
		f.R2 = 1 - rss/sst
	}
	if df := n - 2; df > 0 {
		s2 := rss / float64(df)
		seB := math.Sqrt(s2 / sxx)
		seA := math.Sqrt(s2 * (1/float64(n) + xm*xm/sxx))
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - unavailAlpha/2)
		f.USEMS, f.DetectionSEMS = &seB, &seA
		f.UCI95MS = []float64{b - t*seB, b + t*seB}
		f.DetectionCI95MS = []float64{a - t*seA, a + t*seA}
		p := 0.0
		switch {
		case seB > 0:
			p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Survival(math.Abs(b)/seB)
		case b == 0:
			p = 1
		}
		f.UP = &p
	}
	if k >= 3 {
		coef, qrss := unavailQuadratic(xs, ys)
		qrss = unavailClean(qrss, sst)
		f.Quadratic, f.QuadraticRSS = coef, &qrss
		if df := n - 3; df > 0 {
			p := unavailFTest(rss-qrss, 1, qrss, df)
			f.QuadraticP = &p
		}
		// Lack of fit: with repeats, the spread inside each count is the
		// pure error the line's residuals are judged against.
		var pe float64
		for _, g := range groups {
			m := unavailMean(g)
			for _, y := range g {
				pe += (y - m) * (y - m)
			}
		}
		if dfPE := n - k; dfPE > 0 {
			p := unavailFTest(rss-pe, k-2, pe, dfPE)
			f.LackOfFitP = &p
		}
	}
	f.Verdict, f.Why = unavailVerdict(f)
	return f, nil
}

// unavailClean rounds a residual sum of squares that is rounding noise
// against the total to 0, so that exact data fit exactly.
func unavailClean(rss, sst float64) float64 {
	if rss < 1e-12*math.Max(sst, 1) {
		return 0
	}
	return rss
}

// unavailFTest is the p-value of F = (num/dfNum) / (den/dfDen). A zero
// denominator gives 0 when the numerator is positive (the simpler model
// misses what the richer one fits exactly) and 1 otherwise.
func unavailFTest(num float64, dfNum int, den float64, dfDen int) float64 {
	if num <= 0 {
		return 1
	}
	if den <= 0 {
		return 0
	}
	fs := (num / float64(dfNum)) / (den / float64(dfDen))
	return distuv.F{D1: float64(dfNum), D2: float64(dfDen)}.Survival(fs)
}

// unavailVerdict judges the line against the constant and the quadratic.
func unavailVerdict(f *UnavailFit) (string, string) {
	pct := func(from, to float64) float64 {
		if from <= 0 {
			return 0
		}
		return 100 * (from - to) / from
	}
	if f.UP == nil || f.Counts < 3 {
		return VerdictUndetermined, fmt.Sprintf("%d points over %d partition counts: a line passes through them, too few to judge whether it holds (measure 3 or more counts, with repeats)", f.Points, f.Counts)
	}
	if *f.UP >= unavailAlpha {
		return VerdictConstant, fmt.Sprintf("the slope %.4g ms per partition is not significantly different from 0 (p = %.2g): unavailability does not grow measurably with the partitions the broker led; a constant (%.0f ms, the detection time) fits as well as the line (R² %.3f)", f.UPerPartitionMS, *f.UP, f.DetectionMS, f.R2)
	}
	var curved []string
	if f.QuadraticP != nil && *f.QuadraticP < unavailAlpha {
		c := "convex"
		if f.Quadratic[2] < 0 {
			c = "concave"
		}
		curved = append(curved, fmt.Sprintf("a %s quadratic cuts the residual sum of squares by %.0f%% (F test p = %.2g)", c, pct(f.LinearRSS, *f.QuadraticRSS), *f.QuadraticP))
	}
	if f.LackOfFitP != nil && *f.LackOfFitP < unavailAlpha {
		curved = append(curved, fmt.Sprintf("the counts' means stray from the line beyond the spread of their repeats (lack-of-fit p = %.2g)", *f.LackOfFitP))
	}
	if len(curved) > 0 {
		return VerdictCurved, fmt.Sprintf("unavailability grows with the partitions led (slope %.4g ms per partition, p = %.2g), but not linearly: %s", f.UPerPartitionMS, *f.UP, strings.Join(curved, "; "))
	}
	why := fmt.Sprintf("the line holds: slope %.4g ms per partition (p = %.2g), R² %.3f, the line cuts the constant's residual sum of squares by %.0f%%", f.UPerPartitionMS, *f.UP, f.R2, pct(f.ConstantRSS, f.LinearRSS))
	if f.QuadraticP != nil {
		why += fmt.Sprintf(", and a quadratic adds nothing significant (p = %.2g)", *f.QuadraticP)
	}
	if f.LackOfFitP != nil {
		why += fmt.Sprintf("; lack-of-fit p = %.2g", *f.LackOfFitP)
	}
	return VerdictLinear, why
}

// unavailGroups groups ys by their x, in ascending x.
func unavailGroups(xs, ys []float64) [][]float64 {
	idx := map[float64]int{}
	var keys []float64
	for _, x := range xs {
		if _, ok := idx[x]; !ok {
			idx[x] = 0
			keys = append(keys, x)
		}
	}
	slices.Sort(keys)
	for i, x := range keys {
		idx[x] = i
	}
	g := make([][]float64, len(keys))
	for i, x := range xs {
		g[idx[x]] = append(g[idx[x]], ys[i])
	}
	return g
}

func unavailMean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// unavailQuadratic fits y = c0 + c1 x + c2 x² by least squares (normal
// equations on x scaled to [0, 1], solved by Gaussian elimination with
// partial pivoting) and returns the coefficients in x's own units and the
// residual sum of squares. It needs three distinct x.
func unavailQuadratic(xs, ys []float64) ([]float64, float64) {
	scale := 0.0
	for _, x := range xs {
		scale = math.Max(scale, math.Abs(x))
	}
	if scale == 0 {
		scale = 1
	}
	var m [3][4]float64
	for i, x := range xs {
		z := x / scale
		p := [3]float64{1, z, z * z}
		for r := range 3 {
			for c := range 3 {
				m[r][c] += p[r] * p[c]
			}
			m[r][3] += p[r] * ys[i]
		}
	}
	for col := range 3 {
		piv := col
		for r := col + 1; r < 3; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[piv][col]) {
				piv = r
			}
		}
		m[col], m[piv] = m[piv], m[col]
		for r := range 3 {
			if r == col || m[col][col] == 0 {
				continue
			}
			k := m[r][col] / m[col][col]
			for c := col; c < 4; c++ {
				m[r][c] -= k * m[col][c]
			}
		}
	}
	var z [3]float64
	for r := range 3 {
		if m[r][r] != 0 {
			z[r] = m[r][3] / m[r][r]
		}
	}
	coef := []float64{z[0], z[1] / scale, z[2] / (scale * scale)}
	var rss float64
	for i, x := range xs {
		r := ys[i] - (coef[0] + coef[1]*x + coef[2]*x*x)
		rss += r * r
	}
	return coef, rss
}

// ElectionTime is the u to hand `kplan size` (election-time in a plan):
// the slope when it is positive and significant, else the upper end of its
// 95% confidence interval (a bound rather than a guess), at least 1µs.
// Bound reports which.
func (f *UnavailFit) ElectionTime() (u time.Duration, bound bool) {
	v := f.UPerPartitionMS
	if f.Verdict == VerdictConstant || f.Verdict == VerdictUndetermined || v <= 0 {
		bound = true
		if len(f.UCI95MS) == 2 {
			v = f.UCI95MS[1]
		}
	}
	d := time.Duration(math.Round(v * float64(time.Millisecond) / float64(time.Microsecond)))
	d *= time.Microsecond
	return max(d, time.Microsecond), bound
}
