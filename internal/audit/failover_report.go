package audit

import (
	"fmt"
	"sync"

	"github.com/kplan-dev/kplan/internal/topology"
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
	// MinInsync is min.insync.replicas for the pair loss, for every topic
	// (0: each topic's MinInsyncByTopic, else Kafka's default,
	// DefaultMinInsync).
	MinInsync int
	// MinInsyncByTopic is each topic's min.insync.replicas as a live
	// cluster reports it (its own config, else the broker's default); nil
	// when not read. MinInsync, when set, overrides it.
	MinInsyncByTopic map[string]int
}

// minInsyncs is what the pair loss judges each topic against, and where
// that came from: "flag", "cluster" or "default".
func (o FailoverOptions) minInsyncs() (MinInsyncs, string) {
	switch {
	case o.MinInsync > 0:
		return MinInsyncs{Default: o.MinInsync}, MinInsyncFromFlag
	case o.MinInsyncByTopic != nil:
		return MinInsyncs{Default: DefaultMinInsync, ByTopic: o.MinInsyncByTopic}, MinInsyncFromCluster
	default:
		return MinInsyncs{Default: DefaultMinInsync}, MinInsyncFromDefault
	}
}

// Where a pair loss's min.insync.replicas came from (PairLoss.From).
const (
	MinInsyncFromFlag    = "flag"
	MinInsyncFromCluster = "cluster"
	MinInsyncFromDefault = "default"
)

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
	em := newElectModel(c)
	mi, from := o.minInsyncs()
	// The two domains and the pair loss only read the election model: they
	// run side by side, and their figures are put together in a fixed order.
	domains := []Domain{DomainBroker, DomainRack}
	worst := make([]*WorstFailover, len(domains))
	errs := make([]error, len(domains))
	var pair *PairLoss
	var wg sync.WaitGroup
	for i, d := range domains {
		wg.Go(func() { worst[i], errs[i] = worstFailover(em, d, rates) })
	}
	if em.maxRF() >= 3 {
		wg.Go(func() {
			if pair = em.worstPair(mi); pair != nil {
				pair.From = from
			}
		})
	}
	wg.Wait()
	for i, d := range domains {
		w, err := worst[i], errs[i]
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
	if em.maxRF() >= 3 {
		if s.Pair = pair; s.Pair != nil && s.Pair.UnderMinISR > s.Pair.AlreadyUnder {
			p := s.Pair
			why := fmt.Sprintf("no placement avoids them all (RF - 2 < min ISR: some pair always holds two replicas; the least any placement leaves is %d): only a higher replication factor or a lower min.insync.replicas does", p.LeastAnyPlacement)
			if p.Avoidable > 0 {
				why = fmt.Sprintf("%d of them only because their ISR is short already", p.Avoidable)
			}
			r.Findings = append(r.Findings, Finding{Rule: "pair-under-min-isr", Severity: Info, Subject: fmt.Sprintf("brokers %d,%d", p.Lost[0], p.Lost[1]),
				Message: fmt.Sprintf("losing brokers %d and %d together would leave %d partitions with fewer in-sync replicas than %s (e.g. %s): acks=all writes to them fail; %s",
					p.Lost[0], p.Lost[1], p.UnderMinISR, p.MinInsyncText(), p.Examples[0], why)})
		}
	}
	r.Failover = s
	sortFindings(r.Findings)
	return nil
}

func (em *electModel) maxRF() int {
	rf := int32(0)
	for i := 1; i < len(em.off); i++ {
		rf = max(rf, em.off[i]-em.off[i-1])
	}
	return int(rf)
}

// worstFailover evaluates every loss of the domain; nil when there is
// none to evaluate (no live broker; fewer than two racks).
func worstFailover(em *electModel, d Domain, rates Rates) (*WorstFailover, error) {
	f := newFailover(em, d)
	if len(f.units) == 0 || (d == DomainRack && len(f.units) < 2) {
		return nil, nil
	}
	losses, topics := f.losses(), f.topics()
	w := &WorstFailover{Worst: *WorstLoss(losses), Losses: len(losses), Topics: topics}
	if w.Topics == nil {
		w.Topics = []TopicFailover{}
	}
	p, over := f.roundRobinAfter(f.unitOf[mustPos(f.ix, w.Worst.Lost[0])], rates)
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

func mustPos(ix *topology.Index, id int32) int {
	j, _ := ix.Pos(id)
	return j
}

// roundRobinAfter is PredictAll(AfterLoss(c, unit u's brokers), rates,
// RoundRobin) from the election model: each topic written at a positive
// rate splits it evenly over its partitions with a leader after the loss,
// and max/mean is over the live brokers leading one of them (SkewBrokers).
func (f *failover) roundRobinAfter(u int, rates Rates) (Prediction, []int32) {
	m := f.m
	n := f.ix.Len()
	load := make([]float64, n)
	leads := make([]bool, n)
	var leader []int32
	for ti := 0; ti+1 < len(m.topicStart); ti++ {
		i, end := int(m.topicStart[ti]), int(m.topicStart[ti+1])
		rate := rates.Of(f.c.Partitions[i].Topic)
		if !(rate > 0) {
			continue
		}
		leader = leader[:0]
		for k := i; k < end; k++ {
			lj := f.lpos[k]
			switch {
			case lj >= 0 && f.unitOf[lj] == u:
				lj = f.succ[k]
			case lj < 0 && f.c.Partitions[k].Leader != topology.NoLeader:
				// Led by a broker already down or unknown (a stale
				// layout): Kafka elects it too, as AfterLoss does.
				lj = f.electAfter(&f.c.Partitions[k], u)
			}
			if lj >= 0 {
				leader = append(leader, lj)
			}
		}
		for _, j := range leader {
			load[j] += rate / float64(len(leader))
			leads[j] = true
		}
	}
	byID := make(map[int32]float64, n)
	var over []int32
	for j, b := range f.c.Brokers {
		byID[b.ID] = load[j]
		if leads[j] {
			over = append(over, b.ID)
		}
	}
	return prediction(RoundRobin, f.c.Brokers, byID, over), over
}

// electAfter is topology.ElectAfterLoss once unit u is lost, as a position
// (-1 for none).
func (f *failover) electAfter(p *topology.Partition, u int) int32 {
	id := topology.ElectAfterLoss(p, func(id int32) bool {
		j, ok := f.ix.Pos(id)
		return !ok || f.down[j] || (u >= 0 && f.unitOf[j] == u)
	})
	if j, ok := f.ix.Pos(id); ok && id != topology.NoLeader {
		return int32(j)
	}
	return -1
}
