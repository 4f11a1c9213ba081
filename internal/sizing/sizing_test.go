package sizing

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prototype is the paper's prototype (section 4, Table 4) with B = 16.
func prototype(r int64) Input {
	return Input{
		Throughput: 100_000_000, Consumers: 40, ReplicationFactor: r, MaxBrokers: 16,
		PartitionProduceRate: 10_000_000, PartitionConsumeRate: 20_000_000, MaxHandles: 30_000,
		ReplicationLatency: 5 * time.Millisecond, MaxReplicationLatency: 200 * time.Millisecond,
		ElectionTime: 25 * time.Millisecond, MaxUnavailability: 2 * time.Second,
	}
}

func TestTable4(t *testing.T) {
	tests := []struct {
		r          int64
		maxP, maxB int64
		minP, minB int64
	}{
		{3, 213, 16, 40, 3},
		{5, 128, 16, 40, 5},
	}
	for _, tt := range tests {
		in := prototype(tt.r)
		require.NoError(t, in.Validate())
		assert.Equal(t, Solution{true, tt.maxP, tt.maxB}, BroMax(in))
		assert.Equal(t, Solution{true, tt.minP, tt.minB}, BroMin(in))
		assert.Equal(t, literalBroMax(in), BroMax(in))
		assert.Equal(t, literalBroMin(in), BroMin(in))
		res := Solve(in, StrategyBroMax)
		assert.Equal(t, ReplicationLatency, res.Binding, "the paper's P*r <= 40*b is the latency bound L/l_r = 40")
		assert.True(t, res.Constraints[ReplicationLatency].Binding)
		assert.False(t, res.Constraints[OSLoad].Binding)
	}
}

// randomInput draws small inputs so the literal loops stay fast, with
// values chosen to hit exact boundaries often.
func randomInput(rng *rand.Rand) Input {
	r := 1 + rng.Int64N(6)
	B := r + rng.Int64N(16)
	if rng.IntN(10) == 0 {
		B = r // boundary b = r = B
	}
	unit := int64(1_000_000)
	in := Input{
		Throughput: unit * (1 + rng.Int64N(300)), Consumers: 1 + rng.Int64N(120), ReplicationFactor: r, MaxBrokers: B,
		PartitionProduceRate: unit * (1 + rng.Int64N(20)), PartitionConsumeRate: unit * (1 + rng.Int64N(40)),
		MaxHandles:            1 + rng.Int64N(120),
		ReplicationLatency:    time.Duration(1+rng.Int64N(10)) * time.Millisecond,
		MaxReplicationLatency: time.Duration(1+rng.Int64N(400)) * time.Millisecond,
		ElectionTime:          time.Duration(1+rng.Int64N(50)) * time.Millisecond,
		MaxUnavailability:     time.Duration(1+rng.Int64N(3000)) * time.Millisecond,
	}
	if rng.IntN(3) == 0 {
		in.Compat = CompatKafkaHDD
	}
	if rng.IntN(5) == 0 {
		in.RecordSize = 1 + rng.Int64N(100_000)
		in.ConsumerProcessingTime = time.Duration(1+rng.Int64N(10_000)) * time.Microsecond
	}
	return in
}

func TestClosedFormEqualsLiteralLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	const n = 100_000
	var feasibleMin, infeasible int
	for i := range n {
		in := randomInput(rng)
		require.NoError(t, in.Validate())
		gotMin, wantMin := BroMin(in), literalBroMin(in)
		gotMax, wantMax := BroMax(in), literalBroMax(in)
		if gotMin != wantMin || gotMax != wantMax {
			t.Fatalf("draw %d: %+v\nBroMin %+v, literal %+v\nBroMax %+v, literal %+v", i, in, gotMin, wantMin, gotMax, wantMax)
		}
		if gotMin.Feasible {
			feasibleMin++
		} else {
			infeasible++
		}
	}
	// The draw must cover both outcomes substantially, or the test proves little.
	assert.Greater(t, feasibleMin, n/10)
	assert.Greater(t, infeasible, n/10)
}

func TestFixesMakeFeasibleAndAreSmallest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for range 3000 {
		in := randomInput(rng)
		if feasible(in) {
			assert.Empty(t, Fixes(in))
			continue
		}
		fixes := Fixes(in)
		require.NotEmpty(t, fixes, "%+v", in)
		assert.Equal(t, FieldMaxBrokers, fixes[0].Flag, "adding brokers always helps")
		checked++
	}
	assert.Greater(t, checked, 100)

	// A worked example: the prototype with 400 consumers needs P >= 400, but
	// the latency bound allows floor(16*200/15) = 213 partitions on 16 brokers.
	in := prototype(3)
	in.Consumers = 400
	res := Solve(in, StrategyBroMax)
	require.False(t, res.Feasible)
	assert.Equal(t, ReplicationLatency, res.Binding)
	assert.Contains(t, res.Fixes, Fix{Flag: FieldMaxBrokers, Op: ">=", Value: "30"})
	assert.Contains(t, res.Fixes, Fix{Flag: FieldMaxReplicationLatency, Op: ">=", Value: "375ms"})
	assert.Contains(t, res.Fixes, Fix{Flag: FieldConsumers, Op: "<=", Value: "213"})
	for _, f := range res.Fixes {
		assert.Regexp(t, `^needs --[a-z-]+ (>=|<=) \S+$`, f.String())
	}
	// 30 brokers is the smallest: 29 is not enough.
	in.MaxBrokers = 29
	assert.False(t, BroMax(in).Feasible)
	in.MaxBrokers = 30
	assert.True(t, BroMax(in).Feasible)
}

func TestCompatKafkaHDD(t *testing.T) {
	// T/Tp = 10.5: the paper takes ceil (11), the authors' Python rounds half
	// to even (10). With c = 1 and Tc large that sets the minimum.
	in := prototype(3)
	in.Throughput, in.Consumers, in.PartitionConsumeRate = 105_000_000, 1, 1_000_000_000
	assert.Equal(t, int64(11), in.MinPartitions())
	in.Compat = CompatKafkaHDD
	assert.Equal(t, int64(10), in.MinPartitions())
	assert.Equal(t, int64(12), roundHalfEven(23, 2))
	assert.Equal(t, int64(12), roundHalfEven(25, 2))
	assert.Equal(t, int64(13), roundHalfEven(26, 2))
}

func TestValidate(t *testing.T) {
	in := prototype(3)
	in.ReplicationFactor = 17
	var fe *FieldError
	require.ErrorAs(t, in.Validate(), &fe)
	assert.Equal(t, FieldReplicationFactor, fe.Field)
	in = prototype(3)
	in.ElectionTime = 0
	require.ErrorAs(t, in.Validate(), &fe)
	assert.Equal(t, FieldElectionTime, fe.Field)
	in = prototype(3)
	in.RecordSize = 100
	require.ErrorAs(t, in.Validate(), &fe)
}

func TestLittlesLaw(t *testing.T) {
	in := prototype(3)
	// 100MB/s of 1kB records = 100,000 records/s; 2ms each -> 200 partitions.
	in.RecordSize, in.ConsumerProcessingTime = 1000, 2*time.Millisecond
	assert.Equal(t, int64(200), in.MinPartitions())
	assert.Equal(t, Solution{true, 213, 16}, BroMax(in))
	assert.Equal(t, Solution{true, 200, 15}, BroMin(in))
}

func TestMSCNFLDeterministicAndCounted(t *testing.T) {
	in := prototype(3)
	a, b := MSCNFL(in, 10_000, 1), MSCNFL(in, 10_000, 1)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, MSCNFL(in, 10_000, 2))
	assert.LessOrEqual(t, a.Partitions.Max, int64(100*16))
	assert.GreaterOrEqual(t, a.Brokers.Min, int64(1))
	assert.LessOrEqual(t, a.Brokers.Max, int64(16))
	assert.Greater(t, a.ViolationRate[ReplicationLatency], 0.5, "the paper: MS-CNFL violates the latency constraint")
	assert.InDelta(t, 2.0/16, a.ViolationRate[Brokers], 0.02, "b < r=3 in 2 of 16 draws")
}

func TestCheckCluster(t *testing.T) {
	in := prototype(3)
	res := Solve(in, StrategyBroMax)
	cc := CheckCluster(in, res, KRaft, 4)
	assert.Equal(t, int64(639), cc.PartitionReplicas)
	assert.Equal(t, int64(40), cc.ReplicasPerBroker)
	assert.Empty(t, cc.Warnings)
	big := Result{Feasible: true, Partitions: 700_000, Brokers: 10}
	cc = CheckCluster(in, big, KRaft, 1)
	assert.Len(t, cc.Warnings, 3)
	cc = CheckCluster(in, Result{Feasible: true, Partitions: 90_000, Brokers: 100}, ZooKeeper, 0)
	assert.Len(t, cc.Warnings, 1)
}

func BenchmarkBroMax(b *testing.B) {
	// The paper's prototype with B = 1000: the loops start at
	// floor(b*Hmax/r) = 10,000,000 and walk down to Pmax = 13,333.
	in := prototype(3)
	in.MaxBrokers = 1000
	want := literalBroMax(in)
	b.Run("closed-form", func(b *testing.B) {
		for b.Loop() {
			if BroMax(in) != want {
				b.Fatal("mismatch")
			}
		}
	})
	b.Run("literal", func(b *testing.B) {
		for b.Loop() {
			if literalBroMax(in) != want {
				b.Fatal("mismatch")
			}
		}
	})
}

func BenchmarkBroMin(b *testing.B) {
	// The prototype with B = 1000 and 4,000 consumers: feasible from b = 300,
	// so Algorithm 1 walks 297 infeasible broker counts first.
	in := prototype(3)
	in.MaxBrokers, in.Consumers = 1000, 4000
	want := literalBroMin(in)
	b.Run("closed-form", func(b *testing.B) {
		for b.Loop() {
			if BroMin(in) != want {
				b.Fatal("mismatch")
			}
		}
	})
	b.Run("literal", func(b *testing.B) {
		for b.Loop() {
			if literalBroMin(in) != want {
				b.Fatal("mismatch")
			}
		}
	})
}
