package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// A plan's log_dirs (JBOD): each replica with a dir other than "any" must
// end in it. As Kafka's kafka-reassign-partitions does, Execute asks each
// broker to move its replicas (AlterReplicaLogDirs) and asks again, until
// the broker accepts, for replicas it does not hold yet: a broker answers
// REPLICA_NOT_AVAILABLE for a replica it has not created, and remembers the
// dir so that the replica is created in it. A replica changing dir on its
// broker is copied into a future replica (DescribeLogDirs' IsFuture) that
// replaces it once caught up; Execute waits until none is left, and
// Verify checks every replica is in its planned dir.

// AnyDir is log_dirs' "no preference".
const AnyDir = "any"

// DirMove is a replica a plan places in a log dir.
type DirMove struct {
	topology.Key
	Broker int32  `json:"broker"`
	Dir    string `json:"dir"`
}

// String names the move as the errors do.
func (m DirMove) String() string { return fmt.Sprintf("%s on broker %d to %s", m.Key, m.Broker, m.Dir) }

// DirReplica is a replica in a log dir, as DescribeLogDirs reports it.
type DirReplica struct {
	topology.Key
	Broker int32
	Dir    string
	// Future is a copy in progress to Dir, replacing the replica in
	// another dir of the broker once caught up.
	Future bool
	Bytes  int64
}

// DirAdmin is what a plan's log_dirs need from a cluster; internal/kafka's
// Admin implements it.
type DirAdmin interface {
	// ReplicaLogDirs returns every live broker's log dirs and every
	// replica of the topics the filter accepts, future ones included.
	ReplicaLogDirs(ctx context.Context, topicFilter func(string) bool) (map[int32][]string, []DirReplica, error)
	// AlterReplicaDirs asks each broker to move its replicas to their
	// dirs; the result holds, per move, the broker's error (nil: accepted).
	// The error is for requests that failed as a whole.
	AlterReplicaDirs(ctx context.Context, moves []DirMove) ([]error, error)
}

// DirProgress is where the plan's log_dirs stand.
type DirProgress struct {
	// Planned counts the replicas the plan gives a dir; InPlace those in
	// it; Moving those being copied into it (future replicas).
	Planned int `json:"planned"`
	InPlace int `json:"in_place"`
	Moving  int `json:"moving"`
	// Wrong are the replicas in another dir with no copy in progress
	// (verify), or still refused when the wait ended (execute).
	Wrong []DirMove `json:"wrong"`
}

// Done reports whether every planned replica is in its dir.
func (p *DirProgress) Done() bool { return p == nil || p.InPlace == p.Planned }

// ErrReplicaNotYet is how a DirAdmin reports a replica its broker does not
// hold yet (Kafka's REPLICA_NOT_AVAILABLE): asked again later.
var ErrReplicaNotYet = errors.New("the replica does not exist on the broker yet")

// DirError is a broker's refusal of a log dir move: its kind (usage for a
// dir the broker does not have, runtime otherwise) and field are those of
// errkind.
type DirError struct {
	Move DirMove
	Err  error
	Kind errkind.Kind
}

func (e *DirError) Error() string { return "log_dirs: " + e.ErrorMessage() }

// ErrorMessage is the error without its field (errkind.Spellable).
func (e *DirError) ErrorMessage() string { return fmt.Sprintf("%s: %v", e.Move, e.Err) }

// Unwrap returns the broker's error.
func (e *DirError) Unwrap() error { return e.Err }

// ErrorKind is the error's kind.
func (e *DirError) ErrorKind() errkind.Kind { return e.Kind }

// ErrorField is "log_dirs", the plan's field.
func (e *DirError) ErrorField() string { return "log_dirs" }

// DirMoves are the replicas the plan gives a dir, in plan order. A
// log_dirs of another length than the replicas is a usage error naming
// the partition (topology.Load refuses such a file too).
func DirMoves(plan []topology.Partition) ([]DirMove, error) {
	var out []DirMove
	for _, p := range plan {
		if len(p.LogDirs) == 0 {
			continue
		}
		if len(p.LogDirs) != len(p.Replicas) {
			return nil, errkind.Usagef("log_dirs", "%s: %d log dirs for %d replicas", p.Key(), len(p.LogDirs), len(p.Replicas))
		}
		for j, d := range p.LogDirs {
			if strings.TrimSpace(d) == "" {
				return nil, errkind.Usagef("log_dirs", "%s: an empty dir for broker %d (want a dir or %q)", p.Key(), p.Replicas[j], AnyDir)
			}
			if d != AnyDir {
				out = append(out, DirMove{Key: p.Key(), Broker: p.Replicas[j], Dir: d})
			}
		}
	}
	return out, nil
}

// readDirs reads the plan's dir moves and, when there are any, where each
// replica's dir stands (res.Dirs; it also checks every dir is one of its
// broker's), and returns the moves and the Admin that moves dirs (nil
// without moves).
func readDirs(ctx context.Context, adm Admin, plan []topology.Partition, res *Result) ([]DirMove, DirAdmin, error) {
	moves, err := DirMoves(plan)
	if err != nil {
		return nil, nil, err
	}
	da, err := dirAdmin(adm, moves)
	if err != nil {
		return nil, nil, err
	}
	if da != nil {
		if res.Dirs, err = dirProgress(ctx, da, moves); err != nil {
			return nil, nil, err
		}
	}
	return moves, da, nil
}

// dirAdmin returns adm as a DirAdmin when moves need one.
func dirAdmin(adm Admin, moves []DirMove) (DirAdmin, error) {
	if len(moves) == 0 {
		return nil, nil
	}
	da, ok := adm.(DirAdmin)
	if !ok {
		return nil, errkind.Usagef("log_dirs", "this cluster's admin cannot move replicas between log dirs")
	}
	return da, nil
}

// dirProgress reads where the moves' replicas are. A dir its broker does
// not have is a usage error naming the partition and dir.
func dirProgress(ctx context.Context, da DirAdmin, moves []DirMove) (*DirProgress, error) {
	topics := map[string]bool{}
	for _, m := range moves {
		topics[m.Topic] = true
	}
	dirs, reps, err := da.ReplicaLogDirs(ctx, func(t string) bool { return topics[t] })
	if err != nil {
		return nil, fmt.Errorf("describing log dirs: %w", err)
	}
	type rk struct {
		topology.Key
		Broker int32
	}
	now := map[rk]string{}
	future := map[rk]string{}
	for _, r := range reps {
		if r.Future {
			future[rk{r.Key, r.Broker}] = r.Dir
		} else {
			now[rk{r.Key, r.Broker}] = r.Dir
		}
	}
	p := &DirProgress{Planned: len(moves), Wrong: []DirMove{}}
	for _, m := range moves {
		if bd, ok := dirs[m.Broker]; ok && !slices.Contains(bd, m.Dir) {
			return nil, errkind.Usagef("log_dirs", "%s: broker %d has no log dir %s (it has %v)", m.Key, m.Broker, m.Dir, bd)
		}
		k := rk{m.Key, m.Broker}
		switch {
		case future[k] == m.Dir:
			p.Moving++
		case now[k] == m.Dir:
			p.InPlace++
		default:
			p.Wrong = append(p.Wrong, m)
		}
	}
	return p, nil
}

// alterDirs asks the brokers to move the replicas of moves and returns
// those to ask again (ErrReplicaNotYet); any other refusal is a DirError.
func alterDirs(ctx context.Context, da DirAdmin, moves []DirMove) ([]DirMove, error) {
	if len(moves) == 0 {
		return nil, nil
	}
	errs, err := da.AlterReplicaDirs(ctx, moves)
	if err != nil {
		return nil, fmt.Errorf("moving replicas between log dirs: %w", err)
	}
	var again []DirMove
	for i, e := range errs {
		switch {
		case e == nil:
		case errors.Is(e, ErrReplicaNotYet):
			again = append(again, moves[i])
		default:
			kind := errkind.Runtime
			if errkind.KindOf(e) == errkind.Usage {
				kind = errkind.Usage
			}
			return nil, &DirError{Move: moves[i], Err: e, Kind: kind}
		}
	}
	return again, nil
}

// finishDirs asks again for the replicas the brokers did not hold yet,
// until each accepted, then waits until every planned replica is in its
// dir (no future replica left), reporting each poll. It gives up after
// o.WaitTimeout (0: no bound) with ErrNotDone.
func finishDirs(ctx context.Context, da DirAdmin, moves, again []DirMove, res *Result, o Options) error {
	poll := o.Poll
	if poll <= 0 {
		poll = time.Second
	}
	start := o.Clock.Now()
	for {
		var err error
		if again, err = alterDirs(ctx, da, again); err != nil {
			return err
		}
		p, err := dirProgress(ctx, da, moves)
		if err != nil {
			return err
		}
		res.Dirs = p
		elapsed := o.Clock.Now().Sub(start)
		o.emit(Event{Kind: EventDirs, Result: res, Elapsed: elapsed})
		if len(again) == 0 && p.Done() {
			return nil
		}
		if len(again) == 0 && p.Moving == 0 && len(p.Wrong) > 0 {
			// Accepted, yet neither moved nor moving: ask again (a broker
			// that restarted forgets a move it had not started).
			again = slices.Clone(p.Wrong)
		}
		if o.WaitTimeout > 0 && elapsed >= o.WaitTimeout {
			return fmt.Errorf("log dirs: %d of %d replicas in their planned dir after %s: %w", p.InPlace, p.Planned, elapsed.Round(time.Second), ErrNotDone)
		}
		if err := o.Clock.Sleep(ctx, poll); err != nil {
			return fmt.Errorf("log dirs: %w: %w", ErrNotDone, err)
		}
	}
}
