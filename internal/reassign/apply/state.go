package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// StateSchema versions the state file of an apply.
const StateSchema = "kplan.reassign.state/v1"

// State is what an apply has done, saved after every change so that an
// apply cut short (even by SIGKILL) can go on with Options.Resume without
// submitting again what was submitted: the plan's steps with their
// statuses, and the throttle the apply set.
type State struct {
	Schema string `json:"schema"`
	// Plan is the plan's PlanDigest.
	Plan string `json:"plan_sha256"`
	// ThrottleBrokers and ThrottleTopics are where the apply set the
	// replication throttle (empty: none); a resumed apply removes it there
	// too once the plan is complete.
	ThrottleBrokers []int32  `json:"throttle_brokers"`
	ThrottleTopics  []string `json:"throttle_topics"`
	Steps           []Step   `json:"steps"`
	// Complete is set once every step is done.
	Complete bool `json:"complete"`
}

// Counts returns how many steps are done and submitted (in flight).
func (s *State) Counts() (done, submitted int) {
	for _, st := range s.Steps {
		switch st.Status {
		case StepDone:
			done++
		case StepSubmitted:
			submitted++
		}
	}
	return done, submitted
}

// ErrOtherPlan is wrapped by LoadState's error for the state file of
// another plan.
var ErrOtherPlan = errors.New("the state of another plan")

// LoadState reads a state file and checks it is for plan: a file that is
// not one or is for another plan (wrapping ErrOtherPlan) is a usage error
// about the field "state". A file that does not exist returns nil and no
// error.
func LoadState(path string, plan []topology.Partition) (*State, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, "state", err)
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil || s.Schema != StateSchema {
		return nil, errkind.Usagef("state", "%s: not a kplan apply state file (want schema %q)", path, StateSchema)
	}
	if s.Plan != PlanDigest(plan) {
		return nil, errkind.Usagef("state", "%s: %w", path, ErrOtherPlan)
	}
	if err := s.validate(plan); err != nil {
		return nil, errkind.Usagef("state", "%s: %w", path, err)
	}
	return &s, nil
}

// validate checks that the steps are what Execute writes: each plan
// partition's steps together, numbered 1 to Of, each starting where the
// one before ended, the last ending at the plan's target, with a known
// status.
func (s *State) validate(plan []topology.Partition) error {
	targets := map[topology.Key][]int32{}
	for _, m := range plan {
		targets[m.Key()] = m.Replicas
	}
	seen := map[topology.Key]bool{}
	for i, st := range s.Steps {
		k := st.Key()
		first := i == 0 || s.Steps[i-1].Key() != k
		switch {
		case st.Status != StepPending && st.Status != StepSubmitted && st.Status != StepDone:
			return fmt.Errorf("step %d: unknown status %q", i+1, st.Status)
		case targets[k] == nil:
			return fmt.Errorf("step %d: %s/%d is not in the plan", i+1, st.Topic, st.Partition)
		case first && seen[k], first && st.Index != 1, !first && st.Index != s.Steps[i-1].Index+1,
			st.Of < st.Index, !first && st.Of != s.Steps[i-1].Of:
			return fmt.Errorf("step %d: %s/%d's steps are not numbered 1 to %d in a row", i+1, st.Topic, st.Partition, st.Of)
		case len(st.To) == 0, !first && !slices.Equal(st.From, s.Steps[i-1].To):
			return fmt.Errorf("step %d: %s/%d's step does not start where the one before ended", i+1, st.Topic, st.Partition)
		case st.Index == st.Of && !slices.Equal(st.To, targets[k]):
			return fmt.Errorf("step %d: %s/%d's last step does not end at the plan's target", i+1, st.Topic, st.Partition)
		}
		seen[k] = true
		if last := i == len(s.Steps)-1 || s.Steps[i+1].Key() != k; last && st.Index != st.Of {
			return fmt.Errorf("step %d: %s/%d's steps stop at %d of %d", i+1, st.Topic, st.Partition, st.Index, st.Of)
		}
	}
	return nil
}

// SaveStateFile returns an Options.SaveState that writes the state to
// path atomically (a temporary file renamed over it).
func SaveStateFile(path string) func(*State) error {
	return func(s *State) error {
		data, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		return writeAtomic(path, append(data, '\n'))
	}
}

// StateDrift is a resumed apply's partition whose replicas are none of
// the states its steps lead through: something else changed it.
type StateDrift struct {
	Partition topology.Key
	Now       []int32
	// Moving is the target of a reassignment in progress that is no step
	// of this apply (nil: none in progress).
	Moving []int32
}

func (d *StateDrift) Error() string {
	p := fmt.Sprintf("%s/%d", d.Partition.Topic, d.Partition.Partition)
	if d.Moving != nil {
		return fmt.Sprintf("cannot resume: %s is being reassigned to [%s], which is no step of this apply; cancel it or make a new plan", p, idList(d.Moving))
	}
	return fmt.Sprintf("cannot resume: %s has replicas [%s], which is no step of this apply (changed since); make a new plan", p, idList(d.Now))
}

// reconcile sets the statuses of a resumed apply's steps from the
// cluster: a partition with its last step's replicas and nothing moving
// it has every step done; one being reassigned to a step's replicas has
// that step submitted and the earlier ones done; one with a step's From
// replicas and nothing moving it has the earlier steps done and that one
// pending (submitted before, then cancelled: it is submitted again). A
// step recorded done never goes back, and a partition in none of these
// states is a StateDrift.
func (s *State) reconcile(current map[topology.Key]topology.Partition, ongoing map[topology.Key]topology.Ongoing) error {
	for i := 0; i < len(s.Steps); {
		j := i
		for j < len(s.Steps) && s.Steps[j].Key() == s.Steps[i].Key() {
			j++
		}
		steps := s.Steps[i:j]
		k := steps[0].Key()
		now := current[k].Replicas
		at := -1 // the first step not done
		status := StepPending
		o, moving := ongoing[k]
		switch {
		case moving:
			target := ongoingTarget(o)
			for x, st := range steps {
				if slices.Equal(st.To, target) {
					at, status = x, StepSubmitted
					break
				}
			}
			if at < 0 {
				return &StateDrift{Partition: k, Now: now, Moving: target}
			}
		case slices.Equal(now, steps[len(steps)-1].To):
			at = len(steps)
		default:
			for x, st := range steps {
				if slices.Equal(st.From, now) {
					at = x
					break
				}
				if finishing(now, st) {
					at, status = x, StepSubmitted
					break
				}
			}
			if at < 0 {
				return &StateDrift{Partition: k, Now: now}
			}
		}
		for x := range steps {
			switch {
			case x < at:
				steps[x].Status = StepDone
			case steps[x].Status == StepDone:
				return &StateDrift{Partition: k, Now: now}
			case x == at:
				steps[x].Status = status
			default:
				steps[x].Status = StepPending
			}
		}
		i = j
	}
	return nil
}

// ongoingTarget is the target of a reassignment in progress: Kafka lists
// its replicas as the target's followed by those being removed.
func ongoingTarget(o topology.Ongoing) []int32 {
	return slices.DeleteFunc(slices.Clone(o.Replicas), func(b int32) bool { return slices.Contains(o.Removing, b) })
}

// finishing reports whether replicas are those of step st finishing: its
// target's and some it removes, as metadata shows them for a moment after
// the controller ended the reassignment (ListPartitionReassignments no
// longer lists it, metadata does not yet show the removal).
func finishing(replicas []int32, st Step) bool {
	if len(replicas) <= len(st.To) {
		return false
	}
	for _, b := range st.To {
		if !slices.Contains(replicas, b) {
			return false
		}
	}
	for _, b := range replicas {
		if !slices.Contains(st.To, b) && !slices.Contains(st.From, b) {
			return false
		}
	}
	return true
}
