package reassign

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Schema versions the summary's JSON.
const Schema = "kplan.reassign/v1"

// Summary measures a plan; its JSON is `kplan reassign -o json`.
type Summary struct {
	Schema         string  `json:"schema"`
	TargetBrokers  []int32 `json:"target_brokers"`
	DrainedBrokers []int32 `json:"drained_brokers"`
	// CordonedBrokers are the target brokers that took no new replica
	// (Options.Cordon: --cordon, or a live cluster's cordoned.log.dirs).
	CordonedBrokers []int32 `json:"cordoned_brokers,omitempty"`
	AddedBrokers    []int32 `json:"added_brokers"`
	Partitions      int     `json:"partitions"`
	// ChangedPartitions are the partitions in the plan file.
	ChangedPartitions int `json:"changed_partitions"`
	// ReplicasMoved counts replicas placed on brokers that did not hold
	// their partition: the data the plan copies.
	ReplicasMoved int `json:"replicas_moved"`
	// LeaderOnlyChanges counts partitions whose leader changes while their
	// replica set does not: reordering and a preferred election, no data.
	LeaderOnlyChanges int `json:"leader_only_changes"`
	// LeaderChanges counts every partition whose leader changes.
	LeaderChanges int `json:"leader_changes"`
	// PreferredElections is the size of the election list.
	PreferredElections int `json:"preferred_elections"`
	// BytesMoved is the data copied, when every moved partition's size is
	// known (live input reads DescribeLogDirs): each new replica copies
	// its partition's CopyBytes (the local bytes of a tiered topic).
	BytesMoved *int64 `json:"bytes_moved,omitempty"`
	// LowerBound is the least number of replica moves any plan that
	// balances replica counts needs: replicas on drained brokers (and
	// replicas a larger replication factor adds) plus, with per-broker
	// targets floor/ceil of the mean given greedily to the most loaded
	// brokers, the sum of each broker's excess over its target.
	LowerBound int `json:"lower_bound"`
	// Gap is ReplicasMoved - LowerBound; MovesOverBound their ratio
	// (absent when the bound is 0).
	Gap            int      `json:"gap"`
	MovesOverBound *float64 `json:"moves_over_bound,omitempty"`
	// CountBalanceBound is, with --fix-overlaps, the lower bound of the
	// same target without it: count balance over all target brokers. With
	// cells, LowerBound is the bound per cell, which counts replicas outside
	// their topic's cell as holes; this one does not.
	// MovesOverCountBalanceBound is ReplicasMoved over it.
	CountBalanceBound          *int     `json:"count_balance_bound,omitempty"`
	MovesOverCountBalanceBound *float64 `json:"moves_over_count_balance_bound,omitempty"`
	// RackBound is set when racks keep the per-broker targets the lower
	// bound counts against from being within one of the mean.
	RackBound *RackBound `json:"rack_bound,omitempty"`
	// Cells lists the cells of a --fix-overlaps --cell-size plan.
	Cells  []Cell  `json:"cells,omitempty"`
	Before Balance `json:"before"`
	After  Balance `json:"after"`
	// PerBroker lists every current or target broker.
	PerBroker []BrokerLoad `json:"per_broker"`
	// UnevenTopics lists (up to MaxListed) topics whose leaders are not
	// within one of their mean after the plan, worst first.
	UnevenTopics []TopicSpread `json:"uneven_topics"`
	// RemainingOverlaps lists (up to MaxListed) overlapping max-group pairs
	// after the plan and why each remains.
	RemainingOverlaps []RemainingOverlap `json:"remaining_overlaps"`
	// Tolerance is Options.Tolerance when its band was wider than
	// floor/ceil of some mean, else 0.
	Tolerance float64 `json:"tolerance,omitempty"`
	// MovesLeft and PartitionsLeft are what Options.MaxMoves left out.
	MovesLeft      int `json:"moves_left,omitempty"`
	PartitionsLeft int `json:"partitions_left,omitempty"`
	// Waves is filled by SplitWaves.
	Waves []Wave `json:"waves,omitempty"`
	// Failover is the worst loss per failure domain before and after.
	Failover *Failover `json:"failover,omitempty"`
	// Bytes is the disk balance of a --balance bytes plan.
	Bytes *BytesBalance `json:"bytes,omitempty"`
	// Load is the network balance of a --balance load plan.
	Load *LoadBalance `json:"load,omitempty"`
	// Dirs is the log-dir balance of a JBOD cluster (Options.Dirs).
	Dirs  *DirsBalance `json:"log_dirs,omitempty"`
	Notes []string     `json:"notes"`
}

// MaxListed bounds the topics and overlaps a summary lists.
const MaxListed = 100

// Balance describes one layout.
type Balance struct {
	Replicas audit.Skew `json:"replicas"`
	Leaders  audit.Skew `json:"leaders"`
	// TopicsLeadersWithinOne counts topics whose leaders per broker are
	// floor or ceil of partitions/brokers (over the topic's cell after a
	// --fix-overlaps plan).
	TopicsLeadersWithinOne int `json:"topics_leaders_within_one"`
	Topics                 int `json:"topics"`
	// RackViolations counts partitions whose replicas do not spread over
	// racks as far as the racks allow: two replicas in one rack while there
	// are at least as many racks as replicas, and with fewer racks, more in
	// one rack than an even spread over them needs.
	RackViolations int `json:"rack_violations"`
	// MaxGroups and Overlaps count node-topic max groups and overlapping
	// pairs of them by leaders, as `kplan audit` does; the count is exact
	// (audit.CountOverlaps), however many pairs there are.
	MaxGroups int `json:"max_groups"`
	Overlaps  int `json:"overlaps"`
}

// BrokerLoad is one broker before and after.
type BrokerLoad struct {
	Broker int32  `json:"broker"`
	Rack   string `json:"rack,omitempty"`
	// Status is kept, drained or added.
	Status         string `json:"status"`
	ReplicasBefore int    `json:"replicas_before"`
	ReplicasAfter  int    `json:"replicas_after"`
	LeadersBefore  int    `json:"leaders_before"`
	LeadersAfter   int    `json:"leaders_after"`
}

// TopicSpread is a topic's leaders per broker after the plan.
type TopicSpread struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Brokers    int    `json:"brokers"`
	MinLeaders int    `json:"min_leaders"`
	MaxLeaders int    `json:"max_leaders"`
}

// Cell is one cell of target brokers and what the plan places in it.
type Cell struct {
	Cell    int      `json:"cell"`
	Brokers []int32  `json:"brokers"`
	Racks   []string `json:"racks"`
	// Topics and Replicas are the topics placed in the cell and their
	// replicas.
	Topics   int `json:"topics"`
	Replicas int `json:"replicas"`
}

// RemainingOverlap is a pair of max groups that still overlap.
type RemainingOverlap struct {
	Groups        [2][]string `json:"groups"`
	SharedBrokers []int32     `json:"shared_brokers"`
	Reason        string      `json:"reason"`
}

func (w *work) plan() *Plan {
	final := &topology.Cluster{Partitions: make([]topology.Partition, len(w.c.Partitions))}
	for b := range w.ids {
		if w.target[b] {
			final.Brokers = append(final.Brokers, topology.Broker{ID: w.ids[b], Rack: w.rackName(int32(b))})
		}
	}
	pl := &Plan{Final: final}
	s := &pl.Summary
	s.Schema = Schema
	w.changes(pl)
	// final is complete: its failover figures run beside the rest.
	after := w.startFigures(final)
	w.bounds(s)
	w.brokers(s)
	w.balance(s, final)
	w.topicSpreads(s, final)
	w.groups(s, final)
	s.Cells = w.cellList()
	w.failoverSummary(s, final, after)
	s.Notes = append(s.Notes, w.notes...)
	if s.RackBound != nil {
		s.Notes = append(s.Notes, rackNote(s.RackBound))
	}
	s.Notes = append(s.Notes, w.worse(s)...)
	s.Notes = nonNil(s.Notes)
	return pl
}

// unchanged reports whether partition i's final order (its leader, then
// its other replicas in slot order) is its order before the plan.
func (w *work) unchanged(i int) bool {
	orig := w.orig[w.origOff[i]:w.origOff[i+1]]
	lead := w.lead[i]
	if int32(len(orig)) != w.off[i+1]-w.off[i] || orig[0] != lead {
		return false
	}
	k := 1
	for _, b := range w.slots[w.off[i]:w.off[i+1]] {
		if b != lead {
			if k == len(orig) || orig[k] != b {
				return false
			}
			k++
		}
	}
	return true
}

// changes fills the final layout, the changes, the elections and the
// counts of moves and leader changes.
func (w *work) changes(pl *Plan) {
	c, s := w.c, &pl.Summary
	var bytes int64
	bytesKnown := true
	// The changes are counted first, so their list is allocated once (a
	// Change holds two partitions: growing it by appends copied them over
	// and over), and the final replica lists share one array.
	np := len(c.Partitions)
	changed := 0
	for i := range np {
		if !w.unchanged(i) {
			changed++
		}
	}
	pl.Changes = slices.Grow(pl.Changes, changed)
	flat := make([]int32, w.off[np])
	for i := range c.Partitions {
		p := &c.Partitions[i]
		reps := w.slots[w.off[i]:w.off[i+1]]
		lead := w.lead[i]
		list := flat[w.off[i]:w.off[i]:w.off[i+1]]
		list = append(list, w.ids[lead])
		for _, b := range reps {
			if b != lead {
				list = append(list, w.ids[b])
			}
		}
		pl.Final.Partitions[i] = topology.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: list, Leader: list[0], SizeBytes: p.SizeBytes}
		moves := 0
		for _, r := range list {
			if !slices.Contains(p.Replicas, r) {
				moves++
			}
		}
		cur := p.Leader
		if cur == topology.NoLeader {
			cur = p.Replicas[0]
		}
		leaderChange := list[0] != cur
		if leaderChange {
			s.LeaderChanges++
			if moves == 0 && len(list) == len(p.Replicas) {
				s.LeaderOnlyChanges++
			}
			if p.Leader != topology.NoLeader && slices.Contains(list, p.Leader) {
				pl.Elections = append(pl.Elections, p.Key())
			}
		}
		if !slices.Equal(list, p.Replicas) {
			pl.Changes = append(pl.Changes, Change{
				New:   topology.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: list, Leader: list[0], SizeBytes: p.SizeBytes},
				Old:   p.Clone(),
				Moves: moves, LeaderChange: leaderChange,
			})
		}
		if moves > 0 {
			if cb := p.CopyBytes(); cb < 0 {
				bytesKnown = false
			} else {
				bytes += int64(moves) * cb
			}
		}
		s.ReplicasMoved += moves
	}
	s.Partitions = len(c.Partitions)
	s.ChangedPartitions = len(pl.Changes)
	s.PreferredElections = len(pl.Elections)
	if bytesKnown {
		s.BytesMoved = &bytes
	}
}

// bounds sets the lower bound, the gap and, under FixOverlaps, the
// count-balance bound; and the rack bound when racks keep targets uneven.
func (w *work) bounds(s *Summary) {
	s.LowerBound = w.lower
	s.Gap = s.ReplicasMoved - s.LowerBound
	if s.LowerBound > 0 {
		r := round3(float64(s.ReplicasMoved) / float64(s.LowerBound))
		s.MovesOverBound = &r
	}
	if w.countBound != nil {
		b := *w.countBound
		s.CountBalanceBound = &b
		if b > 0 {
			r := round3(float64(s.ReplicasMoved) / float64(b))
			s.MovesOverCountBalanceBound = &r
		}
	}
	s.RackBound = w.rackBound()
}

// cellList describes the cells when there are several.
func (w *work) cellList() []Cell {
	if len(w.cells) < 2 {
		return nil
	}
	out := make([]Cell, len(w.cells))
	for ci, cell := range w.cells {
		c := Cell{Cell: ci + 1, Brokers: make([]int32, len(cell)), Racks: []string{}}
		for j, b := range cell {
			c.Brokers[j] = w.ids[b]
			if r := w.rackName(b); r != "" && !slices.Contains(c.Racks, r) {
				c.Racks = append(c.Racks, r)
			}
		}
		slices.Sort(c.Racks)
		for t := range w.tname {
			if int(w.tcell[t]) == ci {
				c.Topics++
				c.Replicas += int(w.off[w.tstart[t+1]] - w.off[w.tstart[t]])
			}
		}
		out[ci] = c
	}
	return out
}

// brokers sets the target, drained and added brokers and the per-broker
// counts before and after.
func (w *work) brokers(s *Summary) {
	c := w.c
	for b := range w.ids {
		_, current := c.Broker(w.ids[b])
		switch {
		case w.target[b]:
			s.TargetBrokers = append(s.TargetBrokers, w.ids[b])
			if w.cordon != nil && w.cordon[b] {
				s.CordonedBrokers = append(s.CordonedBrokers, w.ids[b])
			}
			if !current {
				s.AddedBrokers = append(s.AddedBrokers, w.ids[b])
			}
		default:
			s.DrainedBrokers = append(s.DrainedBrokers, w.ids[b])
		}
	}
	s.DrainedBrokers = nonNil(s.DrainedBrokers)
	s.AddedBrokers = nonNil(s.AddedBrokers)

	s.PerBroker = make([]BrokerLoad, w.n())
	for b := range w.ids {
		st := "kept"
		if !w.target[b] {
			st = "drained"
		} else if slices.Contains(s.AddedBrokers, w.ids[b]) {
			st = "added"
		}
		rack := w.rackName(int32(b))
		if cb, ok := c.Broker(w.ids[b]); ok && rack == "" {
			rack = cb.Rack
		}
		s.PerBroker[b] = BrokerLoad{Broker: w.ids[b], Rack: rack, Status: st}
	}
}

// balance counts replicas and leaders per broker before and after, their
// skews, and the rack violations.
func (w *work) balance(s *Summary, final *topology.Cluster) {
	c := w.c
	for i := range c.Partitions {
		p := &c.Partitions[i]
		for _, r := range p.Replicas {
			s.PerBroker[w.pos[r]].ReplicasBefore++
		}
		if p.Leader != topology.NoLeader {
			if b, ok := w.pos[p.Leader]; ok {
				s.PerBroker[b].LeadersBefore++
			}
		}
		for _, r := range final.Partitions[i].Replicas {
			s.PerBroker[w.pos[r]].ReplicasAfter++
		}
		s.PerBroker[w.pos[final.Partitions[i].Leader]].LeadersAfter++
	}
	var rb, lb, ra, la []int
	for b, l := range s.PerBroker {
		if _, ok := c.Broker(w.ids[b]); ok {
			rb, lb = append(rb, l.ReplicasBefore), append(lb, l.LeadersBefore)
		}
		if w.target[b] {
			ra, la = append(ra, l.ReplicasAfter), append(la, l.LeadersAfter)
		}
	}
	s.Before.Replicas, s.Before.Leaders = skew(rb), skew(lb)
	s.After.Replicas, s.After.Leaders = skew(ra), skew(la)
	s.Before.RackViolations = rackViolations(c.Partitions, c.Brokers, func(id int32) string {
		b, _ := c.Broker(id)
		return b.Rack
	})
	s.After.RackViolations = rackViolations(final.Partitions, final.Brokers, func(id int32) string { return w.rackName(w.pos[id]) })
}

// topicSpreads counts the topics whose leaders are within one of their
// mean, before over the current brokers and after over the topic's block,
// and lists the uneven ones.
func (w *work) topicSpreads(s *Summary, final *topology.Cluster) {
	c := w.c
	s.Before.Topics, s.After.Topics = len(w.tname), len(w.tname)
	counts := make([]int, w.n())
	currentBrokers := len(c.Brokers)
	s.UnevenTopics = []TopicSpread{}
	for t := range w.tname {
		first, last := int(w.tstart[t]), int(w.tstart[t+1])
		if lo, hi, _ := spread(c.Partitions[first:last], w.pos, counts, currentBrokers); within(last-first, currentBrokers, lo, hi) {
			s.Before.TopicsLeadersWithinOne++
		}
		k := len(w.blocks[w.tblock[t]])
		lo, hi, _ := spread(final.Partitions[first:last], w.pos, counts, k)
		if within(last-first, k, lo, hi) {
			s.After.TopicsLeadersWithinOne++
		} else {
			s.UnevenTopics = append(s.UnevenTopics, TopicSpread{Topic: w.tname[t], Partitions: last - first, Brokers: k, MinLeaders: lo, MaxLeaders: hi})
		}
	}
	slices.SortStableFunc(s.UnevenTopics, func(a, b TopicSpread) int {
		return cmp.Compare(b.MaxLeaders-b.MinLeaders, a.MaxLeaders-a.MinLeaders)
	})
	if len(s.UnevenTopics) > MaxListed {
		s.Notes = append(s.Notes, fmt.Sprintf("%d topics have leaders outside floor/ceil of their mean; the %d widest are listed", len(s.UnevenTopics), MaxListed))
		s.UnevenTopics = s.UnevenTopics[:MaxListed]
	}
}

// groups counts max groups and overlaps before and after, as kplan audit
// counts them, and lists the overlaps that remain with their reasons.
func (w *work) groups(s *Summary, final *topology.Cluster) {
	s.Before.MaxGroups, s.Before.Overlaps, _, _, _ = overlaps(w.c)
	var groups []audit.Group
	var ovs []audit.Overlap
	var ix *topology.Index
	s.After.MaxGroups, s.After.Overlaps, groups, ovs, ix = overlaps(final)
	s.RemainingOverlaps = []RemainingOverlap{}
	for _, o := range ovs {
		if len(s.RemainingOverlaps) == MaxListed {
			break
		}
		a, b := groups[o.A-1], groups[o.B-1]
		s.RemainingOverlaps = append(s.RemainingOverlaps, RemainingOverlap{
			Groups: [2][]string{a.Topics, b.Topics}, SharedBrokers: ix.IDs(o.Shared), Reason: w.overlapReason(a, b, ix),
		})
	}
}

// worse returns notes for counts that a FixOverlaps plan leaves less even
// than they were: cells and leader blocks trade count balance for disjoint
// leader sets.
func (w *work) worse(s *Summary) []string {
	if !w.opts.FixOverlaps {
		return nil
	}
	var out []string
	for _, x := range []struct {
		what          string
		before, after audit.Skew
	}{{"replicas", s.Before.Replicas, s.After.Replicas}, {"leaders", s.Before.Leaders, s.After.Leaders}} {
		if x.after.Max-x.after.Min > x.before.Max-x.before.Min {
			out = append(out, fmt.Sprintf("%s per broker are less even after the plan (%d-%d) than before (%d-%d): cells and leader blocks trade count balance for disjoint leader sets",
				x.what, x.after.Min, x.after.Max, x.before.Min, x.before.Max))
		}
	}
	return out
}

// overlapReason says why two max groups still overlap after the plan.
func (w *work) overlapReason(a, b audit.Group, ix *topology.Index) string {
	if !w.opts.FixOverlaps {
		return "not asked to remove overlaps (--fix-overlaps)"
	}
	for _, g := range []audit.Group{a, b} {
		for _, name := range g.Topics {
			t, _ := slices.BinarySearch(w.tname, name)
			p := int(w.tstart[t+1] - w.tstart[t])
			if k := len(w.blocks[w.tblock[t]]); p < k {
				return fmt.Sprintf("topic %s has %d partitions, fewer than the %d brokers of its cell, and the cell cannot be split into blocks that every topic covers: give it at least %d partitions, or choose a smaller --cell-size", name, p, k, k)
			}
		}
	}
	for _, g := range []audit.Group{a, b} {
		set := ix.IDs(g.Brokers)
		name := g.Topics[0]
		t, _ := slices.BinarySearch(w.tname, name)
		if k := len(w.blocks[w.tblock[t]]); len(set) != k {
			return fmt.Sprintf("topic %s leads from %d of the %d brokers of its block: its replicas or racks leave some broker no partition to lead", name, len(set), k)
		}
	}
	return "the cells overlap"
}

// overlaps returns the number of max groups by leaders, the exact number of
// overlapping pairs, the groups and the first MaxListed pairs.
func overlaps(c *topology.Cluster) (int, int, []audit.Group, []audit.Overlap, *topology.Index) {
	ix := topology.NewIndex(c.Brokers)
	names, sets := audit.TopicSets(c, ix, audit.ByLeaders)
	groups := audit.MaxGroups(names, sets)
	ovs, count := audit.OverlapsCounted(groups, ix.Len(), MaxListed)
	return len(groups), count, groups, ovs, ix
}

// spread returns the least and most partitions led by one of k brokers
// (0 when fewer than k brokers lead any) and how many brokers lead.
func spread(parts []topology.Partition, pos map[int32]int32, counts []int, k int) (int, int, int) {
	var touched []int32
	for _, p := range parts {
		if p.Leader == topology.NoLeader {
			continue
		}
		b := pos[p.Leader]
		if counts[b] == 0 {
			touched = append(touched, b)
		}
		counts[b]++
	}
	lo, hi := len(parts), 0
	for _, b := range touched {
		lo, hi = min(lo, counts[b]), max(hi, counts[b])
		counts[b] = 0
	}
	if len(touched) < k || len(touched) == 0 {
		lo = 0
	}
	return lo, hi, len(touched)
}

// within reports whether leaders per broker lie in floor/ceil of p/k.
func within(p, k, lo, hi int) bool {
	return k > 0 && lo >= p/k && hi <= (p+k-1)/k
}

// rackViolations counts partitions whose replicas do not spread over racks
// as far as the racks of the brokers (listed or holding replicas) allow:
// some rack holds more of them than rackCap (with at least as many racks
// as replicas, two in one rack). A broker whose rack is unknown (no rack,
// or down) counts as a rack of its own, as the planner counts it, so one
// such broker no longer hides every violation; without any rack there is
// nothing to violate.
func rackViolations(parts []topology.Partition, brokers []topology.Broker, rackOf func(int32) string) int {
	// rack maps each broker to its rack's name, unknown racks to a name of
	// their own that no real rack has.
	rack := map[int32]string{}
	anyRack := false
	note := func(id int32) {
		if _, ok := rack[id]; ok {
			return
		}
		r := rackOf(id)
		if r == "" {
			r = "\x00" + strconv.Itoa(int(id))
		} else {
			anyRack = true
		}
		rack[id] = r
	}
	for _, b := range brokers {
		note(b.ID)
	}
	for _, p := range parts {
		for _, r := range p.Replicas {
			note(r)
		}
	}
	if !anyRack {
		return 0 // no racks: nothing to violate
	}
	perRack := map[string]int{}
	for _, r := range rack {
		perRack[r]++
	}
	sizes := make([]int, 0, len(perRack))
	for _, k := range perRack {
		sizes = append(sizes, k)
	}
	caps := map[int]int{}
	bad := 0
	count := map[string]int{}
	for _, p := range parts {
		c, ok := caps[len(p.Replicas)]
		if !ok {
			c = rackCap(sizes, len(p.Replicas))
			caps[len(p.Replicas)] = c
		}
		clear(count)
		for _, r := range p.Replicas {
			count[rack[r]]++
		}
		for _, k := range count {
			if k > c {
				bad++
				break
			}
		}
	}
	return bad
}

func (w *work) rackName(b int32) string {
	if w.rack[b] < 0 {
		return ""
	}
	return w.names[w.rack[b]]
}

func skew(v []int) audit.Skew {
	if len(v) == 0 {
		return audit.Skew{}
	}
	s := audit.Skew{Min: slices.Min(v), Max: slices.Max(v)}
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

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
