// Package sizing solves the topic-sizing programme of Raptis, Cicconetti and
// Passarella (FGCS 2024, section 3): how many partitions P and brokers b a
// topic needs so that throughput, OS load, replication latency and
// unavailability constraints hold. It is pure and exact: rates are integer
// bytes per second, durations integer nanoseconds, and every floor and ceiling
// is taken on exact integers.
//
// For a fixed b every constraint is linear in P, so the largest feasible P is
//
//	Pmax(b) = min(floor(b*Hmax/r), floor(b*L/(r*l_r)), floor(b*U/u))
//
// and (P, b) is feasible iff Pmax(b) >= Pmin. Pmax is non-decreasing in b, so
// BroMin is the smallest feasible b and BroMax is b = B, both with Pmax(b):
// exactly what the paper's Algorithms 1 and 2 return, in O(B) instead of
// O(Hmax/r * B^2). The literal loops are kept in reference_test.go for tests.
package sizing

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Compat selects how the throughput bound is rounded.
type Compat string

const (
	// CompatPaper uses the paper's inequality: P >= ceil(T/Tp), ceil(T/Tc).
	CompatPaper Compat = ""
	// CompatKafkaHDD reproduces the authors' Python code (kafka-hdd), which
	// rounds T/Tp half-to-even instead of taking its ceiling.
	CompatKafkaHDD Compat = "kafka-hdd"
)

// Input holds the programme's inputs in exact units.
type Input struct {
	Throughput            int64         // T, bytes/s
	Consumers             int64         // c
	ReplicationFactor     int64         // r
	MaxBrokers            int64         // B
	PartitionProduceRate  int64         // Tp, bytes/s
	PartitionConsumeRate  int64         // Tc, bytes/s
	MaxHandles            int64         // Hmax, partition replicas per broker
	ReplicationLatency    time.Duration // l_r
	MaxReplicationLatency time.Duration // L
	ElectionTime          time.Duration // u
	MaxUnavailability     time.Duration // U
	Compat                Compat

	// RecordSize and ConsumerProcessingTime, when both set, add Little's
	// law as a lower bound: P >= ceil(T/RecordSize * ConsumerProcessingTime).
	RecordSize             int64
	ConsumerProcessingTime time.Duration
}

// Field names used in errors; they match the CLI flags.
const (
	FieldThroughput            = "throughput"
	FieldConsumers             = "consumers"
	FieldReplicationFactor     = "replication-factor"
	FieldMaxBrokers            = "max-brokers"
	FieldPartitionProduceRate  = "partition-produce-rate"
	FieldPartitionConsumeRate  = "partition-consume-rate"
	FieldMaxHandles            = "max-handles"
	FieldReplicationLatency    = "replication-latency"
	FieldMaxReplicationLatency = "max-replication-latency"
	FieldElectionTime          = "election-time"
	FieldMaxUnavailability     = "max-unavailability"
)

// FieldError names the input that is wrong.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks every input is in range. The error is a *FieldError.
func (in Input) Validate() error {
	pos := []struct {
		f string
		v int64
	}{
		{FieldThroughput, in.Throughput}, {FieldConsumers, in.Consumers}, {FieldReplicationFactor, in.ReplicationFactor},
		{FieldMaxBrokers, in.MaxBrokers}, {FieldPartitionProduceRate, in.PartitionProduceRate},
		{FieldPartitionConsumeRate, in.PartitionConsumeRate}, {FieldMaxHandles, in.MaxHandles},
		{FieldReplicationLatency, int64(in.ReplicationLatency)}, {FieldMaxReplicationLatency, int64(in.MaxReplicationLatency)},
		{FieldElectionTime, int64(in.ElectionTime)}, {FieldMaxUnavailability, int64(in.MaxUnavailability)},
	}
	for _, p := range pos {
		if p.v <= 0 {
			return &FieldError{p.f, fmt.Sprintf("must be positive, got %d", p.v)}
		}
	}
	if in.ReplicationFactor > in.MaxBrokers {
		return &FieldError{FieldReplicationFactor, fmt.Sprintf("replication factor %d exceeds --max-brokers %d", in.ReplicationFactor, in.MaxBrokers)}
	}
	if in.MaxBrokers > 1_000_000 {
		return &FieldError{FieldMaxBrokers, fmt.Sprintf("%d brokers is beyond any Kafka cluster (max 1000000)", in.MaxBrokers)}
	}
	if in.RecordSize < 0 || in.ConsumerProcessingTime < 0 {
		return &FieldError{"record-size", "record size and consumer processing time must not be negative"}
	}
	if (in.RecordSize > 0) != (in.ConsumerProcessingTime > 0) {
		return &FieldError{"record-size", "--record-size and --consumer-processing-time go together (Little's law needs both)"}
	}
	switch in.Compat {
	case CompatPaper, CompatKafkaHDD:
	default:
		return &FieldError{"compat", fmt.Sprintf("unknown compat %q (want kafka-hdd)", in.Compat)}
	}
	return nil
}

// ErrInfeasible is wrapped by results that have no solution.
var ErrInfeasible = errors.New("no feasible solution")

// mulDiv returns floor(a*b/c) for non-negative a, b and positive c,
// saturating at math.MaxInt64.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// ceilDiv returns ceil(a*b/c) for non-negative a, b and positive c,
// saturating at math.MaxInt64.
func ceilDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, rem := bits.Div64(hi, lo, uint64(c))
	if rem != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// roundHalfEven returns a/b rounded half to even (Python's round()).
func roundHalfEven(a, b int64) int64 {
	q, r := a/b, a%b
	switch {
	case 2*r > b:
		return q + 1
	case 2*r < b:
		return q
	case q%2 == 1:
		return q + 1
	default:
		return q
	}
}

// Bound names a lower bound on P from constraint (8) (or Little's law).
type Bound string

// The lower bounds on P.
const (
	BoundProduce   Bound = "produce_rate" // T/Tp
	BoundConsume   Bound = "consume_rate" // T/Tc
	BoundConsumers Bound = "consumers"    // c
	BoundLittle    Bound = "littles_law"  // T/size * processing time
)

// LowerBound is one lower bound on the partition count.
type LowerBound struct {
	Name  Bound
	Value int64
}

// LowerBounds returns each lower bound on P, in a fixed order.
func (in Input) LowerBounds() []LowerBound {
	produce := ceilDiv(in.Throughput, 1, in.PartitionProduceRate)
	if in.Compat == CompatKafkaHDD {
		produce = roundHalfEven(in.Throughput, in.PartitionProduceRate)
	}
	out := []LowerBound{
		{BoundProduce, produce},
		{BoundConsume, ceilDiv(in.Throughput, 1, in.PartitionConsumeRate)},
		{BoundConsumers, in.Consumers},
	}
	if in.RecordSize > 0 && in.ConsumerProcessingTime > 0 {
		// records/s * seconds = T*t/(size*1e9), both in exact integers.
		out = append(out, LowerBound{BoundLittle, littlesLaw(in)})
	}
	return out
}

func littlesLaw(in Input) int64 {
	den := in.RecordSize * int64(time.Second)
	if in.RecordSize > math.MaxInt64/int64(time.Second) {
		return ceilDiv(ceilDiv(in.Throughput, int64(in.ConsumerProcessingTime), in.RecordSize), 1, int64(time.Second))
	}
	return ceilDiv(in.Throughput, int64(in.ConsumerProcessingTime), den)
}

// MinPartitions is ceil(max(T/Tp, T/Tc, c)) (and Little's law when given).
func (in Input) MinPartitions() int64 {
	var m int64
	for _, b := range in.LowerBounds() {
		m = max(m, b.Value)
	}
	return m
}

// Constraint names an upper bound on P for a given b.
type Constraint string

// The constraints of the programme.
const (
	Throughput         Constraint = "throughput"          // (8)
	OSLoad             Constraint = "os_load"             // (9)
	ReplicationLatency Constraint = "replication_latency" // (10)
	Unavailability     Constraint = "unavailability"      // (11)
	Brokers            Constraint = "brokers"             // (12)
)

// upperBounds returns floor(b*Hmax/r), floor(b*L/(r*l_r)), floor(b*U/u).
func (in Input) upperBounds(b int64) [3]int64 {
	return [3]int64{
		mulDiv(b, in.MaxHandles, in.ReplicationFactor),
		mulDiv(b, int64(in.MaxReplicationLatency), mulSat(in.ReplicationFactor, int64(in.ReplicationLatency))),
		mulDiv(b, int64(in.MaxUnavailability), int64(in.ElectionTime)),
	}
}

func mulSat(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

var upperNames = [3]Constraint{OSLoad, ReplicationLatency, Unavailability}

// PMax returns the largest P meeting (9)-(11) with b brokers, and the
// constraint that sets it (the first of os_load, replication_latency,
// unavailability on a tie).
func (in Input) PMax(b int64) (int64, Constraint) {
	u := in.upperBounds(b)
	best, name := u[0], upperNames[0]
	for i := 1; i < 3; i++ {
		if u[i] < best {
			best, name = u[i], upperNames[i]
		}
	}
	return best, name
}

// Solution is a (P, b) pair, or none.
type Solution struct {
	Feasible   bool
	Partitions int64
	Brokers    int64
}

// BroMin returns Algorithm 1's answer: the smallest b in [r, B] with
// Pmax(b) >= Pmin, and Pmax(b). Binary search works since Pmax is
// non-decreasing in b.
func BroMin(in Input) Solution {
	pmin := in.MinPartitions()
	lo, hi := in.ReplicationFactor, in.MaxBrokers
	if p, _ := in.PMax(hi); p < pmin {
		return Solution{}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if p, _ := in.PMax(mid); p >= pmin {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	p, _ := in.PMax(lo)
	return Solution{Feasible: true, Partitions: p, Brokers: lo}
}

// BroMax returns Algorithm 2's answer: b = B with Pmax(B) when feasible.
func BroMax(in Input) Solution {
	p, _ := in.PMax(in.MaxBrokers)
	if p < in.MinPartitions() {
		return Solution{}
	}
	return Solution{Feasible: true, Partitions: p, Brokers: in.MaxBrokers}
}
