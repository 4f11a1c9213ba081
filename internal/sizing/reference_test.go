package sizing

import (
	"math/big"
	"math/bits"
)

// The paper's Algorithms 1 and 2, line by line. They are O(Hmax/r * B^2) and
// exist so tests can prove the closed form returns the same answers; kplan
// never calls them on user input. Comparisons are exact: products are taken
// in 128 bits (math/big for the three-factor Little's-law bound).

// le128 reports a*b <= c*d exactly.
func le128(a, b, c, d int64) bool {
	h1, l1 := bits.Mul64(uint64(a), uint64(b))
	h2, l2 := bits.Mul64(uint64(c), uint64(d))
	return h1 < h2 || h1 == h2 && l1 <= l2
}

// literalFeasible is line 3: P*r*l_r <= b*L and P*u <= b*U. P*r cannot
// overflow: the loop starts at floor(b*Hmax/r).
func literalFeasible(in Input, p, b int64) bool {
	return le128(p*in.ReplicationFactor, int64(in.ReplicationLatency), b, int64(in.MaxReplicationLatency)) &&
		le128(p, int64(in.ElectionTime), b, int64(in.MaxUnavailability))
}

// literalLowerOK is line 2's loop condition: P >= max(T/Tp, T/Tc, c) as real
// numbers (T/Tp rounded half to even under kafka-hdd), plus Little's law.
func literalLowerOK(in Input, p int64) bool {
	if in.Compat == CompatKafkaHDD {
		if p < roundHalfEven(in.Throughput, in.PartitionProduceRate) {
			return false
		}
	} else if !le128(in.Throughput, 1, p, in.PartitionProduceRate) {
		return false
	}
	if !le128(in.Throughput, 1, p, in.PartitionConsumeRate) || p < in.Consumers {
		return false
	}
	if in.RecordSize > 0 {
		// P >= T/size * t/1e9  <=>  P*size*1e9 >= T*t
		lhs := new(big.Int).Mul(big.NewInt(p), big.NewInt(in.RecordSize))
		lhs.Mul(lhs, big.NewInt(1_000_000_000))
		rhs := new(big.Int).Mul(big.NewInt(in.Throughput), big.NewInt(int64(in.ConsumerProcessingTime)))
		if lhs.Cmp(rhs) < 0 {
			return false
		}
	}
	return true
}

func literalInner(in Input, b int64) (int64, bool) {
	for p := mulDiv(b, in.MaxHandles, in.ReplicationFactor); p >= 1 && literalLowerOK(in, p); p-- {
		if literalFeasible(in, p, b) {
			return p, true
		}
	}
	return 0, false
}

// literalBroMin is Algorithm 1.
func literalBroMin(in Input) Solution {
	for b := in.ReplicationFactor; b <= in.MaxBrokers; b++ {
		if p, ok := literalInner(in, b); ok {
			return Solution{Feasible: true, Partitions: p, Brokers: b}
		}
	}
	return Solution{}
}

// literalBroMax is Algorithm 2.
func literalBroMax(in Input) Solution {
	for b := in.MaxBrokers; b >= in.ReplicationFactor; b-- {
		if p, ok := literalInner(in, b); ok {
			return Solution{Feasible: true, Partitions: p, Brokers: b}
		}
	}
	return Solution{}
}
