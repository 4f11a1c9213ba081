package audit

import (
	"fmt"
	"slices"

	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/topology"
)

// DefaultLoadTolerance is how far above the mean a broker's observed disk,
// bytes in or bytes out may be before the audit names it.
const DefaultLoadTolerance = 0.10

// MaxObservedLossWork bounds the what-if by observed load: partitions
// times brokers. Above it the section says the losses were not computed.
const MaxObservedLossWork = 50_000_000

// ObservedLoad is the audit of a kplan observe snapshot's loads on the
// audited layout: per broker disk bytes, bytes in and bytes out per second,
// their skew, and the worst single-broker loss by bytes out.
type ObservedLoad struct {
	// WindowSeconds is the observed window; Tolerance the band above the
	// mean past which a broker is a finding.
	WindowSeconds float64 `json:"window_seconds"`
	Tolerance     float64 `json:"tolerance"`
	// Brokers are the live brokers in id order.
	Brokers []observe.BrokerLoad `json:"brokers"`
	// Disk, In and Out are the skews of the three loads over them.
	Disk LoadSkew `json:"disk"`
	In   LoadSkew `json:"bytes_in"`
	Out  LoadSkew `json:"bytes_out"`
	// WorstLoss is the single-broker loss whose survivors' bytes out are
	// the most skewed (Kafka's election on the audited layout, the lost
	// broker's leaders and replicas gone); nil when LossNote says why not.
	WorstLoss *ObservedLoss `json:"worst_loss,omitempty"`
	LossNote  string        `json:"loss_note,omitempty"`
}

// LoadSkew is one load's spread over the brokers.
type LoadSkew struct {
	Mean        float64 `json:"mean"`
	Max         float64 `json:"max"`
	MaxOverMean float64 `json:"max_over_mean"`
	// Busiest is the broker with the most.
	Busiest int32 `json:"busiest"`
}

// ObservedLoss is the survivors' load after losing one broker.
type ObservedLoss struct {
	Broker int32 `json:"broker"`
	// In and Out are the survivors' bytes in and out skews.
	In  LoadSkew `json:"bytes_in"`
	Out LoadSkew `json:"bytes_out"`
}

// Observed audits r's loads on c (the layout audited, which may be the one
// observed or another: a plan's, a layout with a broker down). Findings
// name each broker above the mean by more than tol in disk, bytes in or
// bytes out, and the worst loss when its busiest survivor is.
func Observed(c *topology.Cluster, r *observe.Result, tol float64) (*ObservedLoad, []Finding) {
	o := &ObservedLoad{WindowSeconds: r.WindowSeconds, Tolerance: tol, Brokers: observe.LoadsOn(c, r.Partitions)}
	o.Disk = skewOf(o.Brokers, func(b observe.BrokerLoad) float64 { return float64(b.Bytes) })
	o.In = skewOf(o.Brokers, func(b observe.BrokerLoad) float64 { return b.BytesIn })
	o.Out = skewOf(o.Brokers, func(b observe.BrokerLoad) float64 { return b.BytesOut })
	var fs []Finding
	for _, b := range o.Brokers {
		for _, d := range []struct {
			what string
			v    float64
			s    LoadSkew
			unit string
		}{
			{"disk", float64(b.Bytes), o.Disk, " B"},
			{"bytes in", b.BytesIn, o.In, " B/s"},
			{"bytes out", b.BytesOut, o.Out, " B/s"},
		} {
			if d.s.Mean > 0 && d.v > d.s.Mean*(1+tol) {
				fs = append(fs, Finding{Rule: "observed-load", Severity: Warning, Subject: fmt.Sprintf("broker-%d", b.Broker),
					Message: fmt.Sprintf("%s %.0f%s is %.2fx the mean %.0f%s (tolerance %.0f%%)", d.what, d.v, d.unit, d.v/d.s.Mean, d.s.Mean, d.unit, 100*tol)})
			}
		}
	}
	live := len(o.Brokers)
	switch {
	case !r.Traffic:
		o.LossNote = "no traffic in the window: no loss moves any load"
	case live < 2:
		o.LossNote = "fewer than two live brokers"
	case len(c.Partitions)*live > MaxObservedLossWork:
		o.LossNote = fmt.Sprintf("%d partitions times %d brokers is above %d: the losses by observed load were not computed", len(c.Partitions), live, MaxObservedLossWork)
	default:
		o.WorstLoss = worstObservedLoss(c, r.Partitions, o.Brokers)
		if w := o.WorstLoss; w.Out.Mean > 0 && w.Out.MaxOverMean > 1+tol {
			fs = append(fs, Finding{Rule: "observed-loss-load", Severity: Warning, Subject: fmt.Sprintf("broker-%d", w.Broker),
				Message: fmt.Sprintf("losing it leaves broker %d with %.2fx the survivors' mean bytes out (tolerance %.0f%%)", w.Out.Busiest, w.Out.MaxOverMean, 100*tol)})
		}
	}
	return o, fs
}

// AddObserved stores Observed(c, obs, tol) in the report with its
// findings.
func (r *Report) AddObserved(c *topology.Cluster, obs *observe.Result, tol float64) {
	o, fs := Observed(c, obs, tol)
	r.Observed = o
	r.Findings = append(r.Findings, fs...)
	sortFindings(r.Findings)
}

// worstObservedLoss tries every live broker's loss and keeps the one whose
// survivors' bytes out are the most skewed (the lowest id on a tie).
func worstObservedLoss(c *topology.Cluster, parts []observe.PartitionLoad, brokers []observe.BrokerLoad) *ObservedLoss {
	var worst *ObservedLoss
	for _, b := range brokers {
		lost := afterLoss(c, b.Broker)
		loads := observe.LoadsOn(lost, parts)
		l := &ObservedLoss{Broker: b.Broker,
			In:  skewOf(loads, func(x observe.BrokerLoad) float64 { return x.BytesIn }),
			Out: skewOf(loads, func(x observe.BrokerLoad) float64 { return x.BytesOut })}
		if worst == nil || l.Out.MaxOverMean > worst.Out.MaxOverMean {
			worst = l
		}
	}
	return worst
}

// afterLoss is c with broker b down: missing from the broker list, out of
// every replica set, each partition it led led by Kafka's choice
// (topology.ElectAfterLoss: the first live in-sync replica).
func afterLoss(c *topology.Cluster, b int32) *topology.Cluster {
	out := c.Clone()
	for i := range out.Brokers {
		if out.Brokers[i].ID == b {
			out.Brokers[i].Missing = true
		}
	}
	dead := func(r int32) bool { return r == b }
	for i := range out.Partitions {
		p := &out.Partitions[i]
		if !slices.Contains(p.Replicas, b) {
			continue
		}
		p.Leader = topology.ElectAfterLoss(p, dead)
		p.Replicas = slices.DeleteFunc(p.Replicas, dead)
	}
	return out
}

// skewOf is the spread of v over the live brokers of loads.
func skewOf(loads []observe.BrokerLoad, v func(observe.BrokerLoad) float64) LoadSkew {
	var s LoadSkew
	if len(loads) == 0 {
		return s
	}
	var sum float64
	for i, b := range loads {
		x := v(b)
		sum += x
		if i == 0 || x > s.Max {
			s.Max, s.Busiest = x, b.Broker
		}
	}
	s.Mean = sum / float64(len(loads))
	if s.Mean > 0 {
		s.MaxOverMean = s.Max / s.Mean
	}
	return s
}
