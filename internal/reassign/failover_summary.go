package reassign

import (
	"cmp"
	"fmt"
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
	// not within the cap of auto (autoMovesCap: a tenth of the plan's
	// moves, at least 32).
	MoreMoves *int `json:"more_moves,omitempty"`
	// Rates is "given" when Options.Rates weigh the Load figures, which
	// are then in the rates' unit: bytes/s when RatesBytesPerSecond,
	// relative weights otherwise (rates.go). Empty when a load plan's
	// produce + consume bytes/s weigh them, or nothing does.
	Rates               string `json:"rates,omitempty"`
	RatesBytesPerSecond bool   `json:"rates_bytes_per_second,omitempty"`
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
	// Reachable is, for the worst loss, the fewest leaders on the busiest
	// survivor that any order of these replica sets allows, exactly: a
	// lost broker's (or rack's) partitions can only go to the live
	// in-sync followers they hold, each survivor keeping its own leaders,
	// and the min-max of that assignment is computed by augmenting paths
	// (exactLoss). Above Optimum when the sets keep followers away: with
	// RF 3 over 3 racks a broker's followers all sit in the other two
	// racks, so the loss of one broker spreads over two thirds of the
	// survivors only. OverReachable is the largest excess of any loss's
	// busiest survivor over its own exact figure: what a better order of
	// the same sets could remove.
	Reachable     int `json:"reachable"`
	OverReachable int `json:"over_reachable"`
	// TopicExcess is the largest excess of one topic over its own optimum
	// (audit.TopicFailover) over every loss, and Topic that topic.
	TopicExcess int    `json:"topic_excess"`
	Topic       string `json:"topic,omitempty"`
	// TopicOverReachable is the largest excess of one topic's busiest
	// survivor over the fewest any order of the topic's sets allows (the
	// same min-max as Reachable, over the topic's partitions and
	// holders).
	TopicOverReachable int `json:"topic_over_reachable"`
	// Load is the worst loss weighted by load, when the plan has loads
	// (failover_weight.go) or rates (rates.go; Failover.Rates).
	Load *FailoverLoad `json:"load,omitempty"`
}

// figures are one layout's failover figures, computed in the background
// (figure is a pure read of the layout, so the result is the same whenever
// it runs): wait on wg before reading them.
type figures struct {
	wg           sync.WaitGroup
	broker, rack FailoverFigure
}

// startFigures starts computing layout c's failover figures: the broker
// domain's, and the rack domain's when racks are known. c must not change
// until they are read.
func (w *work) startFigures(c *topology.Cluster) *figures {
	f := &figures{}
	f.wg.Go(func() { f.broker = figure(c, audit.DomainBroker) })
	if w.rackAware && w.nrack >= 2 {
		f.wg.Go(func() { f.rack = figure(c, audit.DomainRack) })
	}
	return f
}

// failoverSummary fills the failover section from the figures of the
// layouts before (w.before, started here when nil) and after.
func (w *work) failoverSummary(s *Summary, final *topology.Cluster, after *figures) {
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
	fo.Broker = &FailoverChange{}
	fo.ExtraMoves = w.foExtra
	if w.foMore != 0 {
		m := w.foMore
		fo.MoreMoves = &m
	}
	before := w.before
	if before == nil {
		before = w.startFigures(w.c)
	}
	before.wg.Wait()
	after.wg.Wait()
	fo.Broker.Before, fo.Broker.After = before.broker, after.broker
	if w.rackAware && w.nrack >= 2 {
		fo.Rack = &FailoverChange{Before: before.rack, After: after.rack}
	}
	if w.ratedWeights() != nil {
		fo.Broker.Before.Load, fo.Broker.After.Load = loadFigure(w.c, w.fw, false), loadFigure(final, w.fw, false)
		if fo.Rack != nil {
			fo.Rack.Before.Load, fo.Rack.After.Load = loadFigure(w.c, w.fw, true), loadFigure(final, w.fw, true)
		}
	}
	if r := w.opts.Rates; r != nil {
		fo.Rates, fo.RatesBytesPerSecond = "given", r.BytesPerSecond
		w.rateNotes()
	}
	s.Failover = fo
	if note := w.rackBoundNote(final, &fo.Broker.After); note != "" {
		w.notes = append(w.notes, note)
	}
}

// rackBoundNote says why the worst single-broker loss a stays above its
// optimum when rack rules are the reason: every partition's replicas sit
// in distinct racks, so a lost broker's leaderships can only go to the
// brokers of the other racks, and their leaders plus the lost ones,
// averaged over them, exceed the optimum (no order and no follower move
// within the rack rules changes that). Empty otherwise.
func (w *work) rackBoundNote(final *topology.Cluster, a *FailoverFigure) string {
	if !w.rackAware || a.Excess <= 0 || len(a.Lost) != 1 || len(w.rcap) != len(w.c.Partitions) {
		return ""
	}
	for i := range w.c.Partitions {
		if w.rcap[i] != 1 {
			return ""
		}
	}
	rack := map[int32]string{}
	for _, b := range final.Brokers {
		rack[b.ID] = b.Rack
	}
	lost := a.Lost[0]
	lead := map[int32]int{}
	for _, p := range final.Partitions {
		lead[p.Leader]++
	}
	sum, k := lead[lost], 0
	for _, b := range final.Brokers {
		if b.Rack != rack[lost] {
			sum += lead[b.ID]
			k++
		}
	}
	if k == 0 {
		return ""
	}
	rb := ceilDiv(sum, k)
	if rb <= a.Optimum {
		return ""
	}
	return fmt.Sprintf("single-broker losses cannot reach the optimum ceil(partitions / survivors): rack rules put each partition's replicas in distinct racks, so broker %d's leaderships go only to the %d brokers outside rack %s, at least %d leaders on the busiest (optimum %d); the plan leaves %d, the exact best of its replica sets %d",
		lost, k, rack[lost], rb, a.Optimum, a.BusiestLeaders, a.Reachable)
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
// order), the exact figure of FailoverFigure.Reachable: the larger of the
// averaging bounds (ceil(partitions / survivors), the followers' average)
// and exactLoss (which is never below them).
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
	exact := exactLoss(c, ix, unit, nu, base)
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
		out[u] = max(b, exact[u])
	}
	return out
}

// exactLoss returns, per loss unit u, the exact least busiest survivor
// any order of c's replica sets allows once u is lost: a min-max
// assignment of u's partitions to the live in-sync followers they hold
// outside u, each survivor starting from its own leaders (base). It starts
// from Kafka's election on c and lowers the busiest survivor m (at L) by
// augmenting paths (breadth-first, each hop a partition handed from one of
// its followers to another) to a survivor at L-2 or less. With none, the
// survivors reachable from m hold partitions that can go nowhere else and
// average above L-1, so no assignment does better than L. Costs
// O(partitions × RF) per unit and round.
func exactLoss(c *topology.Cluster, ix *topology.Index, unit []int, nu int, base []int) []int {
	n := ix.Len()
	type part struct {
		cand []int32
		at   int32
	}
	groups := make([][]part, nu)
	reps := 0
	for i := range c.Partitions {
		reps += len(c.Partitions[i].Replicas)
	}
	flat := make([]int32, 0, reps)
	for i := range c.Partitions {
		p := &c.Partitions[i]
		lj, ok := ix.Pos(p.Leader)
		if p.Leader == topology.NoLeader || !ok || c.Brokers[lj].Missing || unit[lj] < 0 {
			continue
		}
		u := unit[lj]
		s := successor(p, ix, c, unit, u)
		if s < 0 {
			continue
		}
		// Candidates live in one flat buffer (sized to every replica, so
		// it never moves): one allocation instead of one per partition.
		a := len(flat)
		for _, r := range p.Replicas {
			if j, ok := ix.Pos(r); ok && !c.Brokers[j].Missing && unit[j] != u && p.InSync(r) && !slices.Contains(p.Offline, r) {
				flat = append(flat, int32(j))
			}
		}
		groups[u] = append(groups[u], part{flat[a:len(flat):len(flat)], int32(s)})
	}
	out := make([]int, nu)
	load := make([]int, n)
	var cand [][]int32
	var at, surv []int32
	sc := newMMScratch(n)
	for u := range nu {
		g := groups[u]
		for j := range n {
			load[j] = 0
			if unit[j] != u && !c.Brokers[j].Missing {
				load[j] = base[j]
			}
		}
		cand, at = cand[:0], at[:0]
		for _, p := range g {
			load[p.at]++
			cand = append(cand, p.cand)
			at = append(at, p.at)
		}
		surv = surv[:0]
		for j := range n {
			if unit[j] != u && !c.Brokers[j].Missing {
				surv = append(surv, int32(j))
			}
		}
		out[u] = minMaxAssign(sc, load, surv, cand, at)
	}
	return out
}

// mmScratch is minMaxAssign's scratch, sized to the brokers once and
// reused across calls.
type mmScratch struct {
	paths   *pathSearch
	byAt    [][]int32
	touched []int32
}

func newMMScratch(n int) *mmScratch {
	return &mmScratch{paths: newPathSearch(n), byAt: make([][]int32, n)}
}

// minMaxAssign lowers the busiest survivor of an assignment of unit
// items to brokers and returns its load once no assignment does better:
// load holds each broker's load with the items counted (it is changed),
// brokers lists the survivors, item k may go to the brokers cand[k] (all
// survivors) and is on at[k] (changed too). It first hands each item to
// its least loaded candidate, then lowers the busiest survivor m, at L, by
// augmenting paths (breadth-first over brokers, each hop an item handed
// from one of its brokers to another) to a survivor at L-2 or less. With
// none, the brokers reachable from m hold items that can go nowhere else
// and average above L-1, so no assignment does better than L.
func minMaxAssign(sc *mmScratch, load []int, brokers []int32, cand [][]int32, at []int32) int {
	if len(brokers) == 0 {
		return 0
	}
	for k, j := range at {
		best := j
		for _, y := range cand[k] {
			if load[y]+1 < load[best] {
				best = y
			}
		}
		if best != j {
			load[j]--
			load[best]++
			at[k] = best
		}
	}
	for _, j := range sc.touched {
		sc.byAt[j] = sc.byAt[j][:0]
	}
	sc.touched = sc.touched[:0]
	for k, j := range at {
		if len(sc.byAt[j]) == 0 {
			sc.touched = append(sc.touched, j)
		}
		sc.byAt[j] = append(sc.byAt[j], int32(k))
	}
	on := func(x int32) []int32 { return sc.byAt[x] }
	to := func(k, _ int32) []int32 { return cand[k] }
	for {
		m := brokers[0]
		for _, j := range brokers {
			if load[j] > load[m] {
				m = j
			}
		}
		end := sc.paths.search(m, on, to, nil, func(y int32) bool { return load[y] <= load[m]-2 })
		if end < 0 {
			return load[m]
		}
		load[m]--
		load[end]++
		sc.paths.walk(m, end, func(k, x, y int32) {
			at[k] = y
			sc.byAt[x] = slices.DeleteFunc(sc.byAt[x], func(v int32) bool { return v == k })
			if len(sc.byAt[y]) == 0 {
				sc.touched = append(sc.touched, y)
			}
			sc.byAt[y] = append(sc.byAt[y], k)
		})
	}
}

// topicWorst returns the largest excess of one topic over its optimum over
// every loss of domain d, as audit.TopicFailovers measures it, and the
// topic (first by name on ties); 0 and "" when none exceeds. Its third
// result is the largest excess over the topic's own exact figure (see
// FailoverFigure.TopicOverReachable): the averaging bound, refined by
// minMaxAssign where the busiest survivor is above it. It costs
// O(partitions × RF + topics × brokers touched) plus the paths.
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
	load := make([]int, n)
	var cand [][]int32
	var at, holders []int32
	sc := newMMScratch(n)
	over := 0
	worst, topic := 0, ""
	var touched []int // per topic, reused
	var leds []led
	for lo := 0; lo < len(c.Partitions); {
		hi := lo
		for hi < len(c.Partitions) && c.Partitions[hi].Topic == c.Partitions[lo].Topic {
			hi++
		}
		touched, leds = touched[:0], leds[:0]
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
				if most > bound {
					// The exact optimum of the group: the same min-max
					// as exactLoss over the topic's holders.
					for _, j := range touched {
						load[j] = 0
						if unit[j] != u {
							load[j] = base[j]
						}
					}
					cand, at = cand[:0], at[:0]
					for x := a; x < b; x++ {
						s := leds[x].s
						if s < 0 {
							continue
						}
						p := &c.Partitions[leds[x].i]
						var cs []int32
						for _, r := range p.Replicas {
							if j, ok := ix.Pos(r); ok && !c.Brokers[j].Missing && unit[j] != u && p.InSync(r) && !slices.Contains(p.Offline, r) {
								cs = append(cs, int32(j))
							}
						}
						load[s]++
						cand = append(cand, cs)
						at = append(at, int32(s))
					}
					holders = holders[:0]
					for _, j := range touched {
						if unit[j] != u {
							holders = append(holders, int32(j))
						}
					}
					bound = max(bound, minMaxAssign(sc, load, holders, cand, at))
					for _, j := range touched {
						load[j] = 0
					}
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
