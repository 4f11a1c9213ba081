package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a mean with a two-sided confidence interval.
type Interval struct {
	// N is the number of samples.
	N int `json:"n"`
	// Mean is the sample mean.
	Mean float64 `json:"mean"`
	// Half is the half width: the interval is [Mean-Half, Mean+Half].
	Half float64 `json:"half_width"`
	// Low and High are the interval's ends.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// Level is the confidence level, e.g. 0.99.
	Level float64 `json:"level"`
}

// MeanCI returns the mean of xs with a two-sided Student-t confidence interval
// at level (0.99 for the thesis's 99%): mean ± t(1-(1-level)/2, n-1) s/√n,
// with s the sample standard deviation. It needs at least two samples.
func MeanCI(xs []float64, level float64) (Interval, error) {
	if len(xs) < 2 {
		return Interval{}, fmt.Errorf("confidence interval needs at least 2 samples, got %d", len(xs))
	}
	if !(level > 0 && level < 1) {
		return Interval{}, fmt.Errorf("confidence level %v is not in (0, 1)", level)
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	n := float64(len(xs))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1 - (1-level)/2)
	half := t * sd / math.Sqrt(n)
	return Interval{N: len(xs), Mean: mean, Half: half, Low: mean - half, High: mean + half, Level: level}, nil
}
