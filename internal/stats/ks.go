package stats

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// KSResult is a two-sample Kolmogorov-Smirnov test result.
type KSResult struct {
	// D is the largest distance between the two empirical CDFs.
	D float64 `json:"d"`
	// P is the two-sided p-value: the probability of a D at least this
	// large if both samples came from the same continuous distribution.
	P float64 `json:"p"`
	// Exact tells whether P is exact (small samples) or asymptotic.
	Exact bool `json:"exact"`
	// N1 and N2 are the sample sizes.
	N1 int `json:"n1"`
	N2 int `json:"n2"`
}

// exactLimit is the largest n1*n2 for which KS2 computes the exact p-value
// (the same rule as scipy.stats.ks_2samp's method="auto").
const exactLimit = 10000

// KS2 runs the two-sample Kolmogorov-Smirnov test on a and b (not modified).
// D comes from gonum's stat.KolmogorovSmirnov. P is exact when
// len(a)*len(b) <= 10,000 (lattice-path count, assuming no ties) and
// otherwise the asymptotic Kolmogorov distribution with Stephens' effective-n
// correction: λ = (√ne + 0.12 + 0.11/√ne)·D with ne = n1·n2/(n1+n2).
func KS2(a, b []float64) (KSResult, error) {
	if len(a) == 0 || len(b) == 0 {
		return KSResult{}, fmt.Errorf("kolmogorov-smirnov test needs two non-empty samples (got %d and %d)", len(a), len(b))
	}
	for _, v := range a {
		if math.IsNaN(v) {
			return KSResult{}, fmt.Errorf("kolmogorov-smirnov test: NaN in the first sample")
		}
	}
	for _, v := range b {
		if math.IsNaN(v) {
			return KSResult{}, fmt.Errorf("kolmogorov-smirnov test: NaN in the second sample")
		}
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	// gonum accumulates CDF steps in floating point: clamp the rounding.
	r := KSResult{D: min(max(stat.KolmogorovSmirnov(x, nil, y, nil), 0), 1), N1: len(x), N2: len(y)}
	if len(x)*len(y) <= exactLimit {
		r.P, r.Exact = ksExactP(r.D, len(x), len(y)), true
	} else {
		r.P = KolmogorovQ(ksLambda(r.D, len(x), len(y)))
	}
	return r, nil
}

func ksLambda(d float64, n1, n2 int) float64 {
	ne := float64(n1) * float64(n2) / float64(n1+n2)
	s := math.Sqrt(ne)
	return (s + 0.12 + 0.11/s) * d
}

// KolmogorovQ is the survival function of the Kolmogorov distribution,
// Q(λ) = 2 Σ_{j≥1} (-1)^(j-1) exp(-2 j² λ²), clamped to [0, 1].
func KolmogorovQ(lambda float64) float64 {
	if lambda <= 0 {
		return 1
	}
	if lambda < 0.2 {
		// The alternating series converges slowly here; Q is 1 to double
		// precision (1 - Q(0.2) < 1e-20).
		return 1
	}
	a2 := -2 * lambda * lambda
	sum, sign, prev := 0.0, 1.0, 0.0
	for j := 1; j <= 100; j++ {
		term := sign * 2 * math.Exp(a2*float64(j*j))
		sum += term
		if math.Abs(term) <= 1e-10*math.Abs(prev) || math.Abs(term) <= 1e-16*sum {
			return min(max(sum, 0), 1)
		}
		sign, prev = -sign, term
	}
	return min(max(sum, 0), 1)
}

// ksExactP returns P(D >= d) for samples of sizes m and n without ties, by
// counting the lattice paths from (0,0) to (m,n) that stay strictly within d
// of the diagonal (as R's psmirnov2x), in probability space so nothing
// overflows.
func ksExactP(d float64, m, n int) float64 {
	if m > n {
		m, n = n, m
	}
	md, nd := float64(m), float64(n)
	// Largest attainable distance strictly below d (distances are multiples
	// of 1/(m n)); paths reaching beyond q reach at least d.
	q := (0.5 + math.Floor(d*md*nd-1e-7)) / (md * nd)
	u := make([]float64, n+1)
	for j := 0; j <= n; j++ {
		if float64(j)/nd > q {
			u[j] = 0
		} else {
			u[j] = 1
		}
	}
	for i := 1; i <= m; i++ {
		w := float64(i) / float64(i+n)
		if float64(i)/md > q {
			u[0] = 0
		} else {
			u[0] *= w
		}
		for j := 1; j <= n; j++ {
			if math.Abs(float64(i)/md-float64(j)/nd) > q {
				u[j] = 0
			} else {
				u[j] = w*u[j] + u[j-1]
			}
		}
	}
	return min(max(1-u[n], 0), 1)
}
