package apply

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/topology"
)

// FuzzParsePlan: reassign apply's plan parser never panics; its errors are
// usage errors on one line; and a plan it accepts names at least one
// partition, each with a topic, a partition number and distinct replicas,
// leaving the leader to the workflow.
func FuzzParsePlan(f *testing.F) {
	paths, _ := filepath.Glob("../../../testdata/layouts/*.json")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{
		`{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[3,1]},{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`,
		`{"version":1,"partitions":[]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/d/0","any"]}]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/d/0"]}]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`,
		"Topic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n",
		"\ufeff{",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		moves, err := ParsePlan(strings.NewReader(body), "plan.json")
		if err != nil {
			if cmdutil.ExitCode(err) != cmdutil.ExitUsage || errkind.KindOf(err) != errkind.Usage {
				t.Fatalf("not a usage error: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if len(moves) == 0 {
			t.Fatal("an empty plan accepted")
		}
		for _, m := range moves {
			seen := map[int32]bool{}
			for _, r := range m.Replicas {
				if seen[r] {
					t.Fatalf("%+v: replica %d twice", m, r)
				}
				seen[r] = true
			}
			if m.Topic == "" || m.Partition < 0 || len(m.Replicas) == 0 {
				t.Fatalf("invalid move accepted: %+v", m)
			}
			// log_dirs, when kept, are one per replica and name a dir.
			if m.LogDirs != nil && (len(m.LogDirs) != len(m.Replicas) || !slices.ContainsFunc(m.LogDirs, func(d string) bool { return d != AnyDir })) {
				t.Fatalf("%+v: log_dirs kept that name no dir or not one per replica", m)
			}
		}
		if _, err := DirMoves(moves); err != nil {
			t.Fatalf("the dir moves of an accepted plan: %v", err)
		}
	})
}

// FuzzLoadState: the state file's reader never panics; its errors are
// usage errors about --state on one line; a state it accepts resumes
// (reconciles with a cluster and schedules its steps) without panicking,
// and the scheduler never picks a step that is not pending.
func FuzzLoadState(f *testing.F) {
	plan := []topology.Partition{applytest.Move("t", 0, 1, 4, 5), applytest.Move("t", 1, 2, 3)}
	good := &State{Schema: StateSchema, Plan: PlanDigest(plan), Steps: []Step{
		{Topic: "t", Partition: 0, Index: 1, Of: 2, From: []int32{1, 2, 3}, To: []int32{1, 4, 3}, Status: StepDone},
		{Topic: "t", Partition: 0, Index: 2, Of: 2, From: []int32{1, 4, 3}, To: []int32{1, 4, 5}, Status: StepSubmitted},
		{Topic: "t", Partition: 1, Index: 1, Of: 1, From: []int32{1, 2}, To: []int32{2, 3}, Status: StepPending},
	}}
	data, err := json.Marshal(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add(strings.Replace(string(data), `"done"`, `"gone"`, 1))
	f.Add(strings.Replace(string(data), `"step":2`, `"step":3`, 1))
	f.Add(`{"schema":"kplan.reassign.state/v1"}`)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		path := filepath.Join(dir, "state.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := LoadState(path, plan)
		if err != nil {
			if errkind.KindOf(err) != errkind.Usage || errkind.FieldOf(err) != "state" {
				t.Fatalf("not a usage error about state: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if st == nil {
			t.Fatal("an existing file read as none")
		}
		cur := map[topology.Key]topology.Partition{
			{Topic: "t", Partition: 0}: applytest.Part("t", 0, 1, 4, 3),
			{Topic: "t", Partition: 1}: applytest.Part("t", 1, 1, 2),
		}
		if st.reconcile(cur, map[topology.Key]topology.Ongoing{{Topic: "t", Partition: 0}: {Replicas: []int32{1, 4, 5}}}) != nil {
			return
		}
		for _, i := range NewScheduler(Limits{PerBroker: 1}).Next(st.Steps) {
			if st.Steps[i].Status != StepPending {
				t.Fatalf("picked step %d, %s", i, st.Steps[i].Status)
			}
		}
	})
}
