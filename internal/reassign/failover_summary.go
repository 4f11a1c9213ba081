package reassign

import (
	"cmp"
	"slices"
	"sync"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Failover is the summary's failover section: per failure domain, the
// worst loss before and after the plan.
type Failover struct {
	// Domain is what the follower order spreads: broker, rack, both or
	// none.
	Domain string          `json:"domain"`
	Broker *FailoverChange `json:"broker,omitempty"`
	Rack   *FailoverChange `json:"rack,omitempty"`
	// ExtraMoves are the replica moves the follower placement added to
	// the plan's (Options.FailoverMoves; negative when swaps saved some).
	ExtraMoves int `json:"extra_moves,omitempty"`
	// MoreMoves, when set, is how many more moves would bring every
	// single-broker loss to its optimum (--failover-moves auto); -1 when
	// not within the cap of auto (a tenth of the plan's moves, at least 16).
	MoreMoves *int `json:"more_moves,omitempty"`
}

// FailoverChange is one domain's worst loss before and after.
type FailoverChange struct {
	Before FailoverFigure `json:"before"`
	After  FailoverFigure `json:"after"`
}

// FailoverFigure is the worst loss of one domain in one layout (see
// audit.LossFigure: the busiest survivor after Kafka's election against
// ceil(online partitions / survivors)).
type FailoverFigure struct {
	Lost           []int32 `json:"lost"`
	Rack           string  `json:"rack,omitempty"`
	Busiest        int32   `json:"busiest"`
	BusiestLeaders int     `json:"busiest_leaders"`
	Optimum        int     `json:"optimum"`
	Excess         int     `json:"excess"`
	// Reachable is a lower bound, for the worst loss, on the busiest
	// survivor's leaders that any order of these replica sets allows: a
	// lost broker's (or rack's) partitions can only go to the brokers
	// holding their followers, so those brokers end with at least their
	// leaders plus the lost ones, on average. Above Optimum when rack
	// rules keep followers out of the leader's rack. OverReachable is the
	// largest excess of any loss's busiest survivor over its own bound
	// (the larger of its optimum and this bound): what a better order of
	// the same sets could at most remove.
	Reachable     int `json:"reachable"`
	OverReachable int `json:"over_reachable"`
	// TopicExcess is the largest excess of one topic over its own optimum
	// (audit.TopicFailover) over every loss, and Topic that topic.
	TopicExcess int    `json:"topic_excess"`
	Topic       string `json:"topic,omitempty"`
	// TopicOverReachable is the largest excess of one topic's busiest
	// survivor over the larger of its optimum and its follower bound.
	TopicOverReachable int `json:"topic_over_reachable"`
}

// failoverSummary fills the failover section from the layouts before and
// after.
func (w *work) failoverSummary(s *Summary, final *topology.Cluster) {
	broker, rack, _ := w.failoverDomains()
	fo := &Failover{Domain: FailoverBroker}
	switch {
	case !broker && !rack:
		fo.Domain = FailoverNone
	case broker && rack:
		fo.Domain = FailoverBoth
	case rack:
		fo.Domain = FailoverRack
	}
	// Both domains are measured whenever they exist, whatever the order
	// spread.
	// The figures are independent reads of the two layouts: computed
	// side by side, the results are the same in any order.
	fo.Broker = &FailoverChange{}
	fo.ExtraMoves = w.foExtra
	if w.foMore != 0 {
		m := w.foMore
		fo.MoreMoves = &m
	}
	type job struct {
		c   *topology.Cluster
		d   audit.Domain
		out *FailoverFigure
	}
	jobs := []job{{w.c, audit.DomainBroker, &fo.Broker.Before}, {final, audit.DomainBroker, &fo.Broker.After}}
	if w.rackAware && w.nrack >= 2 {
		fo.Rack = &FailoverChange{}
		jobs = append(jobs, job{w.c, audit.DomainRack, &fo.Rack.Before}, job{final, audit.DomainRack, &fo.Rack.After})
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { *j.out = figure(j.c, j.d) })
	}
	wg.Wait()
	s.Failover = fo
}

// figure measures the worst loss of domain d in c.
func figure(c *topology.Cluster, d audit.Domain) FailoverFigure {
	var f FailoverFigure
	f.Lost = []int32{}
	losses := audit.FailoverLosses(c, d)
	bounds := reachable(c, d)
	worst := -1
	for u, l := range losses {
		if worst < 0 || l.Excess > losses[worst].Excess || l.Excess == losses[worst].Excess && l.BusiestLeaders > losses[worst].BusiestLeaders {
			worst = u
		}
		if u < len(bounds) {
			f.OverReachable = max(f.OverReachable, l.BusiestLeaders-max(l.Optimum, bounds[u]))
		}
	}
	if worst >= 0 {
		l := losses[worst]
		f.Lost, f.Rack, f.Busiest, f.BusiestLeaders, f.Optimum, f.Excess = l.Lost, l.Rack, l.Busiest, l.BusiestLeaders, l.Optimum, l.Excess
		if worst < len(bounds) {
			f.Reachable = max(l.Optimum, bounds[worst])
		}
	}
	f.TopicExcess, f.Topic, f.TopicOverReachable = topicWorst(c, d)
	return f
}

// lossUnits numbers the loss units of domain d over c's brokers: unit[j]
// is broker position j's unit (-1: none, or down) and units the count.
func lossUnits(c *topology.Cluster, d audit.Domain) ([]int, int) {
	unit := make([]int, len(c.Brokers))
	if d == audit.DomainRack {
		var names []string
		for _, b := range c.Brokers {
			if !b.Missing && b.Rack != "" && !slices.Contains(names, b.Rack) {
				names = append(names, b.Rack)
			}
		}
		slices.Sort(names)
		for j, b := range c.Brokers {
			unit[j] = -1
			if !b.Missing && b.Rack != "" {
				unit[j], _ = slices.BinarySearch(names, b.Rack)
			}
		}
		return unit, len(names)
	}
	k := 0
	for j, b := range c.Brokers {
		unit[j] = -1
		if !b.Missing {
			unit[j] = k
			k++
		}
	}
	return unit, k
}

// successor returns partition p's new leader's position once unit u (its
// leader's) is lost, as audit's election does, or -1.
func successor(p *topology.Partition, ix *topology.Index, c *topology.Cluster, unit []int, u int) int {
	for _, r := range p.Replicas {
		j, ok := ix.Pos(r)
		if !ok || c.Brokers[j].Missing || unit[j] == u || !p.InSync(r) || slices.Contains(p.Offline, r) {
			continue
		}
		return j
	}
	return -1
}

// reachable returns, per loss of domain d in c (audit.FailoverLosses'
// order), the follower bound of FailoverFigure.Reachable.
func reachable(c *topology.Cluster, d audit.Domain) []int {
	ix := topology.NewIndex(c.Brokers)
	unit, nu := lossUnits(c, d)
	n := ix.Len()
	base := make([]int, n)
	movable := make([]int, nu)
	offline := make([]int, nu)
	online := 0
	follower := make([]bool, nu*n)
	for i := range c.Partitions {
		p := &c.Partitions[i]
		lj, ok := ix.Pos(p.Leader)
		if p.Leader == topology.NoLeader || !ok || c.Brokers[lj].Missing {
			continue
		}
		base[lj]++
		online++
		u := unit[lj]
		if u < 0 {
			continue
		}
		has := false
		for _, r := range p.Replicas {
			if j, ok := ix.Pos(r); ok && !c.Brokers[j].Missing && unit[j] != u && p.InSync(r) && !slices.Contains(p.Offline, r) {
				follower[u*n+j] = true
				has = true
			}
		}
		if has {
			movable[u]++
		} else {
			offline[u]++
		}
	}
	live := 0
	for _, b := range c.Brokers {
		if !b.Missing {
			live++
		}
	}
	out := make([]int, nu)
	for u := range nu {
		in, k, sum := 0, 0, 0
		for j := range n {
			if unit[j] == u {
				in++
			}
			if follower[u*n+j] {
				k++
				sum += base[j]
			}
		}
		surv := live - in
		if surv <= 0 {
			continue
		}
		b := ceilDiv(online-offline[u], surv)
		if k > 0 {
			b = max(b, ceilDiv(sum+movable[u], k))
		}
		out[u] = b
	}
	return out
}

// topicWorst returns the largest excess of one topic over its optimum over
// every loss of domain d, as audit.TopicFailovers measures it, and the
// topic (first by name on ties); 0 and "" when none exceeds. Its third
// result is the largest excess over the topic's own follower bound (see
// FailoverFigure.Reachable). It costs
// O(partitions × RF + topics × brokers touched).
func topicWorst(c *topology.Cluster, d audit.Domain) (int, string, int) {
	ix := topology.NewIndex(c.Brokers)
	unit, nu := lossUnits(c, d)
	n := ix.Len()
	base := make([]int, n)
	gain := make([]int, n)
	holds := make([]bool, n)
	inUnit := make([]int, nu)
	unitMax := make([]int, nu)
	type led struct{ u, i, s int }
	mark := make([]bool, n)
	var marked []int
	over := 0
	worst, topic := 0, ""
	for lo := 0; lo < len(c.Partitions); {
		hi := lo
		for hi < len(c.Partitions) && c.Partitions[hi].Topic == c.Partitions[lo].Topic {
			hi++
		}
		var touched []int
		var leds []led
		online := 0
		for i := lo; i < hi; i++ {
			p := &c.Partitions[i]
			for _, r := range p.Replicas {
				if j, ok := ix.Pos(r); ok && !c.Brokers[j].Missing && !holds[j] {
					holds[j] = true
					touched = append(touched, j)
				}
			}
			lj, ok := ix.Pos(p.Leader)
			if p.Leader == topology.NoLeader || !ok || c.Brokers[lj].Missing {
				continue
			}
			base[lj]++
			online++
			if u := unit[lj]; u >= 0 {
				leds = append(leds, led{u, i, successor(p, ix, c, unit, u)})
			}
		}
		// The largest base outside each unit: the top two units by their
		// largest base, and the largest among brokers of no unit.
		noUnit := 0
		for _, j := range touched {
			if u := unit[j]; u >= 0 {
				inUnit[u]++
				unitMax[u] = max(unitMax[u], base[j])
			} else {
				noUnit = max(noUnit, base[j])
			}
		}
		top1, top2 := -1, -1
		for _, j := range touched {
			u := unit[j]
			if u < 0 || u == top1 || u == top2 {
				continue
			}
			switch {
			case top1 < 0 || unitMax[u] > unitMax[top1]:
				top1, top2 = u, top1
			case top2 < 0 || unitMax[u] > unitMax[top2]:
				top2 = u
			}
		}
		slices.SortFunc(leds, func(a, b led) int { return cmp.Compare(a.u, b.u) })
		for a := 0; a < len(leds); {
			b := a
			u := leds[a].u
			off := 0
			most := noUnit
			for ; b < len(leds) && leds[b].u == u; b++ {
				if s := leds[b].s; s >= 0 {
					gain[s]++
				} else {
					off++
				}
			}
			for k := a; k < b; k++ {
				if s := leds[k].s; s >= 0 {
					most = max(most, base[s]+gain[s])
				}
			}
			for k := a; k < b; k++ {
				if s := leds[k].s; s >= 0 {
					gain[s] = 0
				}
			}
			// The survivors' own leaders, before any gain: no order
			// lowers them.
			still := noUnit
			switch {
			case top1 >= 0 && top1 != u:
				still = max(still, unitMax[top1])
			case top2 >= 0:
				still = max(still, unitMax[top2])
			}
			most = max(most, still)
			if surv := len(touched) - inUnit[u]; surv > 0 {
				name := c.Partitions[lo].Topic
				opt := ceilDiv(online-off, surv)
				if e := most - opt; e > worst || e == worst && e > 0 && name < topic {
					worst, topic = e, name
				}
				// The follower bound: the group's partitions can only go
				// to brokers holding their followers outside the unit.
				k, sum, moving := 0, 0, 0
				for x := a; x < b; x++ {
					p := &c.Partitions[leds[x].i]
					if leds[x].s < 0 {
						continue
					}
					moving++
					for _, r := range p.Replicas {
						if j, ok := ix.Pos(r); ok && !c.Brokers[j].Missing && unit[j] != u && !mark[j] && p.InSync(r) && !slices.Contains(p.Offline, r) {
							mark[j] = true
							marked = append(marked, j)
							k++
							sum += base[j]
						}
					}
				}
				bound := max(opt, still)
				if k > 0 {
					bound = max(bound, ceilDiv(sum+moving, k))
				}
				over = max(over, most-bound)
				for _, j := range marked {
					mark[j] = false
				}
				marked = marked[:0]
			}
			a = b
		}
		for _, j := range touched {
			base[j], holds[j] = 0, false
			if u := unit[j]; u >= 0 {
				inUnit[u], unitMax[u] = 0, 0
			}
		}
		lo = hi
	}
	return worst, topic, over
}
