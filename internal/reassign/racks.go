package reassign

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Racks. When every target broker has a rack, a partition's replicas spread
// over the racks of its cell as far as they allow, the way Kafka's
// rack-aware placement spreads them: with at least as many racks as
// replicas, no two replicas share a rack; with fewer, no rack holds more
// than the least number some rack must hold (rackCap). One rack therefore
// constrains nothing, and a cell with fewer racks than replicas plans
// normally.
//
// Racks also cap what a rack's brokers can hold together: rackRoom, the
// sum over the cell's partitions of min(rackCap, brokers in the rack). When
// an even spread of replicas would give a rack more than that (a rack with
// more brokers than the others), the per-broker targets are capped per rack
// and the plan says so in Summary.RackBound.

// RackBound explains per-broker replica targets that racks keep from being
// within one of the mean.
type RackBound struct {
	// Limits are the racks whose brokers cannot hold an even share.
	Limits []RackLimit `json:"limits"`
	// Targets are the rack-aware per-broker targets the lower bound counts
	// against, beside the targets of an even spread.
	Targets []BrokerTarget `json:"targets"`
	// NewRacks are brokers that, each moved to a rack of its own, make an
	// even spread possible (the fewest found); empty when that does not
	// suffice or the brokers form several cells.
	NewRacks []int32 `json:"new_racks"`
	// AddBrokers is how many brokers added, each in a rack of its own,
	// make an even spread possible; 0 when no number up to the target
	// broker count does or the brokers form several cells.
	AddBrokers int `json:"add_brokers"`
}

// RackLimit is a rack that holds fewer replicas than an even spread gives
// its brokers.
type RackLimit struct {
	// Cell is the 1-based cell of the rack's brokers (1 without cells).
	Cell    int     `json:"cell"`
	Rack    string  `json:"rack"`
	Brokers []int32 `json:"brokers"`
	// Capacity is the most replicas the rack can hold with every
	// partition's replicas spread over racks.
	Capacity int `json:"capacity"`
	// Even is what an even spread (floor/ceil of the cell's mean per
	// broker) gives the rack's brokers.
	Even int `json:"even"`
	// CellReplicas and CellBrokers are the cell's totals.
	CellReplicas int `json:"cell_replicas"`
	CellBrokers  int `json:"cell_brokers"`
}

// BrokerTarget is one target broker's replica target.
type BrokerTarget struct {
	Broker int32  `json:"broker"`
	Rack   string `json:"rack"`
	// Target is the rack-aware target; Even the target of an even spread.
	Target int `json:"target"`
	Even   int `json:"even"`
}

// rackCap returns the most replicas of one partition of replication factor
// rf that any rack needs to hold when they spread over racks of the given
// sizes (brokers per rack) as evenly as the sizes allow: the smallest c with
// sum(min(c, size)) >= rf. It is 1 when there are at least rf racks.
func rackCap(sizes []int, rf int) int {
	for c := 1; ; c++ {
		sum := 0
		for _, s := range sizes {
			sum += min(c, s)
		}
		if sum >= rf || c >= rf {
			return c
		}
	}
}

// rackRooms returns, per rack, the most replicas it can hold: over the
// partitions (perRF[rf] partitions of replication factor rf), min(rackCap,
// size) each.
func rackRooms(sizes []int, perRF []int) []int {
	room := make([]int, len(sizes))
	for rf, k := range perRF {
		if k == 0 {
			continue
		}
		c := rackCap(sizes, rf)
		for r, s := range sizes {
			room[r] += k * min(c, s)
		}
	}
	return room
}

// evenFits reports whether total replicas can sit floor or ceil of the mean
// on every broker with racks of these sizes: no rack below its room at the
// floor, and room for the total at the ceiling.
func evenFits(sizes []int, perRF []int, total int) bool {
	n := 0
	for _, s := range sizes {
		n += s
	}
	if n == 0 {
		return false
	}
	lo, hi := total/n, (total+n-1)/n
	room := rackRooms(sizes, perRF)
	fit := 0
	for r, s := range sizes {
		if s*lo > room[r] {
			return false
		}
		fit += min(s*hi, room[r])
	}
	return fit >= total
}

// cellRacks returns the cell's brokers per rack, its partitions per
// replication factor and its replica total.
func (w *work) cellRacks(ci int) ([]int, []int, int) {
	sizes := make([]int, w.nrack)
	for _, b := range w.cells[ci] {
		sizes[w.rack[b]]++
	}
	var perRF []int
	total := 0
	for t := range w.tname {
		if int(w.tcell[t]) != ci {
			continue
		}
		for i := w.tstart[t]; i < w.tstart[t+1]; i++ {
			rf := int(w.off[i+1] - w.off[i])
			for len(perRF) <= rf {
				perRF = append(perRF, 0)
			}
			perRF[rf]++
			total += rf
		}
	}
	return sizes, perRF, total
}

// computeRackCaps sets rcap per partition and rackRoom per cell once the
// topics' cells are chosen, and notes cells with fewer racks than their
// replication factors.
func (w *work) computeRackCaps() {
	if !w.rackAware {
		return
	}
	w.rcap = make([]int32, len(w.c.Partitions))
	w.rackRoom = make([][]int, len(w.cells))
	for ci := range w.cells {
		sizes, perRF, _ := w.cellRacks(ci)
		w.rackRoom[ci] = rackRooms(sizes, perRF)
		caps := make([]int32, len(perRF))
		for rf := range perRF {
			caps[rf] = int32(rackCap(sizes, rf))
		}
		for t := range w.tname {
			if int(w.tcell[t]) != ci {
				continue
			}
			for i := w.tstart[t]; i < w.tstart[t+1]; i++ {
				w.rcap[i] = caps[w.off[i+1]-w.off[i]]
			}
		}
		racks := 0
		for _, s := range sizes {
			if s > 0 {
				racks++
			}
		}
		if maxRF := len(perRF) - 1; racks < maxRF {
			where := "the target brokers have"
			if len(w.cells) > 1 {
				where = fmt.Sprintf("cell %d (brokers %s) has", ci+1, w.idList(w.cells[ci]))
			}
			w.notes = append(w.notes, fmt.Sprintf("%s %s for replication factor %d: replicas spread over racks as far as they allow, at most %d of a partition in one rack",
				where, plural(racks, "rack"), maxRF, caps[maxRF]))
		}
	}
}

// rackBound explains targets that racks keep from being even, or returns
// nil when every cell's targets are within one.
func (w *work) rackBound() *RackBound {
	if !w.rackAware || w.boundTgt == nil {
		return nil
	}
	rb := &RackBound{NewRacks: []int32{}}
	for ci, cell := range w.cells {
		lo, hi := slices.Min(w.pick(w.boundTgt, cell)), slices.Max(w.pick(w.boundTgt, cell))
		if hi-lo <= 1 {
			continue
		}
		sizes, perRF, total := w.cellRacks(ci)
		for _, b := range cell {
			rb.Targets = append(rb.Targets, BrokerTarget{Broker: w.ids[b], Rack: w.rackName(b), Target: w.boundTgt[b], Even: w.evenTgt[b]})
		}
		for _, r := range w.capped[ci] {
			var brokers []int32
			even := 0
			for _, b := range cell {
				if w.rack[b] == r {
					brokers = append(brokers, w.ids[b])
					even += w.evenTgt[b]
				}
			}
			rb.Limits = append(rb.Limits, RackLimit{Cell: ci + 1, Rack: w.names[r], Brokers: brokers, Capacity: w.rackRoom[ci][r],
				Even: even, CellReplicas: total, CellBrokers: len(cell)})
		}
		if len(w.cells) == 1 {
			rb.NewRacks = w.newRacks(cell, sizes, perRF, total)
			for k := 1; k <= len(cell); k++ {
				if evenFits(append(slices.Clone(sizes), slices.Repeat([]int{1}, k)...), perRF, total) {
					rb.AddBrokers = k
					break
				}
			}
		}
	}
	if len(rb.Targets) == 0 {
		return nil
	}
	slices.SortFunc(rb.Targets, func(a, b BrokerTarget) int { return int(a.Broker) - int(b.Broker) })
	return rb
}

// newRacks returns the fewest brokers of the cell that, each moved to a
// rack of its own, let an even spread fit: taken one at a time from the
// rack furthest over its room, highest id first. Empty when none suffice.
func (w *work) newRacks(cell []int32, sizes, perRF []int, total int) []int32 {
	sizes = slices.Clone(sizes)
	n := len(cell)
	var moved []int32
	for len(moved) < n && !evenFits(sizes, perRF, total) {
		room := rackRooms(sizes, perRF)
		worst, excess := -1, 0
		for r, s := range sizes {
			if e := s*(total/n) - room[r]; s > 1 && e > excess {
				worst, excess = r, e
			}
		}
		if worst < 0 {
			return []int32{}
		}
		for j := len(cell) - 1; j >= 0; j-- {
			if b := cell[j]; int(w.rack[b]) == worst && !slices.Contains(moved, w.ids[b]) {
				moved = append(moved, w.ids[b])
				break
			}
		}
		sizes[worst]--
		sizes = append(sizes, 1)
	}
	if !evenFits(sizes, perRF, total) {
		return []int32{}
	}
	slices.Sort(moved)
	return nonNil(moved)
}

func (w *work) pick(v []int, bs []int32) []int {
	out := make([]int, len(bs))
	for j, b := range bs {
		out[j] = v[b]
	}
	return out
}

func (w *work) idList(bs []int32) string {
	s := make([]string, len(bs))
	for j, b := range bs {
		s[j] = strconv.Itoa(int(w.ids[b]))
	}
	return strings.Join(s, ",")
}

// rackNote is the summary note for a rack bound.
func rackNote(rb *RackBound) string {
	var parts []string
	for _, l := range rb.Limits {
		ids := make([]string, len(l.Brokers))
		for j, b := range l.Brokers {
			ids[j] = strconv.Itoa(int(b))
		}
		parts = append(parts, fmt.Sprintf("rack %s (brokers %s) can hold at most %d of %d replicas, not the %d an even spread gives it",
			l.Rack, strings.Join(ids, ","), l.Capacity, l.CellReplicas, l.Even))
	}
	return "racks keep replicas per broker from being within one of the mean: " + strings.Join(parts, "; ") +
		"; the targets and the lower bound are rack-aware (rack_bound)"
}
