package topology

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// SizeDist is a heavy-tailed distribution of partition sizes for Generate:
// real clusters hold partitions that differ by orders of magnitude, which
// count-balanced plans cannot see.
//
//   - "lognormal": size = Median·exp(Sigma·Z), Z standard normal. Sigma 2
//     puts the largest of 100,000 draws about 5,000 times the median and
//     the mean at e² ≈ 7.4 times it.
//   - "pareto": size = Min·U^(-1/Alpha), U uniform in (0,1]; Alpha at or
//     below 1 has no finite mean (Alpha 1.2: a few partitions hold much of
//     the data).
//
// Draws are capped at MaxDrawBytes so that sums over brokers stay far from
// overflow.
type SizeDist struct {
	Kind   string  `json:"kind"`
	Median float64 `json:"median,omitempty"`
	Sigma  float64 `json:"sigma,omitempty"`
	Alpha  float64 `json:"alpha,omitempty"`
	Min    float64 `json:"min,omitempty"`
}

// MaxDrawBytes caps one drawn partition size: 1 PiB.
const MaxDrawBytes = 1 << 50

// ParseSizeDist reads a --sizes value: "lognormal:median=1GiB,sigma=2" or
// "pareto:alpha=1.2,min=64MiB". Sizes take B, KB/MB/GB/TB (powers of 1000)
// or KiB/MiB/GiB/TiB (powers of 1024); a missing parameter takes the
// default shown by the message of an empty one (median 1GiB, sigma 2;
// alpha 1.2, min 64MiB).
func ParseSizeDist(s string) (SizeDist, error) {
	kind, params, _ := strings.Cut(strings.TrimSpace(s), ":")
	var d SizeDist
	switch kind {
	case "lognormal":
		d = SizeDist{Kind: kind, Median: 1 << 30, Sigma: 2}
	case "pareto":
		d = SizeDist{Kind: kind, Alpha: 1.2, Min: 64 << 20}
	default:
		return d, fmt.Errorf("%q: want lognormal:median=SIZE,sigma=X or pareto:alpha=X,min=SIZE", s)
	}
	if params == "" {
		return d, nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return d, fmt.Errorf("%q: want NAME=VALUE", kv)
		}
		if seen[k] {
			return d, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		var err error
		switch {
		case d.Kind == "lognormal" && k == "median":
			d.Median, err = ParseBytes(v)
		case d.Kind == "lognormal" && k == "sigma":
			d.Sigma, err = positive(v)
		case d.Kind == "pareto" && k == "alpha":
			d.Alpha, err = positive(v)
		case d.Kind == "pareto" && k == "min":
			d.Min, err = ParseBytes(v)
		default:
			return d, fmt.Errorf("%s: not a parameter of %s", k, d.Kind)
		}
		if err != nil {
			return d, fmt.Errorf("%s: %w", k, err)
		}
	}
	if d.Kind == "lognormal" && d.Sigma > 10 {
		return d, errors.New("sigma: at most 10")
	}
	if d.Kind == "pareto" && d.Alpha < 0.1 {
		return d, errors.New("alpha: at least 0.1")
	}
	return d, nil
}

func positive(v string) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x > 0) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%q is not a positive number", v)
	}
	return x, nil
}

// ParseBytes reads a size such as 1GiB, 500MB, 4096 or 1.5TiB (at least 1
// byte, at most 1 PiB).
func ParseBytes(v string) (float64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := v, 1.0
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			num, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(x) || x*mult < 1 || x*mult > MaxDrawBytes {
		return 0, fmt.Errorf("%q is not a size from 1B to 1PiB (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", v)
	}
	return x * mult, nil
}

// Draw returns one size from d, in bytes (at least 1, at most
// MaxDrawBytes).
func (d SizeDist) Draw(rng *rand.Rand) int64 {
	var x float64
	switch d.Kind {
	case "lognormal":
		x = d.Median * math.Exp(d.Sigma*rng.NormFloat64())
	case "pareto":
		x = d.Min * math.Pow(1-rng.Float64(), -1/d.Alpha) // 1-U is in (0,1]
	}
	return int64(min(max(x, 1), MaxDrawBytes))
}

// String formats d as ParseSizeDist reads it.
func (d SizeDist) String() string {
	switch d.Kind {
	case "lognormal":
		return fmt.Sprintf("lognormal:median=%gB,sigma=%g", d.Median, d.Sigma)
	case "pareto":
		return fmt.Sprintf("pareto:alpha=%g,min=%gB", d.Alpha, d.Min)
	}
	return ""
}
