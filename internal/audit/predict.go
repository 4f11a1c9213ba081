package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/units"
	"github.com/kplan-dev/kplan/internal/workload"
)

// Rates are producers' per-topic rates for the predicted load.
type Rates struct {
	// ByTopic maps a topic to its rate.
	ByTopic map[string]float64
	// Default is the rate of topics not named ("*=rate"); without rates at
	// all every topic weighs 1.
	Default float64
	// BytesPerSecond is true when rates carry units (100MB/s) and false for
	// plain relative weights.
	BytesPerSecond bool
}

// EqualRates weighs every topic 1.
func EqualRates() Rates { return Rates{ByTopic: map[string]float64{}, Default: 1} }

// ParseRates reads "topic=rate,topic=rate": rates with units ("100MB/s",
// through units.ParseRate) or plain positive numbers as relative weights,
// not both; "*=rate" sets the rate of topics not named, which is 0
// otherwise.
func ParseRates(s string) (Rates, error) {
	r := Rates{ByTopic: map[string]float64{}}
	withUnits := 0
	n := 0
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		hasUnit, err := r.add(item)
		if err != nil {
			return Rates{}, err
		}
		n++
		if hasUnit {
			withUnits++
		}
	}
	if n == 0 {
		return Rates{}, fmt.Errorf("no topic=rate given")
	}
	if withUnits != 0 && withUnits != n {
		return Rates{}, fmt.Errorf("mix of rates with units and plain weights: use one or the other")
	}
	r.BytesPerSecond = withUnits > 0
	return r, nil
}

// ParseRatesArg reads the value of a --rates flag: "topic=rate,..." as
// ParseRates does, or, when it holds no "=", the name of a kplan observe
// snapshot (--out) read through readFile, whose observed bytes/s per topic
// are the rates.
func ParseRatesArg(s string, readFile func(string) ([]byte, error)) (Rates, error) {
	if strings.Contains(s, "=") || strings.TrimSpace(s) == "" {
		return ParseRates(s)
	}
	data, err := readFile(s)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ParseRates(s) // no such file: a malformed topic=rate
	case err != nil:
		return Rates{}, fmt.Errorf("%q is neither topic=rate,... nor a snapshot of kplan observe: %w", s, err)
	}
	if !observe.IsSnapshot(data) {
		return Rates{}, fmt.Errorf("%s: not a snapshot of kplan observe (--out); a file of topic=rate lines goes to --rates-file", s)
	}
	return ParseRatesFile(data, s)
}

// ParseRatesFile reads one "topic=rate" (or "topic rate") a line; blank
// lines and lines starting with # are skipped. Errors name name:line.
// A JSON file is a snapshot of kplan observe (--out): each topic's
// observed produce rate in bytes/s; its errors name the file and the JSON
// field.
func ParseRatesFile(data []byte, name string) (Rates, error) {
	if observe.IsSnapshot(data) {
		tr, err := observe.ParseSnapshotRates(data, name)
		if err != nil {
			return Rates{}, err
		}
		return Rates{ByTopic: tr.BytesPerSecond, BytesPerSecond: true}, nil
	}
	var items []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if !strings.Contains(text, "=") {
			if f := strings.Fields(text); len(f) == 2 {
				text = f[0] + "=" + f[1]
			}
		}
		if strings.Contains(text, ",") {
			return Rates{}, fmt.Errorf("%s:%d: one topic=rate a line", name, line)
		}
		if _, err := (&Rates{ByTopic: map[string]float64{}}).add(text); err != nil {
			return Rates{}, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		items = append(items, text)
	}
	if err := sc.Err(); err != nil {
		return Rates{}, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	r, err := ParseRates(strings.Join(items, ","))
	if err != nil {
		return Rates{}, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

func (r *Rates) add(item string) (bool, error) {
	topic, val, ok := strings.Cut(item, "=")
	topic, val = strings.TrimSpace(topic), strings.TrimSpace(val)
	if !ok || topic == "" || val == "" {
		return false, fmt.Errorf("%q: want topic=rate", item)
	}
	var rate float64
	hasUnit := strings.HasSuffix(val, "/s")
	if hasUnit {
		bps, err := units.ParseRate(val)
		if err != nil {
			return false, fmt.Errorf("%s: %w", topic, err)
		}
		rate = float64(bps)
	} else {
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || !(f >= 0) || f > 1e18 {
			return false, fmt.Errorf("%s: %q is not a rate (100MB/s) or a weight (a number >= 0)", topic, val)
		}
		rate = f
	}
	if topic == "*" {
		r.Default = rate
		return hasUnit, nil
	}
	if _, dup := r.ByTopic[topic]; dup {
		return false, fmt.Errorf("%s: rate given twice", topic)
	}
	r.ByTopic[topic] = rate
	return hasUnit, nil
}

// Of returns topic's rate.
func (r Rates) Of(topic string) float64 {
	if v, ok := r.ByTopic[topic]; ok {
		return v
	}
	return r.Default
}

// Partitioners whose broker loads Predict computes, named as
// `kplan chaos --partitioners` names them.
const (
	// RoundRobin is the keyless default of Kafka's clients up to 2.3: each
	// record to the next writable partition of its topic (the thesis's
	// "default partitioner"). Every writable partition gets the same share.
	RoundRobin = "roundrobin"
	// Node is the thesis's Node partitioner: round robin over the brokers
	// that lead the topic, then over that broker's partitions. Every leader
	// broker of a topic gets the same share.
	Node = "node"
)

// Equivalent names a partitioner whose expected load equals a predicted
// one's, and why.
type Equivalent struct {
	Partitioner string `json:"partitioner"`
	Equals      string `json:"equals"`
	Why         string `json:"why"`
}

// Equivalents covers every other partitioner kplan chaos runs (see
// internal/partitioner): in expectation each puts the same load on each
// broker as RoundRobin or Node, for the reason given. The thesis's §6.4
// table is the ground: Default gives a/3, 2a/3+b/2, b/2 and "Node / SQF"
// share one row, a/2, a/2+b/2, b/2.
var Equivalents = []Equivalent{
	{"default", RoundRobin, "uniform sticky (KIP-794): 64 KiB to one writable partition, then a new draw, so every writable partition gets the same share in the long run; its adaptive tilt away from backlogged partitions follows broker speed, which a layout does not show"},
	{"random", RoundRobin, "a uniformly random writable partition per record: the same share for each in expectation"},
	{"hash", RoundRobin, "keyless records (as assumed without --keys) stick to a random writable partition per batch; keyed records hash over all partitions by murmur2, so they follow the keys (--keys predicts them) and an offline partition's share waits instead of moving"},
	{"leastbackup", RoundRobin, "the writable partition with the fewest buffered records, per batch: with brokers equally fast every backlog drains alike, so shares follow partitions, not brokers"},
	{"kip794", RoundRobin, "the Java producer's default (KIP-794): 16 KiB to one partition with a leader, then a draw weighted against each partition's queue; with brokers equally fast the queues are alike, so shares follow partitions, not brokers"},
	{"sqf", Node, "one producer per topic (as kplan chaos runs them) sees queues that differ by acknowledgement jitter only, within the slack, so it serves the leader brokers round robin (thesis §6.4: Node and SQF share one row); producers sharing one tracker balance their combined flow instead (Fig 6.7), which depends on who shares"},
	{"sqf-shared", Node, "one tracker shared by every producer (Fig 6.7), rate-capped: queues stay within the slack, so it serves each topic's leader brokers round robin as node; with queues full it balances the combined flow instead (--saturated predicts that)"},
}

// BrokerShare is one broker's predicted load.
type BrokerShare struct {
	Broker int32 `json:"broker"`
	// Load is in the rates' unit: bytes per second, or relative weight.
	Load float64 `json:"load"`
	// Share is Load over the cluster's total.
	Share float64 `json:"share"`
}

// Prediction is the expected per-broker load under one partitioner.
type Prediction struct {
	Partitioner string        `json:"partitioner"`
	Brokers     []BrokerShare `json:"brokers"`
	// MaxOverMean is the busiest broker's load over the mean load of the
	// brokers SkewBrokers names (the live leaders of the written topics).
	MaxOverMean   float64 `json:"max_over_mean"`
	BusiestBroker int32   `json:"busiest_broker"`
	// Basis says what the prediction rests on (PredictShares), when the
	// partitioner is predicted directly rather than through Equivalents.
	Basis string `json:"basis,omitempty"`
}

// Predict computes the expected load per broker when producers write each
// topic at its rate, under round robin and Node partitioning (Equivalents
// says which of the two every other partitioner equals). Only partitions
// with a live leader take records. Every broker is listed, in id order;
// max/mean is taken over SkewBrokers.
func Predict(c *topology.Cluster, rates Rates) []Prediction {
	ps, err := PredictAll(c, Loads(c, rates, workload.TopicKeys{}), ShareOptions{}, RoundRobin, Node)
	if err != nil {
		panic(err) // both names are known to PredictShares
	}
	for i := range ps {
		ps[i].Basis = "" // the section's notes say it, with Equivalents
	}
	return ps
}

// prediction lists load for every broker, in id order, with shares of the
// total and max/mean over the brokers in over.
func prediction(name string, brokers []topology.Broker, load map[int32]float64, over []int32) Prediction {
	p := Prediction{Partitioner: name, Brokers: make([]BrokerShare, len(brokers))}
	total, hi := 0.0, 0.0
	for _, b := range brokers {
		total += load[b.ID]
	}
	for j, b := range brokers {
		l := load[b.ID]
		p.Brokers[j] = BrokerShare{Broker: b.ID, Load: round6(l)}
		if total > 0 {
			p.Brokers[j].Share = round6(l / total)
		}
		if l > hi+1e-12*total {
			hi, p.BusiestBroker = l, b.ID
		}
	}
	var sum float64
	for _, id := range over {
		sum += load[id]
	}
	if sum > 0 {
		p.MaxOverMean = round3(hi * float64(len(over)) / sum)
	}
	return p
}

func round6(x float64) float64 {
	s := strconv.FormatFloat(x, 'g', 6, 64)
	v, _ := strconv.ParseFloat(s, 64)
	return v
}
