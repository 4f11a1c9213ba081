package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
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
		}
	})
}
