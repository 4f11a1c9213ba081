// Package stats holds the pure statistics kplan reports for experiments:
// skew over brokers, latency distributions (HdrHistogram) with violation
// rates against an objective, timely throughput (seed 003), means with
// Student-t confidence intervals, and the two-sample Kolmogorov-Smirnov test
// (seed 001). It does no I/O and uses no global random source.
package stats

import (
	"math"
	"sort"
)

// Share is one broker's value and its share of the total.
type Share struct {
	ID    int32   `json:"id"`
	Value float64 `json:"value"`
	Share float64 `json:"share"`
}

// Skew describes how evenly a quantity (records, bytes) is spread over brokers.
type Skew struct {
	// Shares per broker, by ascending ID.
	Shares []Share `json:"shares"`
	// MaxOverMean is the largest value over the mean value (1 = even).
	MaxOverMean float64 `json:"max_over_mean"`
	// CV is the coefficient of variation: population standard deviation
	// over the mean (0 = even).
	CV float64 `json:"cv"`
	// Jain is Jain's fairness index (sum x)^2 / (n sum x^2), in [1/n, 1];
	// 1 = even, 1/n = everything on one broker.
	Jain float64 `json:"jain"`
}

// SkewOf computes the skew of values per broker. Include every broker that
// should share the load (for example every leader of the topic), with 0 for
// those that got nothing: a broker missing from the map does not count. With
// no brokers every figure is 0; when every value is 0 the spread is even
// (MaxOverMean 1, CV 0, Jain 1) and every share is 0.
func SkewOf(values map[int32]float64) Skew {
	var s Skew
	n := len(values)
	if n == 0 {
		return s
	}
	ids := make([]int32, 0, n)
	for id := range values {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var sum, sumSq, maxV float64
	for i, id := range ids {
		v := values[id]
		sum += v
		sumSq += v * v
		if i == 0 || v > maxV {
			maxV = v
		}
	}
	s.Shares = make([]Share, n)
	for i, id := range ids {
		s.Shares[i] = Share{ID: id, Value: values[id]}
		if sum != 0 {
			s.Shares[i].Share = values[id] / sum
		}
	}
	if sum == 0 {
		s.MaxOverMean, s.CV, s.Jain = 1, 0, 1
		return s
	}
	mean := sum / float64(n)
	s.MaxOverMean = maxV / mean
	variance := math.Max(0, sumSq/float64(n)-mean*mean)
	s.CV = math.Sqrt(variance) / mean
	s.Jain = sum * sum / (float64(n) * sumSq)
	return s
}

// SkewOfCounts is SkewOf for integer counts.
func SkewOfCounts[T ~int | ~int32 | ~int64 | ~uint64](counts map[int32]T) Skew {
	values := make(map[int32]float64, len(counts))
	for id, c := range counts {
		values[id] = float64(c)
	}
	return SkewOf(values)
}
