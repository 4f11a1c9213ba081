package reassign

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// The failover order weighted by the producers' rates (Options.Rates, the
// rates `kplan audit --rates` reads). A plan without observed loads can
// still say which topics are hot: each partition then weighs its topic's
// rate spread evenly over the topic's partitions, as audit's round-robin
// prediction spreads it (franz-go's default for keyless records, and what
// the uniform sticky partitioner equals in expectation), and the weighted
// pass of failover_weight.go runs with these weights exactly as it does
// with a load plan's. The summary's by-load figures (FailoverLoad) are
// then in the rates' unit, so that `kplan audit --rates` on the plan's
// layout predicts the same busiest survivor after the same loss.
//
// The weights are set when the failover phase first reads them
// (ratedWeights): the count, bytes and reorder-only plans all reach it,
// and without rates nothing is computed and nothing changes.

// checkRates validates Options.Rates: not with a load plan, whose loads
// weigh its order already, and no topic the layout lacks.
func checkRates(c *topology.Cluster, o Options) error {
	if o.Rates == nil {
		return nil
	}
	if o.Balance == BalanceLoad {
		return targetErr("rates", "cannot go with --balance load, whose loads weigh the failover order already")
	}
	topics := map[string]bool{}
	for i := range c.Partitions {
		topics[c.Partitions[i].Topic] = true
	}
	for _, t := range slices.Sorted(maps.Keys(o.Rates.ByTopic)) {
		if !topics[t] {
			return targetErr("rates", "no topic %q in this layout", t)
		}
	}
	return nil
}

// rateWeights is each partition's failover weight under rates (c's
// partitions sorted by topic): its topic's rate over the topic's
// partitions. Every partition of a plan has a leader, so this is audit's
// round-robin share of each (which spreads a topic's rate over its
// partitions with a leader).
func rateWeights(c *topology.Cluster, rates *audit.Rates) []float64 {
	fw := make([]float64, len(c.Partitions))
	for lo := 0; lo < len(c.Partitions); {
		hi := lo
		for hi < len(c.Partitions) && c.Partitions[hi].Topic == c.Partitions[lo].Topic {
			hi++
		}
		share := rates.Of(c.Partitions[lo].Topic) / float64(hi-lo)
		for i := lo; i < hi; i++ {
			fw[i] = share
		}
		lo = hi
	}
	return fw
}

// ratedWeights returns w.fw, set from Options.Rates the first time it is
// read when the plan has rates and no loads; nil when it has neither.
func (w *work) ratedWeights() []float64 {
	if w.fw == nil && w.opts.Rates != nil {
		w.fw = rateWeights(w.c, w.opts.Rates)
	}
	return w.fw
}

// rateNote is the failover note of a plan weighted by rates, which the
// order phase writes in place of the counted one.
func rateNote(broker, rack bool, r *audit.Rates) string {
	if !broker {
		return "followers ordered to spread the leaderships of every rack loss, counted in partitions (--rates weighs single-broker losses, which --failover-domain rack leaves out: the by-rates figures only measure the plan)"
	}
	d := "single-broker"
	if rack {
		d = "single-broker and rack"
	}
	unit := "relative weights"
	if r.BytesPerSecond {
		unit = "bytes/s"
	}
	return fmt.Sprintf("followers ordered to spread the leaderships of every %s loss, counted in partitions, then single-broker losses weighted by --rates (%s; each topic's rate spread evenly over its partitions, as audit's round-robin prediction spreads it)", d, unit)
}

// rateNotes keeps one rateNote in a plan with rates (the order phase
// writes it each time it runs: once more when the follower placement runs
// it again), or says that no order was chosen when the phase wrote none.
func (w *work) rateNotes() {
	if w.opts.Rates == nil {
		return
	}
	broker, rack, _ := w.failoverDomains()
	note := rateNote(broker, rack, w.opts.Rates)
	out := w.notes[:0]
	seen := false
	for _, s := range w.notes {
		if s == note {
			if seen {
				continue
			}
			seen = true
		}
		out = append(out, s)
	}
	if !seen {
		out = append(out, "--rates changed no follower order: no partition has two followers or more to choose a successor from, or no failure domain is spread (--failover-domain); the by-rates figures only measure the plan")
	}
	w.notes = out
}
