package audit

import (
	"cmp"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Domain is what fails together in a failover figure: one broker, or every
// broker of one rack.
type Domain string

// The failure domains.
const (
	DomainBroker Domain = "broker"
	DomainRack   Domain = "rack"
)

// LossFigure is the leader count after one loss (a broker, or a rack's
// brokers) once Kafka has elected new leaders by its clean rule: the
// busiest survivor's leaders against the best any replica order of the same
// replica sets could do, ceil(online partitions / survivors).
type LossFigure struct {
	Domain Domain `json:"domain"`
	// Lost are the brokers lost, sorted; Rack names the rack for a rack loss.
	Lost []int32 `json:"lost"`
	Rack string  `json:"rack,omitempty"`
	// Survivors counts the live brokers left.
	Survivors int `json:"survivors"`
	// Online counts the partitions with a leader after the loss; Offline
	// those the loss leaves without one (no live in-sync replica).
	Online  int `json:"online_partitions"`
	Offline int `json:"offline_partitions"`
	// Moved counts the leaderships the loss hands to survivors.
	Moved int `json:"moved_leaders"`
	// Busiest is the survivor leading the most partitions after the loss
	// (lowest id on ties), and BusiestLeaders how many it leads.
	Busiest        int32 `json:"busiest"`
	BusiestLeaders int   `json:"busiest_leaders"`
	// Optimum is ceil(Online / Survivors); Excess is BusiestLeaders - Optimum.
	Optimum int `json:"optimum"`
	Excess  int `json:"excess"`
}

// TopicFailover is one topic's worst loss: the loss (of the domain
// evaluated) that leaves the topic's busiest survivor furthest above its
// optimum, ceil(the topic's online partitions / the surviving brokers
// holding a replica of it).
type TopicFailover struct {
	Topic          string  `json:"topic"`
	Lost           []int32 `json:"lost"`
	Rack           string  `json:"rack,omitempty"`
	Busiest        int32   `json:"busiest"`
	BusiestLeaders int     `json:"busiest_leaders"`
	Optimum        int     `json:"optimum"`
	Excess         int     `json:"excess"`
}

// FailoverLosses returns the figure of every loss of the domain in c: one
// per live broker (DomainBroker), or one per rack with at least one live
// broker (DomainRack; brokers without a rack belong to none). Losses are
// in broker id or rack name order. Brokers already down (Missing) are
// neither lost nor survivors; partitions already offline count nowhere.
// It costs O(partitions x RF + losses x brokers).
func FailoverLosses(c *topology.Cluster, d Domain) []LossFigure {
	f := newFailover(c, d)
	out := make([]LossFigure, len(f.units))
	for u := range f.units {
		out[u] = f.figure(u)
	}
	return out
}

// WorstLoss returns the loss of losses with the largest excess (then the
// busiest survivor with the most leaders, then the first in order), or nil
// when losses is empty.
func WorstLoss(losses []LossFigure) *LossFigure {
	var w *LossFigure
	for i := range losses {
		l := &losses[i]
		if w == nil || l.Excess > w.Excess || (l.Excess == w.Excess && l.BusiestLeaders > w.BusiestLeaders) {
			w = l
		}
	}
	if w == nil {
		return nil
	}
	out := *w
	return &out
}

// TopicFailovers returns, for every topic with an excess above zero under
// some loss of the domain, its worst loss; sorted by excess, then topic.
func TopicFailovers(c *topology.Cluster, d Domain) []TopicFailover {
	return newFailover(c, d).topics()
}

// failover holds the dense arrays of one domain's evaluation.
type failover struct {
	c  *topology.Cluster
	ix *topology.Index
	d  Domain
	// down marks brokers already down (Missing).
	down []bool
	// units are the loss units (broker positions per unit); unitOf maps a
	// broker position to its unit, or -1.
	units  [][]int
	names  []string
	unitOf []int
	// base is each broker's leader count before the loss (online partitions).
	base   []int
	online int
	// lead[u] lists the partitions led by unit u's brokers; succ[i] is
	// partition i's successor's broker position once its leader's unit is
	// lost, or -1 (offline).
	lead [][]int32
	succ []int32
	// lpos is each partition's leader position, or -1.
	lpos []int32
}

func newFailover(c *topology.Cluster, d Domain) *failover {
	ix := topology.NewIndex(c.Brokers)
	n := ix.Len()
	f := &failover{c: c, ix: ix, d: d, down: make([]bool, n), unitOf: make([]int, n), base: make([]int, n)}
	for j, b := range c.Brokers {
		f.down[j] = b.Missing
		f.unitOf[j] = -1
	}
	switch d {
	case DomainRack:
		byRack := map[string]int{}
		for j, b := range c.Brokers {
			if b.Missing || b.Rack == "" {
				continue
			}
			u, ok := byRack[b.Rack]
			if !ok {
				u = len(f.units)
				byRack[b.Rack] = u
				f.units = append(f.units, nil)
				f.names = append(f.names, b.Rack)
			}
			f.units[u] = append(f.units[u], j)
			f.unitOf[j] = u
		}
		// Rack name order.
		order := make([]int, len(f.units))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.names[a], f.names[b]) })
		units, names := make([][]int, len(order)), make([]string, len(order))
		for k, u := range order {
			units[k], names[k] = f.units[u], f.names[u]
			for _, j := range f.units[u] {
				f.unitOf[j] = k
			}
		}
		f.units, f.names = units, names
	default:
		for j, b := range c.Brokers {
			if b.Missing {
				continue
			}
			f.unitOf[j] = len(f.units)
			f.units = append(f.units, []int{j})
			f.names = append(f.names, "")
		}
	}
	f.lead = make([][]int32, len(f.units))
	f.succ = make([]int32, len(c.Partitions))
	f.lpos = make([]int32, len(c.Partitions))
	for i := range c.Partitions {
		p := &c.Partitions[i]
		f.succ[i], f.lpos[i] = -1, -1
		lj, ok := ix.Pos(p.Leader)
		if p.Leader == topology.NoLeader || !ok || f.down[lj] {
			continue
		}
		f.lpos[i] = int32(lj)
		f.base[lj]++
		f.online++
		u := f.unitOf[lj]
		if u < 0 {
			continue
		}
		f.lead[u] = append(f.lead[u], int32(i))
		for _, r := range p.Replicas {
			j, ok := ix.Pos(r)
			if !ok || f.down[j] || f.unitOf[j] == u || !p.InSync(r) || slices.Contains(p.Offline, r) {
				continue
			}
			f.succ[i] = int32(j)
			break
		}
	}
	return f
}

// figure evaluates the loss of unit u.
func (f *failover) figure(u int) LossFigure {
	n := f.ix.Len()
	lostSet := make(map[int]bool, len(f.units[u]))
	lf := LossFigure{Domain: f.d, Rack: f.names[u]}
	for _, j := range f.units[u] {
		lostSet[j] = true
		lf.Lost = append(lf.Lost, f.ix.ID(j))
	}
	slices.Sort(lf.Lost)
	gain := map[int]int{}
	for _, i := range f.lead[u] {
		if s := f.succ[i]; s >= 0 {
			gain[int(s)]++
			lf.Moved++
		} else {
			lf.Offline++
		}
	}
	lf.Online = f.online - lf.Offline
	lf.Busiest, lf.BusiestLeaders = topology.NoLeader, -1
	for j := range n {
		if f.down[j] || lostSet[j] {
			continue
		}
		lf.Survivors++
		if v := f.base[j] + gain[j]; v > lf.BusiestLeaders {
			lf.Busiest, lf.BusiestLeaders = f.ix.ID(j), v
		}
	}
	if lf.Survivors == 0 {
		lf.BusiestLeaders = 0
		return lf
	}
	lf.Optimum = ceilDiv(lf.Online, lf.Survivors)
	lf.Excess = lf.BusiestLeaders - lf.Optimum
	return lf
}

// topics evaluates every topic under every loss that takes one of its
// leaders.
func (f *failover) topics() []TopicFailover {
	n := f.ix.Len()
	base := make([]int, n)
	holds := make([]bool, n)
	gain := make([]int, n)
	var out []TopicFailover
	for _, t := range f.c.Topics() {
		off := f.c.Find(t.Partitions[0].Key())
		var touched []int
		online := 0
		units := map[int][]int{}
		for k := range t.Partitions {
			i := off + k
			for _, r := range t.Partitions[k].Replicas {
				if j, ok := f.ix.Pos(r); ok && !f.down[j] && !holds[j] {
					holds[j] = true
					touched = append(touched, j)
				}
			}
			lj := f.lpos[i]
			if lj < 0 {
				continue
			}
			base[lj]++
			online++
			if u := f.unitOf[lj]; u >= 0 {
				units[u] = append(units[u], i)
			}
		}
		var worst *TopicFailover
		us := make([]int, 0, len(units))
		for u := range units {
			us = append(us, u)
		}
		slices.Sort(us)
		for _, u := range us {
			lost := map[int]bool{}
			for _, j := range f.units[u] {
				lost[j] = true
			}
			off := 0
			for _, i := range units[u] {
				if s := f.succ[i]; s >= 0 {
					gain[s]++
				} else {
					off++
				}
			}
			surv, busiest, most := 0, int32(topology.NoLeader), -1
			for _, j := range touched {
				if lost[j] {
					continue
				}
				surv++
				if v := base[j] + gain[j]; v > most || (v == most && f.ix.ID(j) < busiest) {
					busiest, most = f.ix.ID(j), v
				}
			}
			for _, i := range units[u] {
				if s := f.succ[i]; s >= 0 {
					gain[s] = 0
				}
			}
			if surv == 0 {
				continue
			}
			opt := ceilDiv(online-off, surv)
			if e := most - opt; e > 0 && (worst == nil || e > worst.Excess) {
				tf := TopicFailover{Topic: t.Name, Rack: f.names[u], Busiest: busiest, BusiestLeaders: most, Optimum: opt, Excess: e}
				for _, j := range f.units[u] {
					tf.Lost = append(tf.Lost, f.ix.ID(j))
				}
				slices.Sort(tf.Lost)
				worst = &tf
			}
		}
		if worst != nil {
			out = append(out, *worst)
		}
		for _, j := range touched {
			base[j], holds[j] = 0, false
		}
	}
	slices.SortFunc(out, func(a, b TopicFailover) int {
		if c := cmp.Compare(b.Excess, a.Excess); c != 0 {
			return c
		}
		return cmp.Compare(a.Topic, b.Topic)
	})
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
