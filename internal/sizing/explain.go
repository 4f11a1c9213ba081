package sizing

import (
	"fmt"
	"math"
	"time"
)

// Strategy names a sizing method.
type Strategy string

// The strategies kplan offers.
const (
	StrategyBroMin Strategy = "bromin"
	StrategyBroMax Strategy = "bromax"
	StrategyMSCNFL Strategy = "ms-cnfl"
)

// Check is one constraint evaluated at a solution: Value against Threshold,
// Slack = the distance to the threshold in the constraint's own direction
// (never negative when satisfied).
type Check struct {
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	// Bound is "min" when Value must be at least Threshold, "max" otherwise.
	Bound     string  `json:"bound"`
	Unit      string  `json:"unit"`
	Slack     float64 `json:"slack"`
	Satisfied bool    `json:"satisfied"`
	Binding   bool    `json:"binding"`
}

// Fix is the smallest single change to one input that makes an infeasible
// programme feasible.
type Fix struct {
	Flag  string `json:"flag"`
	Op    string `json:"op"` // ">=" or "<="
	Value string `json:"value"`
}

// String renders the fix as "needs --flag >= value".
func (f Fix) String() string { return fmt.Sprintf("needs --%s %s %s", f.Flag, f.Op, f.Value) }

// Result is one strategy's answer with its explanation.
type Result struct {
	Strategy   Strategy `json:"strategy"`
	Feasible   bool     `json:"feasible"`
	Partitions int64    `json:"partitions"`
	Brokers    int64    `json:"brokers"`
	// PartitionsPerBroker is P/b (leaders per broker when balanced).
	PartitionsPerBroker float64 `json:"partitions_per_broker"`
	// Binding is the constraint that set P for the chosen b; when infeasible,
	// the constraint that cannot be met.
	Binding       Constraint           `json:"binding"`
	MinPartitions int64                `json:"min_partitions"`
	MinBound      Bound                `json:"min_partitions_from"`
	Constraints   map[Constraint]Check `json:"constraints"`
	// Reason explains an infeasible result.
	Reason string `json:"reason,omitempty"`
	// Fixes lists, for an infeasible result, every single-input change that
	// makes it feasible, each the smallest such change of that input.
	Fixes []Fix `json:"fixes,omitempty"`
	// MSCNFL holds the baseline's distribution (strategy ms-cnfl only).
	MSCNFL *MSCNFLResult `json:"ms_cnfl,omitempty"`
	// Cluster holds cluster-level needs and warnings (seed 001).
	Cluster *ClusterCheck `json:"cluster,omitempty"`
}

func ms(d float64) float64 { return d / float64(time.Millisecond) }

// Explain evaluates sol for in: metrics, slack of every constraint, the
// binding one, and for an infeasible solution the reason and the fixes.
func Explain(in Input, s Strategy, sol Solution) Result {
	pmin := in.MinPartitions()
	res := Result{Strategy: s, Feasible: sol.Feasible, Partitions: sol.Partitions, Brokers: sol.Brokers, MinPartitions: pmin}
	for _, lb := range in.LowerBounds() {
		if lb.Value == pmin {
			res.MinBound = lb.Name
			break
		}
	}
	p, b := sol.Partitions, sol.Brokers
	if !sol.Feasible {
		// Explain at b = B: the most room the programme has.
		b = in.MaxBrokers
		p, res.Binding = in.PMax(b)
		res.Reason, res.Binding = infeasibleReason(in, p, pmin)
		res.Fixes = Fixes(in)
		p = pmin // show the metrics the minimum partition count would need
		res.Constraints = checks(in, p, b, "")
		return res
	}
	_, res.Binding = in.PMax(b)
	res.PartitionsPerBroker = float64(p) / float64(b)
	res.Constraints = checks(in, p, b, res.Binding)
	return res
}

func checks(in Input, p, b int64, binding Constraint) map[Constraint]Check {
	fp, fb := float64(p), float64(b)
	mk := func(c Constraint, v, th float64, bound, unit string, ok bool) Check {
		slack := th - v
		if bound == "min" {
			slack = v - th
		}
		return Check{Value: round6(v), Threshold: th, Bound: bound, Unit: unit, Slack: round6(slack), Satisfied: ok, Binding: c == binding}
	}
	pmin := in.MinPartitions()
	l := loads(in, p, b)
	return map[Constraint]Check{
		Throughput: mk(Throughput, fp, float64(pmin), "min", "partitions", p >= pmin),
		OSLoad:     mk(OSLoad, l.replicasPerBroker, float64(in.MaxHandles), "max", "partition replicas per broker", mulSat(p, in.ReplicationFactor) <= mulSat(b, in.MaxHandles)),
		ReplicationLatency: mk(ReplicationLatency, l.replicationLatencyMs, ms(float64(in.MaxReplicationLatency)), "max", "ms",
			literalFeasibleLatency(in, p, b)),
		Unavailability: mk(Unavailability, l.unavailabilityMs, ms(float64(in.MaxUnavailability)), "max", "ms",
			mulSat(p, int64(in.ElectionTime)) <= mulSat(b, int64(in.MaxUnavailability))),
		Brokers: mk(Brokers, fb, float64(in.MaxBrokers), "max", "brokers", b <= in.MaxBrokers && b >= in.ReplicationFactor),
	}
}

// load is what P partitions put on each of b brokers: the left-hand sides of
// constraints (9)-(11), unrounded.
type load struct {
	replicasPerBroker    float64 // P*r/b
	replicationLatencyMs float64 // P*r*l_r/b
	unavailabilityMs     float64 // P*u/b
}

func loads(in Input, p, b int64) load {
	fp, fb, r := float64(p), float64(b), float64(in.ReplicationFactor)
	return load{
		replicasPerBroker:    fp * r / fb,
		replicationLatencyMs: ms(fp * r * float64(in.ReplicationLatency) / fb),
		unavailabilityMs:     ms(fp * float64(in.ElectionTime) / fb),
	}
}

func literalFeasibleLatency(in Input, p, b int64) bool {
	return mulSat(mulSat(p, in.ReplicationFactor), int64(in.ReplicationLatency)) <= mulSat(b, int64(in.MaxReplicationLatency))
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func infeasibleReason(in Input, pmaxB, pmin int64) (string, Constraint) {
	name := infeasibleBinding(in, pmin)
	what := map[Constraint]string{
		OSLoad:             "P*r <= b*Hmax (--max-handles)",
		ReplicationLatency: "P*r*l_r <= b*L (--max-replication-latency)",
		Unavailability:     "P*u <= b*U (--max-unavailability)",
	}[name]
	return fmt.Sprintf("%s cannot be met: %s allows at most %d partitions on all %d brokers, but throughput and consumers need at least %d",
		name, what, pmaxB, in.MaxBrokers, pmin), name
}

// infeasibleBinding names the constraint that cannot be met on all B
// brokers: of those whose bound falls below pmin, the tightest.
func infeasibleBinding(in Input, pmin int64) Constraint {
	u := in.upperBounds(in.MaxBrokers)
	worst, name := int64(math.MaxInt64), Constraint("")
	for i, v := range u {
		if v < pmin && v < worst {
			worst, name = v, upperNames[i]
		}
	}
	return name
}

// feasible reports whether the programme has a solution at all.
func feasible(in Input) bool {
	if in.Validate() != nil {
		return false
	}
	p, _ := in.PMax(in.MaxBrokers)
	return p >= in.MinPartitions()
}

// Fixes returns, for an infeasible input, the smallest change of each single
// input that makes it feasible, each verified by solving again. Inputs whose
// change alone cannot help are left out.
func Fixes(in Input) []Fix {
	if feasible(in) {
		return nil
	}
	pmin := in.MinPartitions()
	var out []Fix
	try := func(flag, op string, mod func(*Input, int64), val int64, format func(int64) string) {
		t := in
		mod(&t, val)
		if feasible(t) {
			out = append(out, Fix{Flag: flag, Op: op, Value: format(val)})
		}
	}
	num := func(v int64) string { return fmt.Sprint(v) }
	dur := func(v int64) string { return time.Duration(v).String() }
	rate := func(v int64) string { return fmt.Sprintf("%dB/s", v) }
	r := in.ReplicationFactor

	// --max-brokers: smallest B with every upper bound >= pmin.
	needB := max(r, ceilDiv(pmin, r, in.MaxHandles), ceilDiv(ceilDiv(pmin, r, 1), int64(in.ReplicationLatency), int64(in.MaxReplicationLatency)),
		ceilDiv(pmin, int64(in.ElectionTime), int64(in.MaxUnavailability)))
	try(FieldMaxBrokers, ">=", func(t *Input, v int64) { t.MaxBrokers = v }, needB, num)
	B := in.MaxBrokers
	try(FieldMaxHandles, ">=", func(t *Input, v int64) { t.MaxHandles = v }, ceilDiv(pmin, r, B), num)
	try(FieldMaxReplicationLatency, ">=", func(t *Input, v int64) { t.MaxReplicationLatency = time.Duration(v) },
		ceilDiv(mulSat(pmin, r), int64(in.ReplicationLatency), B), dur)
	try(FieldMaxUnavailability, ">=", func(t *Input, v int64) { t.MaxUnavailability = time.Duration(v) },
		ceilDiv(pmin, int64(in.ElectionTime), B), dur)
	if lr := mulDiv(B, int64(in.MaxReplicationLatency), mulSat(pmin, r)); lr >= 1 {
		try(FieldReplicationLatency, "<=", func(t *Input, v int64) { t.ReplicationLatency = time.Duration(v) }, lr, dur)
	}
	if u := mulDiv(B, int64(in.MaxUnavailability), pmin); u >= 1 {
		try(FieldElectionTime, "<=", func(t *Input, v int64) { t.ElectionTime = time.Duration(v) }, u, dur)
	}
	// Requirement side: P may be at most Pmax(B).
	pmax, _ := in.PMax(B)
	if pmax >= 1 {
		try(FieldConsumers, "<=", func(t *Input, v int64) { t.Consumers = v }, pmax, num)
		// Largest T with every T-bound <= pmax, searched exactly.
		if t := largest(1, in.Throughput, func(v int64) bool { c := in; c.Throughput = v; return feasible(c) }); t > 0 {
			try(FieldThroughput, "<=", func(c *Input, v int64) { c.Throughput = v }, t, rate)
		}
		if v := smallest(in.PartitionProduceRate, math.MaxInt64/4, func(v int64) bool { c := in; c.PartitionProduceRate = v; return feasible(c) }); v > 0 {
			try(FieldPartitionProduceRate, ">=", func(c *Input, x int64) { c.PartitionProduceRate = x }, v, rate)
		}
		if v := smallest(in.PartitionConsumeRate, math.MaxInt64/4, func(v int64) bool { c := in; c.PartitionConsumeRate = v; return feasible(c) }); v > 0 {
			try(FieldPartitionConsumeRate, ">=", func(c *Input, x int64) { c.PartitionConsumeRate = x }, v, rate)
		}
	}
	if v := largest(1, r, func(v int64) bool { c := in; c.ReplicationFactor = v; return feasible(c) }); v > 0 {
		try(FieldReplicationFactor, "<=", func(c *Input, x int64) { c.ReplicationFactor = x }, v, num)
	}
	return out
}

// largest returns the largest v in [lo, hi] with ok(v), for ok true on a
// prefix of the range; 0 when none.
func largest(lo, hi int64, ok func(int64) bool) int64 {
	if !ok(lo) {
		return 0
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// smallest returns the smallest v in [lo, hi] with ok(v), for ok true on a
// suffix of the range; 0 when none.
func smallest(lo, hi int64, ok func(int64) bool) int64 {
	if !ok(hi) {
		return 0
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Solve runs a deterministic strategy and explains its answer.
func Solve(in Input, s Strategy) Result {
	var sol Solution
	switch s {
	case StrategyBroMin:
		sol = BroMin(in)
	default:
		sol = BroMax(in)
	}
	return Explain(in, s, sol)
}
