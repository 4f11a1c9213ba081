package audit

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// Severity ranks a finding.
type Severity string

// Severities, from least to most severe.
const (
	Info    Severity = "info"
	Warning Severity = "warning"
	Error   Severity = "error"
)

// Rank orders severities: info 0, warning 1, error 2.
func (s Severity) Rank() int {
	switch s {
	case Error:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Finding is one problem the audit found.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Subject  string   `json:"subject"`
	Message  string   `json:"message"`
}

// GroupJSON is a max group in the report.
type GroupJSON struct {
	ID      int      `json:"id"`
	Brokers []int32  `json:"brokers"`
	Topics  []string `json:"topics"`
}

// OverlapJSON is an overlapping pair of groups.
type OverlapJSON struct {
	Groups        [2]int  `json:"groups"`
	SharedBrokers []int32 `json:"shared_brokers"`
}

// BrokerGroupsJSON is a broker touched by more than one group.
type BrokerGroupsJSON struct {
	Broker int32 `json:"broker"`
	Groups []int `json:"groups"`
}

// BrokerLoad is a broker's leader and replica counts.
type BrokerLoad struct {
	Broker   int32  `json:"broker"`
	Rack     string `json:"rack,omitempty"`
	Leaders  int    `json:"leaders"`
	Replicas int    `json:"replicas"`
}

// Skew summarises counts over brokers.
type Skew struct {
	Min         int     `json:"min"`
	Max         int     `json:"max"`
	Mean        float64 `json:"mean"`
	MaxOverMean float64 `json:"max_over_mean"`
}

// Report is the audit's result; its JSON is `kplan audit -o json`.
type Report struct {
	Schema     string      `json:"schema"`
	By         string      `json:"by"`
	Brokers    int         `json:"brokers"`
	Topics     int         `json:"topics"`
	Partitions int         `json:"partitions"`
	MaxGroups  []GroupJSON `json:"max_groups"`
	// OverlapCount is how many pairs of max groups overlap, always exact;
	// Overlaps lists the first of them in (A, B) order, as many as asked.
	OverlapCount int           `json:"overlap_count"`
	Overlaps     []OverlapJSON `json:"overlaps"`
	// OverlapsTruncated is true when Overlaps lists fewer pairs than
	// OverlapCount.
	OverlapsTruncated bool               `json:"overlaps_truncated,omitempty"`
	BrokerGroups      []BrokerGroupsJSON `json:"broker_groups"`
	Load              []BrokerLoad       `json:"load"`
	LeaderSkew        Skew               `json:"leader_skew"`
	ReplicaSkew       Skew               `json:"replica_skew"`
	Findings          []Finding          `json:"findings"`
	// Predicted is the expected load per broker under each partitioner
	// computed; PredictedEquivalents says which of them each other
	// partitioner kplan chaos runs equals in expectation, and why.
	Predicted            []Prediction `json:"predicted_load"`
	PredictedEquivalents []Equivalent `json:"predicted_equivalents"`
	// Rates says what Predicted assumed: "equal" or "given".
	Rates string `json:"rates"`
	// RatesBytesPerSecond is true when Predicted loads are bytes per second
	// rather than relative weights.
	RatesBytesPerSecond bool `json:"rates_bytes_per_second"`
	// Keys are the record keys the predictions assumed (workload.TopicKeys.String),
	// when given; SQFSharedRegime is "saturated" when sqf-shared was
	// predicted with queues full.
	Keys            string   `json:"keys,omitempty"`
	SQFSharedRegime string   `json:"sqf_shared_regime,omitempty"`
	WhatIf          []WhatIf `json:"what_if,omitempty"`
	// PredictedAfterLoss is the predicted load per broker under every
	// partitioner kplan chaos runs after each simulated loss: what chaos
	// predicts for its after phase when it kills that broker.
	PredictedAfterLoss []LossPrediction `json:"predicted_after_loss,omitempty"`
	// Failover is the worst broker and rack loss (AddFailover).
	Failover *FailoverSection `json:"failover,omitempty"`
	// Observed is a kplan observe snapshot's loads on this layout
	// (AddObserved).
	Observed *ObservedLoad `json:"observed_load,omitempty"`
}

// PredictOptions say what the predictions assume beyond the rates.
type PredictOptions struct {
	Keys   workload.TopicKeys
	Shares ShareOptions
}

// direct reports whether every partitioner must be predicted on its own:
// keyed records set hash and default apart from round robin, and a
// saturated shared SQF apart from node, so Equivalents no longer hold.
func (o PredictOptions) direct() bool { return o.Keys.Keyed() || o.Shares.Regime == Saturated }

// AddPredictionWith stores the predicted load for rates as AddPrediction
// does; when o has keyed records or a saturated regime, it predicts every
// partitioner of SharePartitioners directly (with its basis) instead of
// round robin and node with Equivalents.
func (r *Report) AddPredictionWith(c *topology.Cluster, rates Rates, given bool, o PredictOptions) error {
	if !o.direct() {
		r.AddPrediction(c, rates, given)
		return nil
	}
	ps, err := PredictAll(c, Loads(c, rates, o.Keys), o.Shares)
	if err != nil {
		return err
	}
	r.Predicted, r.PredictedEquivalents = ps, []Equivalent{}
	r.noteOptions(o)
	r.Rates = "equal"
	if given {
		r.Rates, r.RatesBytesPerSecond = "given", rates.BytesPerSecond
		r.predictedSkewFindings()
	}
	return nil
}

func (r *Report) noteOptions(o PredictOptions) {
	if o.Keys.Keyed() {
		r.Keys = o.Keys.String()
	}
	if o.Shares.Regime == Saturated {
		r.SQFSharedRegime = "saturated"
	}
}

// AddLossPredictions stores, for each broker in lost (every live broker
// when empty), the predicted load per broker under every partitioner after
// losing it (PredictAfterLoss).
func (r *Report) AddLossPredictions(c *topology.Cluster, rates Rates, given bool, o PredictOptions, lost []int32) error {
	if len(lost) == 0 {
		for _, b := range c.Brokers {
			if !b.Missing {
				lost = append(lost, b.ID)
			}
		}
	}
	ps, err := PredictAfterLoss(c, rates, o.Keys, o.Shares, lost)
	if err != nil {
		return err
	}
	r.PredictedAfterLoss = ps
	r.noteOptions(o)
	if given {
		r.RatesBytesPerSecond = rates.BytesPerSecond
	}
	return nil
}

// AddPrediction stores the predicted load for rates; given says whether
// the user gave the rates (then a skewed prediction is a warning).
func (r *Report) AddPrediction(c *topology.Cluster, rates Rates, given bool) {
	r.Predicted, r.PredictedEquivalents = Predict(c, rates), Equivalents
	r.Rates = "equal"
	if !given {
		return
	}
	r.Rates, r.RatesBytesPerSecond = "given", rates.BytesPerSecond
	r.predictedSkewFindings()
}

func (r *Report) predictedSkewFindings() {
	for _, p := range r.Predicted {
		if p.MaxOverMean > SkewWarn {
			r.Findings = append(r.Findings, Finding{Rule: "predicted-skew", Severity: Warning, Subject: p.Partitioner,
				Message: fmt.Sprintf("under the %s partitioner broker %d would take %.2fx the mean load at these rates", p.Partitioner, p.BusiestBroker, p.MaxOverMean)})
		}
	}
	sortFindings(r.Findings)
}

// AddWhatIf simulates losing each broker in lost (all when empty), stores
// the results and raises a finding for every loss that would take
// partitions offline.
func (r *Report) AddWhatIf(c *topology.Cluster, by By, lost []int32) {
	r.WhatIf = WhatIfLoss(c, by, lost)
	worst := -1
	for i, w := range r.WhatIf {
		if w.NewOverlaps > 0 && (worst < 0 || w.NewOverlaps > r.WhatIf[worst].NewOverlaps) {
			worst = i
		}
	}
	if worst >= 0 {
		w := r.WhatIf[worst]
		r.Findings = append(r.Findings, Finding{Rule: "what-if-new-overlap", Severity: Info, Subject: fmt.Sprintf("broker-%d", w.Broker),
			Message: fmt.Sprintf("losing broker %d would create %d new %s between max groups, the most of any loss simulated; e.g. %s",
				w.Broker, w.NewOverlaps, plural(w.NewOverlaps, "overlap", "overlaps"), w.NewOverlapExample)})
	}
	for _, w := range r.WhatIf {
		if n := w.OfflineCount; n > 0 {
			r.Findings = append(r.Findings, Finding{Rule: "what-if-offline", Severity: Error, Subject: fmt.Sprintf("broker-%d", w.Broker),
				Message: fmt.Sprintf("losing broker %d would leave %d partitions with no in-sync replica to elect (e.g. %s)", w.Broker, n, w.OfflinePartitions[0])})
		}
		if n := w.RFAboveBrokers; n > 0 {
			r.Findings = append(r.Findings, Finding{Rule: "rf-above-brokers", Severity: Warning, Subject: fmt.Sprintf("broker-%d", w.Broker),
				Message: fmt.Sprintf("losing broker %d would leave %d live %s, fewer than the replication factor of %d %s (e.g. %s): they stay under-replicated until a broker comes back",
					w.Broker, w.LiveBrokers, plural(w.LiveBrokers, "broker", "brokers"), n, plural(n, "partition", "partitions"), w.rfAboveExample)})
		}
	}
	sortFindings(r.Findings)
}

func sortFindings(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int {
		if x := cmp.Compare(b.Severity.Rank(), a.Severity.Rank()); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Rule, b.Rule); x != 0 {
			return x
		}
		return cmp.Compare(a.Subject, b.Subject)
	})
}

// MaxOverlaps is how many overlapping pairs an audit lists unless told
// otherwise; OverlapCount counts them all.
const MaxOverlaps = 10_000

// Options tune an audit.
type Options struct {
	By By
	// ListOverlaps is how many overlapping pairs to list; 0 lists all.
	ListOverlaps int
}

// maxOverlapFindings bounds the per-pair findings; one more finding
// summarises the rest.
const maxOverlapFindings = 20

// SkewWarn is the max/mean above which leader or replica counts are a
// warning.
const SkewWarn = 1.2

// Run audits c, listing up to MaxOverlaps overlapping pairs.
func Run(c *topology.Cluster, by By) Report {
	return RunWith(c, Options{By: by, ListOverlaps: MaxOverlaps})
}

// RunWith audits c as opts say.
func RunWith(c *topology.Cluster, opts Options) Report {
	by := opts.By
	ix := topology.NewIndex(c.Brokers)
	names, sets := TopicSets(c, ix, by)
	groups := MaxGroups(names, sets)
	overlaps, count := OverlapsCounted(groups, ix.Len(), max(opts.ListOverlaps, 0))
	truncated := count > len(overlaps)
	views := BrokerViews(groups, ix.Len())
	r := Report{Schema: "kplan.audit/v1", By: map[By]string{ByLeaders: "leaders", ByReplicas: "replicas"}[by],
		Brokers: len(c.Brokers), Topics: len(names), Partitions: len(c.Partitions),
		MaxGroups: []GroupJSON{}, Overlaps: []OverlapJSON{}, BrokerGroups: []BrokerGroupsJSON{}, Findings: []Finding{}}
	for _, g := range groups {
		r.MaxGroups = append(r.MaxGroups, GroupJSON{ID: g.ID, Brokers: ix.IDs(g.Brokers), Topics: g.Topics})
	}
	r.OverlapCount, r.OverlapsTruncated = count, truncated
	for i, o := range overlaps {
		shared := ix.IDs(o.Shared)
		r.Overlaps = append(r.Overlaps, OverlapJSON{Groups: [2]int{o.A, o.B}, SharedBrokers: shared})
		if i < maxOverlapFindings {
			r.Findings = append(r.Findings, Finding{Rule: "partial-overlap", Severity: Warning, Subject: fmt.Sprintf("groups %d,%d", o.A, o.B),
				Message: fmt.Sprintf("max groups %d %v and %d %v share brokers %v: their load there depends on the producers' relative rates",
					o.A, groups[o.A-1].Topics, o.B, groups[o.B-1].Topics, shared)})
		}
	}
	if shown := min(len(overlaps), maxOverlapFindings); count > shown {
		r.Findings = append(r.Findings, Finding{Rule: "partial-overlap", Severity: Warning, Subject: "more groups",
			Message: fmt.Sprintf("%d more overlapping pairs of max groups (%d in all; see overlaps)", count-shown, count)})
	}
	for _, v := range views {
		r.BrokerGroups = append(r.BrokerGroups, BrokerGroupsJSON{Broker: ix.ID(v.Broker), Groups: v.Groups})
	}
	r.Load, r.LeaderSkew, r.ReplicaSkew = load(c, ix)
	r.Predicted, r.PredictedEquivalents, r.Rates = Predict(c, EqualRates()), Equivalents, "equal"
	r.Findings = append(r.Findings, checks(c, r)...)
	sortFindings(r.Findings)
	return r
}

func load(c *topology.Cluster, ix *topology.Index) ([]BrokerLoad, Skew, Skew) {
	out := make([]BrokerLoad, ix.Len())
	for i, b := range c.Brokers {
		out[i] = BrokerLoad{Broker: b.ID, Rack: b.Rack}
	}
	for _, p := range c.Partitions {
		if i, ok := ix.Pos(p.Leader); ok {
			out[i].Leaders++
		}
		for _, r := range p.Replicas {
			if i, ok := ix.Pos(r); ok {
				out[i].Replicas++
			}
		}
	}
	lead := make([]int, len(out))
	reps := make([]int, len(out))
	for i, l := range out {
		lead[i], reps[i] = l.Leaders, l.Replicas
	}
	return out, skew(lead), skew(reps)
}

func skew(v []int) Skew {
	if len(v) == 0 {
		return Skew{}
	}
	s := Skew{Min: slices.Min(v), Max: slices.Max(v)}
	sum := 0
	for _, x := range v {
		sum += x
	}
	s.Mean = round3(float64(sum) / float64(len(v)))
	if sum > 0 {
		s.MaxOverMean = round3(float64(s.Max) * float64(len(v)) / float64(sum))
	}
	return s
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// checks are the spread and health rules of §3.5.4 and Fig 3.8.
func checks(c *topology.Cluster, r Report) []Finding {
	var out []Finding
	add := func(rule string, sev Severity, subject, format string, a ...any) {
		out = append(out, Finding{Rule: rule, Severity: sev, Subject: subject, Message: fmt.Sprintf(format, a...)})
	}
	for name, sk := range map[string]Skew{"leaders": r.LeaderSkew, "replicas": r.ReplicaSkew} {
		if sk.MaxOverMean > SkewWarn {
			add(name+"-skew", Warning, "cluster", "%s per broker range %d-%d, mean %.3g: the busiest broker carries %.2fx its share", name, sk.Min, sk.Max, sk.Mean, sk.MaxOverMean)
		}
	}
	ix := topology.NewIndex(c.Brokers)
	live := c.LiveBrokers()
	brokersUp := fmt.Sprintf("the cluster has %d %s", live, plural(live, "broker", "brokers"))
	if live < len(c.Brokers) {
		brokersUp = fmt.Sprintf("only %d of its %d brokers %s up", live, len(c.Brokers), plural(live, "is", "are"))
	}
	// Dense rack ids per broker index, for the rack-duplicate rule; -1 for
	// a broker without a rack. A broker that is down (Missing) is known
	// only from replica lists, so its rack is unknown: it neither turns
	// the rule off nor counts in it. A live broker without a rack does
	// turn it off (the cluster is not rack-aware).
	rackID := make([]int, ix.Len())
	rackNames := map[string]int{}
	checkRacks := live > 0
	for i, br := range c.Brokers {
		rackID[i] = -1
		if br.Rack == "" {
			if !br.Missing {
				checkRacks = false
			}
			continue
		}
		id, ok := rackNames[br.Rack]
		if !ok {
			id = len(rackNames)
			rackNames[br.Rack] = id
		}
		rackID[i] = id
	}
	perBroker := make([]int, ix.Len()) // leaders of the current topic, by broker index
	var led []int                      // broker indexes with perBroker > 0
	var rackSeen []int                 // broker index per rack id, for one partition
	if checkRacks {
		rackSeen = make([]int, len(rackNames))
	}
	for _, t := range c.Topics() {
		led = led[:0]
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if j, ok := ix.Pos(p.Leader); ok {
				if perBroker[j] == 0 {
					led = append(led, j)
				}
				perBroker[j]++
			} else if p.Leader == topology.NoLeader {
				key := p.Key().String()
				add("offline", Error, key, "%s has no leader: it takes no writes or reads", key)
			}
			if len(p.Replicas) > live {
				key := p.Key().String()
				add("rf-above-brokers", Error, key, "%s has %d replicas but %s", key, len(p.Replicas), brokersUp)
			}
			// An ISR list is a fact wherever it came from: a live cluster, or
			// a layout file's "isr" (with or without its "live" flag).
			if p.ISR != nil && p.Leader != topology.NoLeader && len(p.ISR) < len(p.Replicas) {
				key := p.Key().String()
				add("under-replicated", Warning, key, "%s has %d of %d replicas in sync", key, len(p.ISR), len(p.Replicas))
			}
			if checkRacks && len(rackNames) >= len(p.Replicas) {
				for k := range rackSeen {
					rackSeen[k] = -1
				}
				for _, rep := range p.Replicas {
					j, ok := ix.Pos(rep)
					if !ok || rackID[j] < 0 {
						continue
					}
					if other := rackSeen[rackID[j]]; other >= 0 {
						key := p.Key().String()
						add("rack-duplicate", Warning, key, "%s has replicas %d and %d in rack %s", key, ix.ID(other), rep, c.Brokers[j].Rack)
						break
					}
					rackSeen[rackID[j]] = j
				}
			}
		}
		if len(led) == 0 {
			continue
		}
		lo, hi, hiB := len(t.Partitions), 0, int32(0)
		for _, j := range led {
			n := perBroker[j]
			lo = min(lo, n)
			if n > hi { // led is in partition order; ties go to the lower id below
				hi, hiB = n, ix.ID(j)
			} else if n == hi && ix.ID(j) < hiB {
				hiB = ix.ID(j)
			}
		}
		spread := len(led)
		for _, j := range led {
			perBroker[j] = 0
		}
		if spread == 1 && len(t.Partitions) > 1 && len(c.Brokers) > 1 {
			add("single-broker", Warning, t.Name, "all %d partitions of %s are led by broker %d", len(t.Partitions), t.Name, hiB)
			continue
		}
		if hi > lo {
			sev := Warning
			if hi-lo == 1 && len(t.Partitions)%spread != 0 {
				sev = Info // the count cannot split evenly over these brokers
			}
			add("uneven-spread", sev, t.Name, "%s leads %d-%d partitions per broker over %d brokers: broker %d takes %d shares of its traffic",
				t.Name, lo, hi, spread, hiB, hi)
		}
	}
	return out
}

// AtLeast reports whether any finding is at or above sev.
func (r Report) AtLeast(sev Severity) bool {
	for _, f := range r.Findings {
		if f.Severity.Rank() >= sev.Rank() {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
