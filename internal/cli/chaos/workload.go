package chaos

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// MaxEmbeddedBrokerID is the largest broker id a layout may name on the
// embedded cluster, whose brokers are numbered 1..N (--brokers at most 100).
const MaxEmbeddedBrokerID = 100

// WorkloadSpec is how a workload's topics get their rates and keys: from
// --rates/--rates-file, --rate and --keys. With --layout the CLI applies it
// at once (Config.Workload); with --topics at run time, to the topics that
// exist on the cluster.
type WorkloadSpec struct {
	// Topics selects the existing topics (--topics); nil with --layout.
	Topics *regexp.Regexp
	// Rates are the per-topic rates or weights; RatesGiven is false when
	// every topic weighs 1.
	Rates      audit.Rates
	RatesGiven bool
	// Total is --rate: the total that relative weights scale to (0:
	// unlimited).
	Total int64
	// Keys are the key distributions: PerTopic by name, else Default.
	Keys workload.TopicKeys

	// where spells a flag for errors (its file line when a workload file
	// set it); ratesFlag is "rates" or "rates-file".
	where     func(string) string
	ratesFlag string
}

// build returns the workload over the topics named (in the order given),
// with assignments (nil entries for existing topics); among says what the
// names are for errors ("in --layout FILE", "matching --topics RE"). Topics
// whose rate is 0 are left out.
func (s *WorkloadSpec) build(names []string, assignments map[string][][]int32, among string) ([]chaos.WorkloadTopic, error) {
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	for _, t := range sortedKeys(s.Rates.ByTopic) {
		if !known[t] {
			return nil, cmdutil.UsageErrorf("%s: topic %q is not %s", s.where(s.ratesFlag), t, among)
		}
	}
	for _, t := range sortedKeys(s.Keys.ByTopic) {
		if !known[t] {
			return nil, cmdutil.UsageErrorf("%s: topic %q is not %s", s.where("keys"), t, among)
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
		return nil, cmdutil.UsageErrorf("%s: no topic %s has a positive rate", s.where(s.ratesFlag), among)
	}
	if s.RatesGiven && !rates.BytesPerSecond && s.Total == 0 {
		return nil, cmdutil.UsageErrorf("%s: relative weights need --rate, the total they share (or give rates in bytes/s, e.g. A=2MB/s)", s.where(s.ratesFlag))
	}
	var out []chaos.WorkloadTopic
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
			// Weights share --rate; never 0 B/s, which would mean unlimited.
			rate = max(1, int64(math.Round(float64(s.Total)*w/sum)))
		}
		out = append(out, chaos.WorkloadTopic{Name: n, Assignment: assignments[n], Rate: rate, Keys: s.Keys.Of(n)})
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

// loadLayout reads a layout file as `kplan audit --from` does and returns
// its topics in order with their assignments: partitions in order, each
// with the layout's current leader moved first (so it is the preferred
// leader of the topics created from it). flag spells --layout (or the file
// line that set it); embedded checks the ids the embedded cluster can
// have.
func loadLayout(path, flag string, embedded bool) (names []string, assignments map[string][][]int32, maxID int32, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, cmdutil.UsageErrorf("%s: %w", flag, err)
	}
	defer f.Close() //nolint:errcheck // read-only
	c, err := topology.Load(f, path)
	if err != nil {
		return nil, nil, 0, cmdutil.Usage(fmt.Errorf("%s: %w", flag, err)) // names file:line
	}
	if len(c.Partitions) == 0 {
		return nil, nil, 0, cmdutil.UsageErrorf("%s: %s has no partitions", flag, path)
	}
	assignments = map[string][][]int32{}
	for _, p := range c.Partitions { // sorted by topic, then partition
		a := assignments[p.Topic]
		if a == nil {
			names = append(names, p.Topic)
		}
		if int(p.Partition) != len(a) {
			return nil, nil, 0, cmdutil.UsageErrorf("%s: %s: topic %s: partition %d is missing (a created topic's partitions are numbered from 0)", flag, path, p.Topic, len(a))
		}
		if len(a) > 0 && len(p.Replicas) != len(a[0]) {
			return nil, nil, 0, cmdutil.UsageErrorf("%s: %s: topic %s: partition %d has %d replicas, partition 0 has %d (Kafka creates topics with one replication factor)", flag, path, p.Topic, p.Partition, len(p.Replicas), len(a[0]))
		}
		if len(p.Replicas) == 0 {
			return nil, nil, 0, cmdutil.UsageErrorf("%s: %s: %s/%d has no replicas", flag, path, p.Topic, p.Partition)
		}
		reps := slices.Clone(p.Replicas)
		if i := slices.Index(reps, p.Leader); i > 0 {
			reps = append([]int32{p.Leader}, slices.Delete(reps, i, i+1)...)
		}
		for _, id := range reps {
			if embedded && (id < 1 || id > MaxEmbeddedBrokerID) {
				return nil, nil, 0, cmdutil.UsageErrorf("%s: %s: %s/%d names broker %d (the embedded cluster's brokers are numbered 1 to %d)", flag, path, p.Topic, p.Partition, id, MaxEmbeddedBrokerID)
			}
			maxID = max(maxID, id)
		}
		assignments[p.Topic] = append(a, reps)
	}
	return names, assignments, maxID, nil
}

// existingTopics lists the topics of the cluster that re matches, sorted,
// leaving out Kafka's internal topics (__consumer_offsets, ...): kplan
// never writes those.
func existingTopics(ctx context.Context, c chaos.Cluster, conn kafka.ConnOptions, version string, re *regexp.Regexp) ([]string, error) {
	filter := func(t string) bool { return !strings.HasPrefix(t, "__") && re.MatchString(t) }
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
		return nil, cmdutil.UsageErrorf("--topics: no topic of %s matches %q", c.Kind(), re.String())
	}
	return names, nil
}

// existingWorkload builds Config.Workload from the topics of c matching
// --topics (assignments nil: the engine reads them from the cluster).
func existingWorkload(ctx context.Context, c chaos.Cluster, cfg chaos.Config, s *WorkloadSpec) ([]chaos.WorkloadTopic, error) {
	names, err := existingTopics(ctx, c, cfg.Conn, cfg.Version, s.Topics)
	if err != nil {
		return nil, err
	}
	return s.build(names, nil, fmt.Sprintf("among the topics matching --topics %q", s.Topics.String()))
}
