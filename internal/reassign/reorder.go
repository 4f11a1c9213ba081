package reassign

import (
	"slices"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// keepReplicas is phase 1 under Options.ReorderOnly: every partition keeps
// its current replica set on its current brokers, so the plan copies no
// data; only the leader and follower phases run on the sets.
func (w *work) keepReplicas() {
	w.prepare()
	n := w.n()
	clear(w.cnt)
	clear(w.tc)
	for i := range w.c.Partitions {
		t := int(w.ptopic[i])
		s := w.off[i]
		for _, r := range w.c.Partitions[i].Replicas {
			b := w.pos[r]
			w.slots[s] = b
			s++
			w.cnt[b]++
			w.tc[t*n+int(b)]++
		}
	}
	// No move is needed or made: the bound of a balancing plan does not
	// apply.
	w.lower = 0
	w.notes = append(w.notes, "reorder only: every replica set stays where it is; Kafka applies the new orders as metadata (no data is copied, no throttle is needed) and a preferred election moves the leaders")
}

// checkReorderOnly refuses options that change replica sets.
func checkReorderOnly(o Options) error {
	if !o.ReorderOnly {
		return nil
	}
	switch {
	case len(o.Brokers) > 0:
		return targetErr("reorder-only", "keeps every replica set, so it cannot change the brokers")
	case o.ReplicationFactor > 0:
		return targetErr("reorder-only", "keeps every replica set, so it cannot change the replication factor")
	case o.FixOverlaps:
		return targetErr("reorder-only", "keeps every replica set, so it cannot fix overlaps (which moves replicas into cells)")
	}
	return nil
}

// keepLeaders is phase 2 for the fallback of a reorder-only plan: every
// partition keeps its current leader (its first replica when it has none).
func (w *work) keepLeaders() {
	n := w.n()
	for i := range w.c.Partitions {
		p := &w.c.Partitions[i]
		b := w.first[i]
		if p.Leader != topology.NoLeader && slices.Contains(p.Replicas, p.Leader) {
			b = w.pos[p.Leader]
		}
		w.lead[i] = b
		w.lc[int(w.ptopic[i])*n+int(b)]++
	}
}

// reorderOnly plans under Options.ReorderOnly. The balanced leaders can
// leave a loss worse than the current order does, since they move
// leaderships onto brokers whose followers were not ordered for them; then
// the plan keeps the current leaders and reorders only followers, which
// the failover phase never makes worse than the current order.
func reorderOnly(c *topology.Cluster, opts Options) (*Plan, error) {
	w, err := newWork(c, opts)
	if err != nil {
		return nil, err
	}
	if _, _, err := w.failoverDomains(); err != nil {
		return nil, err
	}
	w.keepReplicas()
	w.assignLeaders()
	w.orderFollowers()
	pl := w.plan()
	if !worseLoss(c, pl.Final, w.rackAware && w.nrack >= 2) {
		return pl, nil
	}
	w, err = newWork(c, opts)
	if err != nil {
		return nil, err
	}
	w.keepReplicas()
	w.keepLeaders()
	w.orderFollowers()
	w.notes = append(w.notes, "leaders stay where they are: balancing them would leave a broker or rack loss worse than the current order does")
	return w.plan(), nil
}

// worseLoss reports whether after's worst loss, of brokers or of racks,
// leaves its busiest survivor further above the optimum than before's.
func worseLoss(before, after *topology.Cluster, racks bool) bool {
	domains := []audit.Domain{audit.DomainBroker}
	if racks {
		domains = append(domains, audit.DomainRack)
	}
	for _, d := range domains {
		b := audit.WorstLoss(audit.FailoverLosses(before, d))
		a := audit.WorstLoss(audit.FailoverLosses(after, d))
		if a != nil && b != nil && a.Excess > b.Excess {
			return true
		}
	}
	return false
}
