package chaos

import (
	"math"
	"slices"
	"strconv"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// predictionBasis says what a partitioner's predictions rest on, or why it
// has none: a producer without a rate cap writes as fast as the brokers take
// its records, so the topics' rates, and the shares, follow broker speed.
func (r *runner) predictionBasis(prods []*producer) (string, bool) {
	for _, p := range prods {
		if p.rate <= 0 {
			return "no prediction: producers without a rate cap (--rate unlimited) write as fast as the brokers take, so the topics' rates follow broker speed, which no layout shows", false
		}
	}
	ps, err := audit.PredictShares(&topology.Cluster{}, nil, prods[0].name, audit.ShareOptions{})
	if err != nil {
		return "no prediction: " + err.Error(), false
	}
	return ps.Basis, true
}

// predict computes the audit's expected load per broker for prods (one
// partitioner's producers) in phase ph of leg l: before from the leaders the
// phase began with, after from Kafka's election with the victim gone (what
// `kplan audit --what-if` computes), recovered from the preferred leaders.
// ok is false for phases without a prediction.
func (r *runner) predict(l *leg, prods []*producer, ph Phase) (map[int32]float64, bool) {
	c := &topology.Cluster{}
	for _, id := range r.brokers {
		c.Brokers = append(c.Brokers, topology.Broker{ID: id})
	}
	var src *clusterMeta
	switch ph {
	case PhaseBefore:
		src = l.meta[PhaseBefore]
	case PhaseAfter:
		src = l.preKill
		if l.victim < 0 {
			return nil, false
		}
		for i := range c.Brokers {
			if c.Brokers[i].ID == l.victim {
				c.Brokers[i].Missing = true
			}
		}
	case PhaseRecovered:
	default:
		return nil, false
	}
	if ph != PhaseRecovered && src == nil {
		return nil, false
	}
	var loads []workload.Topic
	for _, p := range prods {
		loads = append(loads, workload.Topic{Name: p.wname, Rate: float64(p.rate), Keys: p.keySpec})
		assign := r.assign[p.topic]
		for part, reps := range assign {
			tp := topology.Partition{Topic: p.wname, Partition: int32(part), Replicas: slices.Clone(reps), Leader: reps[0]}
			if src != nil {
				pms := src.topics[p.topic]
				if part >= len(pms) {
					return nil, false
				}
				tp.Leader = pms[part].leader
				if r.c.Real() {
					// The embedded cluster reports no real ISR (its
					// election counts every replica in sync).
					tp.ISR = slices.Clone(pms[part].isr)
				}
			}
			if ph == PhaseAfter {
				tp.Leader = topology.ElectAfterLoss(&tp, func(id int32) bool { return id == l.victim })
			}
			c.Partitions = append(c.Partitions, tp)
		}
	}
	c.Normalize()
	ps, err := audit.PredictShares(c, loads, prods[0].name, audit.ShareOptions{Regime: audit.RateCapped})
	if err != nil {
		return nil, false
	}
	return ps.Load, true
}

// setPrediction fills out's predicted and measured shares over the same
// brokers: those that led a partition in the phase and those the prediction
// loads. Measured shares are of acknowledged bytes.
func setPrediction(out *PhaseResult, pred map[int32]float64, bytes map[int32]int64) {
	over := slices.Clone(out.Leaders)
	for id, v := range pred {
		if v > 0 && !slices.Contains(over, id) {
			over = append(over, id)
		}
	}
	slices.Sort(over)
	var ptotal float64
	var mtotal int64
	for _, id := range over {
		ptotal += pred[id]
		mtotal += bytes[id]
	}
	if ptotal <= 0 {
		return
	}
	out.PredictedShare, out.MeasuredShare = map[string]float64{}, map[string]float64{}
	var worst, hi float64
	for _, id := range over {
		k := strconv.Itoa(int(id))
		ps := pred[id] / ptotal
		out.PredictedShare[k] = round4(ps)
		hi = max(hi, ps)
		if mtotal > 0 {
			ms := float64(bytes[id]) / float64(mtotal)
			out.MeasuredShare[k] = round4(ms)
			worst = max(worst, math.Abs(ms-ps)*100)
		}
	}
	out.PredictedMaxOverMean = ptr(round4(hi * float64(len(over))))
	if mtotal > 0 {
		out.MaxErrorPts = ptr(round4(worst))
	}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
