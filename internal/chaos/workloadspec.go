package chaos

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// MaxEmbeddedBrokerID is the largest broker id a layout may name on the
// embedded cluster, whose brokers are numbered 1..N (at most 100).
const MaxEmbeddedBrokerID = 100

// WorkloadSpec is how a workload's topics get their rates and keys: per
// topic rates or weights, the total the weights share, and the keys. A
// layout's topics get them at once (Build); existing topics at run time,
// from the cluster (Existing). Errors name the field the setting came from
// ("rates" or RatesField, "keys", "topics").
type WorkloadSpec struct {
	// Topics selects the existing topics; nil for a layout's.
	Topics *regexp.Regexp
	// Rates are the per-topic rates or weights; RatesGiven is false when
	// every topic weighs 1. RatesField names their field in errors
	// ("rates", or "rates-file").
	Rates      audit.Rates
	RatesGiven bool
	RatesField string
	// Total is the total that relative weights scale to (0: unlimited).
	Total int64
	// Keys are the key distributions: PerTopic by name, else Default.
	Keys workload.TopicKeys
}

// Build returns the workload over the topics named (in the order given),
// with assignments (nil entries for existing topics); among says what the
// names are for errors ("in the layout FILE", "among the topics matching
// ..."). Topics whose rate is 0 are left out.
func (s *WorkloadSpec) Build(names []string, assignments map[string][][]int32, among string) ([]WorkloadTopic, error) {
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	for _, t := range sortedKeys(s.Rates.ByTopic) {
		if !known[t] {
			return nil, errkind.Usagef(s.RatesField, "topic %q is not %s", t, among)
		}
	}
	for _, t := range sortedKeys(s.Keys.ByTopic) {
		if !known[t] {
			return nil, errkind.Usagef("keys", "topic %q is not %s", t, among)
		}
	}
	rates := s.Rates
	if !s.RatesGiven {
		rates = audit.EqualRates()
	}
	var sum float64
	for _, n := range names {
		sum += rates.Of(n)
	}
	if sum <= 0 {
		return nil, errkind.Usagef(s.RatesField, "no topic %s has a positive rate", among)
	}
	if s.RatesGiven && !rates.BytesPerSecond && s.Total == 0 {
		return nil, errkind.Usagef(s.RatesField, "relative weights need --rate, the total they share (or give rates in bytes/s, e.g. A=2MB/s)")
	}
	var out []WorkloadTopic
	for _, n := range names {
		w := rates.Of(n)
		if w <= 0 {
			continue // not written
		}
		var rate int64
		switch {
		case rates.BytesPerSecond:
			rate = max(1, int64(math.Round(w)))
		case s.Total > 0:
			// Weights share the total; never 0 B/s, which would mean unlimited.
			rate = max(1, int64(math.Round(float64(s.Total)*w/sum)))
		}
		out = append(out, WorkloadTopic{Name: n, Assignment: assignments[n], Rate: rate, Keys: s.Keys.Of(n)})
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// LayoutTopics are a layout's topics in order with their assignments:
// partitions in order, each with the layout's current leader moved first
// (so it is the preferred leader of the topics created from it); MaxID is
// the largest broker id named. path names the layout in errors, which
// name the field "layout"; embedded checks the ids the embedded cluster
// can have.
func LayoutTopics(c *topology.Cluster, path string, embedded bool) (names []string, assignments map[string][][]int32, maxID int32, err error) {
	if len(c.Partitions) == 0 {
		return nil, nil, 0, errkind.Usagef("layout", "%s has no partitions", path)
	}
	assignments = map[string][][]int32{}
	for _, p := range c.Partitions { // sorted by topic, then partition
		a := assignments[p.Topic]
		if a == nil {
			names = append(names, p.Topic)
		}
		if int(p.Partition) != len(a) {
			return nil, nil, 0, errkind.Usagef("layout", "%s: topic %s: partition %d is missing (a created topic's partitions are numbered from 0)", path, p.Topic, len(a))
		}
		if len(a) > 0 && len(p.Replicas) != len(a[0]) {
			return nil, nil, 0, errkind.Usagef("layout", "%s: topic %s: partition %d has %d replicas, partition 0 has %d (Kafka creates topics with one replication factor)", path, p.Topic, p.Partition, len(p.Replicas), len(a[0]))
		}
		if len(p.Replicas) == 0 {
			return nil, nil, 0, errkind.Usagef("layout", "%s: %s/%d has no replicas", path, p.Topic, p.Partition)
		}
		reps := slices.Clone(p.Replicas)
		if i := slices.Index(reps, p.Leader); i > 0 {
			reps = append([]int32{p.Leader}, slices.Delete(reps, i, i+1)...)
		}
		for _, id := range reps {
			if embedded && (id < 1 || id > MaxEmbeddedBrokerID) {
				return nil, nil, 0, errkind.Usagef("layout", "%s: %s/%d names broker %d (the embedded cluster's brokers are numbered 1 to %d)", path, p.Topic, p.Partition, id, MaxEmbeddedBrokerID)
			}
			maxID = max(maxID, id)
		}
		assignments[p.Topic] = append(a, reps)
	}
	return names, assignments, maxID, nil
}

// Existing builds the workload of the topics of c matching Topics, sorted
// (assignments nil: the engine reads them from the cluster), leaving out
// Kafka's internal topics (__consumer_offsets, ...): kplan never writes
// those.
func (s *WorkloadSpec) Existing(ctx context.Context, c Cluster, conn kafka.ConnOptions, version string) ([]WorkloadTopic, error) {
	filter := func(t string) bool { return !strings.HasPrefix(t, "__") && s.Topics.MatchString(t) }
	adm := kafka.NewAdmin(conn.WithSeeds(c.Seeds()), version)
	defer adm.Close()
	snap, err := adm.Snapshot(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("listing the topics matching --topics: %w", err)
	}
	var names []string
	for _, p := range snap.Partitions {
		if len(names) == 0 || names[len(names)-1] != p.Topic {
			names = append(names, p.Topic)
		}
	}
	if len(names) == 0 {
		return nil, errkind.Usagef("topics", "no topic of %s matches %q", c.Kind(), s.Topics.String())
	}
	return s.Build(names, nil, fmt.Sprintf("among the topics matching --topics %q", s.Topics.String()))
}
