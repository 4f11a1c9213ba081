package audit

import (
	"fmt"

	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// DefaultFailoverThreshold is the excess (leaders on the busiest survivor
// above the optimum) past which the worst loss is a warning: one leader
// above ceil(online / survivors) is as close as a plan is asked to come
// (kplan reassign's failover objective), two or more is load a replica
// order could have spread.
const DefaultFailoverThreshold = 1

// FailoverOptions say what the failover section assumes.
type FailoverOptions struct {
	// Rates weigh the topics in the predicted load after the loss;
	// RatesGiven is false when every topic weighs 1.
	Rates      Rates
	RatesGiven bool
	// Threshold is the excess above which the worst loss is a warning.
	Threshold int
	// MinInsync is min.insync.replicas for the pair loss (0: Kafka's
	// default, DefaultMinInsync).
	MinInsync int
}

// FailoverSection is the report's failover section: the worst broker loss
// and, with two racks or more, the worst rack loss.
type FailoverSection struct {
	// Threshold is the excess above which a loss is a warning.
	Threshold int `json:"threshold"`
	// Rates says what the predicted load assumed: "equal" (every topic
	// weighs 1) or "given".
	Rates               string         `json:"rates"`
	RatesBytesPerSecond bool           `json:"rates_bytes_per_second"`
	Broker              *WorstFailover `json:"broker,omitempty"`
	Rack                *WorstFailover `json:"rack,omitempty"`
	// Pair is the worst loss of two brokers for min ISR, when a partition
	// has a replication factor of 3 or more.
	Pair *PairLoss `json:"pair,omitempty"`
}

// WorstFailover is one domain's worst loss.
type WorstFailover struct {
	// Worst is the loss leaving the busiest survivor furthest above the
	// optimum (WorstLoss).
	Worst LossFigure `json:"worst"`
	// Losses counts the losses evaluated (live brokers, or racks).
	Losses int `json:"losses"`
	// Topics are the topics with an excess under some loss of the domain,
	// each with its own worst loss (TopicFailovers): every one, most
	// excess first.
	Topics []TopicFailover `json:"topics"`
	// RoundRobin is the predicted load per broker after Worst under round
	// robin (franz-go's default for keyless records, and what the uniform
	// sticky default equals in expectation).
	RoundRobin LoadAfter `json:"predicted_roundrobin"`
}

// LoadAfter is a predicted load after a loss, in the rates' unit.
type LoadAfter struct {
	Busiest int32   `json:"busiest_broker"`
	Max     float64 `json:"max_load"`
	Mean    float64 `json:"mean_load"`
	// MaxOverMean is over the live leaders of the written topics after the
	// loss (SkewBrokers), as kplan chaos measures.
	MaxOverMean float64 `json:"max_over_mean"`
}

// AddFailover stores the failover section of c and raises a warning for
// each domain whose worst excess is above o.Threshold.
func (r *Report) AddFailover(c *topology.Cluster, o FailoverOptions) error {
	s := &FailoverSection{Threshold: o.Threshold, Rates: "equal"}
	if o.RatesGiven {
		s.Rates, s.RatesBytesPerSecond = "given", o.Rates.BytesPerSecond
	}
	rates := o.Rates
	if !o.RatesGiven {
		rates = EqualRates()
	}
	loads := Loads(c, rates, workload.TopicKeys{})
	for _, d := range []Domain{DomainBroker, DomainRack} {
		w, err := worstFailover(c, d, loads)
		if err != nil {
			return err
		}
		if w == nil {
			continue
		}
		if d == DomainBroker {
			s.Broker = w
		} else {
			s.Rack = w
		}
		if l := w.Worst; l.Excess > o.Threshold {
			subject, what := fmt.Sprintf("broker-%d", l.Lost[0]), fmt.Sprintf("broker %d", l.Lost[0])
			if d == DomainRack {
				subject, what = "rack "+l.Rack, fmt.Sprintf("rack %s (brokers %s)", l.Rack, ints32(l.Lost, 10))
			}
			r.Findings = append(r.Findings, Finding{Rule: "failover-excess", Severity: Warning, Subject: subject,
				Message: fmt.Sprintf("losing %s would leave broker %d leading %d partitions where %d is the optimum (ceil(%d online / %d survivors)): %d above, more than the threshold of %d (--failover-threshold); a placement and replica order spreading the lost leaderships over the survivors would avoid it",
					what, l.Busiest, l.BusiestLeaders, l.Optimum, l.Online, l.Survivors, l.Excess, o.Threshold)})
		}
	}
	if maxRF(c) >= 3 {
		m := o.MinInsync
		if m <= 0 {
			m = DefaultMinInsync
		}
		if s.Pair = WorstPairLoss(c, m); s.Pair != nil && s.Pair.UnderMinISR > s.Pair.AlreadyUnder {
			p := s.Pair
			why := fmt.Sprintf("no placement avoids them all (RF - 2 < min ISR: some pair always holds two replicas; the least any placement leaves is %d): only a higher replication factor or a lower min.insync.replicas does", p.LeastAnyPlacement)
			if p.Avoidable > 0 {
				why = fmt.Sprintf("%d of them only because their ISR is short already", p.Avoidable)
			}
			r.Findings = append(r.Findings, Finding{Rule: "pair-under-min-isr", Severity: Info, Subject: fmt.Sprintf("brokers %d,%d", p.Lost[0], p.Lost[1]),
				Message: fmt.Sprintf("losing brokers %d and %d together would leave %d partitions with fewer in-sync replicas than min.insync.replicas %d (e.g. %s): acks=all writes to them fail; %s",
					p.Lost[0], p.Lost[1], p.UnderMinISR, m, p.Examples[0], why)})
		}
	}
	r.Failover = s
	sortFindings(r.Findings)
	return nil
}

func maxRF(c *topology.Cluster) int {
	rf := 0
	for i := range c.Partitions {
		rf = max(rf, len(c.Partitions[i].Replicas))
	}
	return rf
}

// worstFailover evaluates every loss of the domain; nil when there is
// none to evaluate (no live broker; fewer than two racks).
func worstFailover(c *topology.Cluster, d Domain, loads []workload.Topic) (*WorstFailover, error) {
	losses, topics := Failover(c, d)
	if len(losses) == 0 || (d == DomainRack && len(losses) < 2) {
		return nil, nil
	}
	w := &WorstFailover{Worst: *WorstLoss(losses), Losses: len(losses), Topics: topics}
	if w.Topics == nil {
		w.Topics = []TopicFailover{}
	}
	ps, over, err := predictAll(c, loads, ShareOptions{}, w.Worst.Lost, RoundRobin)
	if err != nil {
		return nil, err
	}
	p := ps[0]
	load := make(map[int32]float64, len(p.Brokers))
	for _, b := range p.Brokers {
		load[b.Broker] = b.Load
	}
	var sum float64
	for _, id := range over {
		sum += load[id]
	}
	w.RoundRobin.Max = load[p.BusiestBroker]
	w.RoundRobin.Busiest, w.RoundRobin.MaxOverMean = p.BusiestBroker, p.MaxOverMean
	if len(over) > 0 {
		w.RoundRobin.Mean = round6(sum / float64(len(over)))
	}
	return w, nil
}
