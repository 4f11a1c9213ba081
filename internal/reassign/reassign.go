// Package reassign computes partition reassignment plans: the target layout
// with the fewest replica moves that balances replicas and leaders per
// broker, spreads each topic's leaders, spreads each partition's replicas
// over racks as far as they allow (racks.go), drains and fills brokers,
// and optionally removes partially overlapping node-topic groups (Burato,
// 2019, ch. 3 and §6.4).
//
// The algorithm works in three phases on dense arrays:
//
//  1. Replicas. Replicas that must move regardless of balance (on drained
//     brokers, outside a topic's cell, added by a larger replication factor,
//     or in a rack beyond its share) become holes. Per-broker targets are
//     floor/ceil of the mean, with the ceilings given to the brokers that
//     hold the most replicas already (capped per rack when racks bind, see
//     Summary.RackBound). Holes are filled on brokers under target; then
//     brokers over target shed exactly their excess, followers first and
//     the topics they hold most of first, onto brokers under target that
//     keep racks spread and topics spread. Every move goes from over target
//     to under target, so without rack or cell constraints the moves equal
//     the lower bound (see LowerBound).
//  2. Leaders, by reordering replica lists only: first each topic's leaders
//     are spread to floor/ceil of its partitions over its brokers, then
//     broker totals are brought to floor/ceil of the mean by augmenting paths
//     that keep the topic spreads (direct switches first, then breadth-first
//     paths over brokers).
//     Then the failover order (failover.go): with the sets and leaders
//     fixed, each partition's first follower (Kafka's successor when the
//     leader dies) is chosen so that every single-broker loss, and every
//     rack loss, spreads the lost leaderships as evenly as the sets allow,
//     overall and per topic (Options.FailoverDomain). Then the failover
//     placement (failover_moves.go): with Options.FailoverMoves, swaps of
//     followers between partitions of one topic bring the worst
//     single-broker loss to its optimum within that many extra moves;
//     without it, the summary counts the moves that would.
//  3. Output: the changed partitions with the intended leader first and the
//     followers in the failover order, a rollback, a preferred-election
//     list, waves and a summary.
//
// The package is pure and deterministic: the same cluster and options give
// the same plan. Randomness, if any, comes from Options.Rand.
package reassign

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Options is the target of a plan.
type Options struct {
	// Brokers is the target broker set; nil keeps the cluster's brokers.
	// Brokers missing from it are drained; new ones are filled. A broker's
	// rack, when empty here, is taken from the cluster.
	Brokers []topology.Broker
	// ReplicationFactor, when > 0, sets every partition's replication
	// factor; 0 keeps each partition's own.
	ReplicationFactor int
	// FixOverlaps places each topic in one cell (the whole cluster unless
	// CellSize is set) and spreads the leaders of every topic with at least
	// as many partitions as the cell over the whole cell, so that leader
	// broker sets are pairwise identical or disjoint where the partition
	// counts allow.
	FixOverlaps bool
	// CellSize splits the target brokers into cells of this many brokers
	// (each with as many racks as the brokers allow) under FixOverlaps; 0
	// means one cell.
	CellSize int
	// Tolerance is a relative band around the mean (0.05: ±5%) within
	// which a broker's replicas, leaders and topic leaders are left alone
	// (see tolerance.go); 0 balances to floor/ceil of the mean.
	Tolerance float64
	// MaxMoves, when > 0, caps the replica moves: the changes beyond it
	// keep their current assignment and the summary counts them.
	MaxMoves int
	// Ongoing are the reassignments in progress (a live cluster's
	// ListPartitionReassignments): their partitions are planned from their
	// target replicas (the replicas less those being removed), never as a
	// larger replication factor.
	Ongoing map[topology.Key]topology.Ongoing
	// FailoverDomain is the failure the follower order spreads: "broker"
	// (every single-broker loss), "rack" (every rack loss), "both", or ""
	// for both when the target brokers have at least 2 racks and the
	// broker alone otherwise (see failover.go).
	FailoverDomain string
	// ReorderOnly keeps every partition's replica set: only the order
	// changes, to the best leaders and failover order the sets allow (no
	// data moves). It excludes Brokers, ReplicationFactor and FixOverlaps.
	ReorderOnly bool
	// FailoverMoves allows that many replica moves beyond the plan's to
	// place followers so that every single-broker loss reaches the
	// failover optimum (see failover_moves.go); FailoverMovesAuto allows
	// the fewest that reach it, up to a tenth of the plan's moves (at
	// least 32). 0 takes only follower swaps that add no move.
	FailoverMoves int
	// Rand breaks ties between equally loaded brokers when non-nil; nil
	// breaks them by broker id.
	Rand *rand.Rand
	// Balance is the objective: "" or BalanceReplicas balances replica
	// counts with the fewest moves; BalanceBytes balances disk bytes per
	// broker within Tolerance with the fewest bytes copied (bytes.go);
	// BalanceLoad balances bytes in, bytes out and leader bytes per broker
	// by Loads (load.go).
	Balance string
	// Cordon lists brokers that receive no new replica (their own may
	// leave); BalanceBytes only.
	Cordon []int32
	// MaxMoveBytes, when > 0, is a budget of bytes copied: the plan
	// reaches the best balance it finds within it (BalanceBytes only).
	MaxMoveBytes int64
	// Loads are the partitions' observed traffic (BalanceLoad, which needs
	// them); a partition missing from it counts as idle.
	Loads map[topology.Key]Load
	// Rates are the producers' rates per topic (as `kplan audit --rates`
	// reads them), nil for none: each partition then weighs its topic's
	// rate over the topic's partitions in the failover order's weighted
	// pass and the summary's by-load figures (rates.go), as Loads weigh
	// them in a load plan. Not with BalanceLoad; every topic they name must
	// be in the layout.
	Rates *audit.Rates
	// Dirs are the log dirs of a JBOD cluster: when some broker has two,
	// the plan gives replicas target dirs (log_dirs) so that each broker's
	// dirs end within Tolerance (dirs.go). Nil: every replica "any".
	Dirs *DirLayout
}

// TargetError is a target the cluster cannot meet, or an input the planner
// refuses: a usage error. Field names the option the fault comes from as
// the domain spells it ("brokers", "replication-factor", "cell-size"), and
// is empty when the fault lies in the layout itself; the command line
// spells it as its flag.
type TargetError struct {
	Field string
	Msg   string
}

// Error prints "field: message", or the message alone without a field.
func (e *TargetError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// ErrorKind makes every TargetError a usage error (errkind).
func (e *TargetError) ErrorKind() errkind.Kind { return errkind.Usage }

// ErrorField returns the option the fault comes from, or "".
func (e *TargetError) ErrorField() string { return e.Field }

// ErrorMessage returns the message without the field, for the command line
// to put the flag in its place (errkind.Spellable).
func (e *TargetError) ErrorMessage() string { return e.Msg }

func targetErr(field, format string, a ...any) error {
	return &TargetError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// Change is one partition the plan changes.
type Change struct {
	// New is the target assignment, intended leader first.
	New topology.Partition
	// Old is the current assignment (as read, log_dirs included).
	Old topology.Partition
	// Moves is the number of replicas placed on brokers that did not hold
	// the partition (data to copy).
	Moves int
	// LeaderChange is true when the intended leader differs from the
	// current leader.
	LeaderChange bool
}

// Plan is the result of Compute.
type Plan struct {
	// Changes are the partitions whose replica list changes, sorted by
	// topic and partition.
	Changes []Change
	// Elections are the partitions that need a preferred leader election
	// after the plan: the intended leader differs from the current leader
	// and the current leader stays a replica, so the reassignment alone
	// would not move leadership. Sorted.
	Elections []topology.Key
	// Final is the layout after the plan and the elections: every
	// partition's leader is its first replica.
	Final *topology.Cluster
	// Summary measures the plan.
	Summary Summary
}

// New returns the plan's target assignments (Kafka's reassignment JSON).
func (p *Plan) New() []topology.Partition {
	out := make([]topology.Partition, len(p.Changes))
	for i, c := range p.Changes {
		out[i] = c.New
	}
	return out
}

// Rollback returns the current assignment of exactly the changed partitions.
func (p *Plan) Rollback() []topology.Partition {
	out := make([]topology.Partition, len(p.Changes))
	for i, c := range p.Changes {
		out[i] = c.Old
	}
	return out
}

// Compute plans the reassignment of c (normalized: sorted partitions) to
// the target in opts. Faults in the target or the input are *TargetError.
func Compute(c *topology.Cluster, opts Options) (*Plan, error) {
	pl, err := compute(c, opts)
	if err != nil || !opts.Dirs.Multi() {
		return pl, err
	}
	pl.Summary.Dirs = planDirs(c, pl, opts)
	return pl, nil
}

// compute is Compute without the dir pass.
func compute(c *topology.Cluster, opts Options) (*Plan, error) {
	if opts.Tolerance < 0 || opts.Tolerance >= 1 || opts.Tolerance != opts.Tolerance {
		return nil, targetErr("tolerance", "must be at least 0 and below 1, got %g", opts.Tolerance)
	}
	if opts.MaxMoves < 0 {
		return nil, targetErr("max-moves", "must be positive, got %d", opts.MaxMoves)
	}
	if opts.FailoverMoves < FailoverMovesAuto {
		return nil, targetErr("failover-moves", "must be a count of moves or auto, got %d", opts.FailoverMoves)
	}
	if opts.ReorderOnly && opts.FailoverMoves != 0 {
		return nil, targetErr("failover-moves", "moves replicas: it cannot go with --reorder-only")
	}
	if err := checkReorderOnly(opts); err != nil {
		return nil, err
	}
	if err := checkBalance(c, opts); err != nil {
		return nil, err
	}
	if err := checkRates(c, opts); err != nil {
		return nil, err
	}
	switch opts.Balance {
	case BalanceBytes:
		return computeBytes(c, opts)
	case BalanceLoad:
		return computeLoad(c, opts)
	}
	c, settled := settle(c, opts.Ongoing)
	if opts.ReorderOnly {
		return reorderOnly(c, opts)
	}
	w, err := newWork(c, opts)
	if err != nil {
		return nil, err
	}
	w.notes = append(append(settled, w.notes...), w.lostNotes()...)
	if _, _, err := w.failoverDomains(); err != nil {
		return nil, err
	}
	switch {
	case opts.FixOverlaps && opts.CellSize == 0:
		// One cell: the bound is the one without --fix-overlaps.
		w.countBound = &w.lower
	case opts.FixOverlaps:
		// The bound of the same target without --fix-overlaps: cells
		// change where topics live, so their own bound is another.
		o := opts
		o.FixOverlaps, o.CellSize, o.Rand, o.MaxMoves = false, 0, nil, 0
		cw, err := newWork(c, o)
		if err != nil {
			return nil, err
		}
		cw.prepare()
		w.countBound = &cw.lower
	}
	// The summary's figures of the layout before the plan depend on c
	// alone: they run beside the plan.
	w.before = w.startFigures(c)
	w.placeReplicas()
	w.assignLeaders()
	w.orderFollowers()
	w.failoverMoves()
	left, leftParts := w.capMoves()
	pl := w.plan()
	if w.widened {
		pl.Summary.Tolerance = opts.Tolerance
	}
	pl.Summary.MovesLeft, pl.Summary.PartitionsLeft = left, leftParts
	return pl, nil
}

// settle returns c with every partition in the middle of a reassignment
// replaced by its target (its replicas less those being removed, in their
// order; ISR and leader kept where they stay), and a note naming them. A
// partition adding replicas lists old and new ones together, so planning
// from that list would keep them all: a permanent increase of its
// replication factor. c itself is not changed.
func settle(c *topology.Cluster, ongoing map[topology.Key]topology.Ongoing) (*topology.Cluster, []string) {
	if len(ongoing) == 0 {
		return c, nil
	}
	var keys []string
	out := c
	for i := range c.Partitions {
		p := &c.Partitions[i]
		o, ok := ongoing[p.Key()]
		if !ok || len(o.Removing) == 0 {
			continue
		}
		target := slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(o.Removing, r) })
		if len(target) == 0 || len(target) == len(p.Replicas) {
			continue
		}
		if out == c {
			out = c.Clone()
		}
		q := &out.Partitions[i]
		if q.ISR != nil {
			q.ISR = slices.DeleteFunc(q.ISR, func(r int32) bool { return !slices.Contains(target, r) })
		}
		if !slices.Contains(target, q.Leader) {
			q.Leader = topology.NoLeader
		}
		q.Replicas = target
		if len(keys) < 3 {
			keys = append(keys, fmt.Sprintf("%s %s -> %s", p.Key(), joinIDs(p.Replicas), joinIDs(target)))
		} else {
			keys = append(keys, "")
		}
	}
	if len(keys) == 0 {
		return c, nil
	}
	shown := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "" })
	what := "1 partition is"
	if len(keys) > 1 {
		what = fmt.Sprintf("%d partitions are", len(keys))
	}
	more := ""
	if len(keys) > len(shown) {
		more = "; ..."
	}
	return out, []string{fmt.Sprintf("%s in the middle of a reassignment, planned from the replicas it is moving to (%s%s); a plan that changes one replaces its reassignment",
		what, strings.Join(shown, "; "), more)}
}

func joinIDs(v []int32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}
