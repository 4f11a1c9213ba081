package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/topology"
)

type dirKey struct {
	topology.Key
	Broker int32
}

// dirFake is an applytest cluster with JBOD dirs, as Kafka behaves: a
// replica starts in the dir asked for before it existed (else the
// broker's first); a move asked for a replica the broker does not hold
// is refused with ErrReplicaNotYet and remembered; a move of a held
// replica becomes a future replica that replaces it after futurePolls
// ReplicaLogDirs calls.
type dirFake struct {
	*applytest.Admin
	dirs        map[int32][]string
	at          map[dirKey]string
	pref        map[dirKey]string
	future      map[dirKey]string
	polls       map[dirKey]int
	futurePolls int
	// fail makes every move to a dir fail with the error.
	fail  map[string]error
	calls []string
}

func newDirFake(f *applytest.Admin, dirs ...string) *dirFake {
	d := &dirFake{Admin: f, dirs: map[int32][]string{}, at: map[dirKey]string{}, pref: map[dirKey]string{}, future: map[dirKey]string{},
		polls: map[dirKey]int{}, futurePolls: 2, fail: map[string]error{}}
	for _, b := range f.Brokers {
		d.dirs[b.ID] = dirs
	}
	d.sync()
	return d
}

// sync gives every replica a dir, and drops those of removed replicas.
func (d *dirFake) sync() {
	held := map[dirKey]bool{}
	for _, p := range d.Parts {
		for _, b := range p.Replicas {
			k := dirKey{p.Key(), b}
			held[k] = true
			if _, ok := d.at[k]; !ok {
				dir, ok := d.pref[k]
				if !ok {
					dir = d.dirs[b][0]
				}
				d.at[k] = dir
			}
		}
	}
	for k := range d.at {
		if !held[k] {
			delete(d.at, k)
		}
	}
}

func (d *dirFake) ReplicaLogDirs(_ context.Context, filter func(string) bool) (map[int32][]string, []DirReplica, error) {
	d.sync()
	for k, dir := range d.future {
		if d.polls[k]--; d.polls[k] <= 0 {
			d.at[k] = dir
			delete(d.future, k)
		}
	}
	var out []DirReplica
	for k, dir := range d.at {
		if filter(k.Topic) {
			out = append(out, DirReplica{Key: k.Key, Broker: k.Broker, Dir: dir})
		}
	}
	for k, dir := range d.future {
		if filter(k.Topic) {
			out = append(out, DirReplica{Key: k.Key, Broker: k.Broker, Dir: dir, Future: true})
		}
	}
	return d.dirs, out, nil
}

func (d *dirFake) AlterReplicaDirs(_ context.Context, moves []DirMove) ([]error, error) {
	d.sync()
	errs := make([]error, len(moves))
	for i, m := range moves {
		k := dirKey{m.Key, m.Broker}
		_, held := d.at[k]
		d.calls = append(d.calls, fmt.Sprintf("%s held=%v", m, held))
		switch {
		case d.fail[m.Dir] != nil:
			errs[i] = d.fail[m.Dir]
		case !held:
			d.pref[k] = m.Dir
			errs[i] = ErrReplicaNotYet
		case d.at[k] != m.Dir:
			d.future[k], d.polls[k] = m.Dir, d.futurePolls
		}
	}
	return errs, nil
}

// jbodPlan moves a/0's replica from broker 2 to 3 into /b, and a/1's
// replica on broker 1 from /a to /b (an intra-broker move).
func jbodPlan() (*dirFake, []topology.Partition) {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2), applytest.Part("a", 1, 1, 2))
	f.FinishPerPoll = 1
	plan := []topology.Partition{applytest.Move("a", 0, 1, 3), applytest.Move("a", 1, 1, 2)}
	plan[0].LogDirs = []string{AnyDir, "/b"}
	plan[1].LogDirs = []string{"/b", AnyDir}
	return newDirFake(f, "/a", "/b"), plan
}

func TestExecuteDirs(t *testing.T) {
	d, plan := jbodPlan()
	var polls []DirProgress
	res, err := Execute(context.Background(), d, plan, Options{Yes: true, Clock: applytest.NewClock(), NoElect: true, Progress: func(e Event) {
		if e.Kind == EventDirs {
			polls = append(polls, *e.Result.Dirs)
		}
	}})
	require.NoError(t, err)
	assert.Equal(t, Done, res.Outcome)
	require.NotNil(t, res.Dirs)
	assert.Equal(t, DirProgress{Planned: 2, InPlace: 2, Wrong: []DirMove{}}, *res.Dirs)
	assert.Equal(t, "/b", d.at[dirKey{topology.Key{Topic: "a", Partition: 0}, 3}], "the new replica was created in its dir")
	assert.Equal(t, "/b", d.at[dirKey{topology.Key{Topic: "a", Partition: 1}, 1}], "the intra-broker move finished")
	// The replica on broker 3 did not exist when first asked, and is asked
	// again once it does.
	assert.Contains(t, d.calls, "a-0 on broker 3 to /b held=false")
	assert.Contains(t, d.calls, "a-0 on broker 3 to /b held=true")
	// Some poll saw the intra-broker copy in progress.
	assert.True(t, slices.ContainsFunc(polls, func(p DirProgress) bool { return p.Moving > 0 }), "%+v", polls)

	v, err := Verify(context.Background(), d, plan, Options{Clock: applytest.NewClock(), NoElect: true})
	require.NoError(t, err)
	assert.Equal(t, Done, v.Outcome)
}

func TestExecuteOnlyDirs(t *testing.T) {
	d, plan := jbodPlan()
	plan = plan[1:] // replicas in place, one replica changes dir
	_, err := Execute(context.Background(), d, plan, Options{Clock: applytest.NewClock()})
	require.Error(t, err, "not the lab, no --yes")
	assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	assert.ErrorContains(t, err, "1 replicas between log dirs")

	res, err := Execute(context.Background(), d, plan, Options{Yes: true, Clock: applytest.NewClock(), NoElect: true})
	require.NoError(t, err)
	assert.Equal(t, Done, res.Outcome)
	assert.Empty(t, d.Calls, "no reassignment for a dir change")
	assert.Equal(t, "/b", d.at[dirKey{topology.Key{Topic: "a", Partition: 1}, 1}])

	res, err = Execute(context.Background(), d, plan, Options{Yes: true, Clock: applytest.NewClock()})
	require.NoError(t, err)
	assert.Equal(t, NothingToDo, res.Outcome)
}

func TestVerifyDirs(t *testing.T) {
	d, plan := jbodPlan()
	plan = plan[1:]
	res, err := Verify(context.Background(), d, plan, Options{Clock: applytest.NewClock()})
	require.NoError(t, err)
	assert.Equal(t, Diverged, res.Outcome, "in /a, nothing moving")
	assert.Equal(t, []DirMove{{Key: topology.Key{Topic: "a", Partition: 1}, Broker: 1, Dir: "/b"}}, res.Dirs.Wrong)
	d.futurePolls = 5
	_, err = d.AlterReplicaDirs(context.Background(), res.Dirs.Wrong)
	require.NoError(t, err)
	res, err = Verify(context.Background(), d, plan, Options{Clock: applytest.NewClock()})
	require.NoError(t, err)
	assert.Equal(t, StillInProgress, res.Outcome, "a future replica is being copied")
	assert.Equal(t, 1, res.Dirs.Moving)
}

func TestDirErrors(t *testing.T) {
	t.Run("a dir the broker lacks", func(t *testing.T) {
		d, plan := jbodPlan()
		plan[0].LogDirs = []string{AnyDir, "/c"}
		_, err := Execute(context.Background(), d, plan, Options{Yes: true, Clock: applytest.NewClock()})
		require.Error(t, err)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.Equal(t, "log_dirs", errkind.FieldOf(err))
		assert.ErrorContains(t, err, "a-0: broker 3 has no log dir /c")
		assert.Empty(t, d.Calls, "nothing changed")
	})
	t.Run("wrong length", func(t *testing.T) {
		d, plan := jbodPlan()
		plan[0].LogDirs = []string{"/b"}
		_, err := Verify(context.Background(), d, plan, Options{Clock: applytest.NewClock()})
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.Equal(t, "log_dirs", errkind.FieldOf(err))
		assert.ErrorContains(t, err, "a-0: 1 log dirs for 2 replicas")
	})
	t.Run("a broker's storage error", func(t *testing.T) {
		d, plan := jbodPlan()
		storage := errors.New("KAFKA_STORAGE_ERROR: disk offline")
		d.fail["/b"] = storage
		_, err := Execute(context.Background(), d, plan, Options{Yes: true, Clock: applytest.NewClock()})
		require.Error(t, err)
		var de *DirError
		require.ErrorAs(t, err, &de)
		assert.ErrorIs(t, err, storage)
		assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
		assert.Equal(t, "log_dirs", errkind.FieldOf(err))
		assert.Equal(t, "log_dirs: a-0 on broker 3 to /b: KAFKA_STORAGE_ERROR: disk offline", err.Error())
	})
	t.Run("an admin without dirs", func(t *testing.T) {
		d, plan := jbodPlan()
		_, err := Execute(context.Background(), d.Admin, plan, Options{Yes: true, Clock: applytest.NewClock()})
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.Equal(t, "log_dirs", errkind.FieldOf(err))
	})
}

func TestParsePlanKeepsDirs(t *testing.T) {
	got, err := ParsePlan(stringsReader(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/a","any"]}]}`), "plan.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"/a", AnyDir}, got[0].LogDirs)
	_, err = ParsePlan(stringsReader(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/a"]}]}`), "plan.json")
	assert.Equal(t, "log_dirs", errkind.FieldOf(err))
	assert.ErrorContains(t, err, "t-0: 1 log dirs for 2 replicas")
	_, err = ParsePlan(stringsReader(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["","/a"]}]}`), "plan.json")
	assert.Equal(t, "log_dirs", errkind.FieldOf(err))
	assert.ErrorContains(t, err, "t-0: an empty dir for broker 1")
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
