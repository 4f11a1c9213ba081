package reassign

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
)

// runAt runs `kplan reassign apply` on the plan file path, on a fake
// cluster, and returns the exit code, stderr and the error's one line.
func runAt(t *testing.T, adm *applytest.Admin, path string, mod func(*ApplyOptions)) (int, string, string) {
	t.Helper()
	ios, _, _, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	o := &ApplyOptions{IO: ios, f: f, Format: report.Table, Plan: path, Mode: apply.ModeExecute, Yes: true,
		MaxInflightPerBroker: apply.DefaultMaxInflightPerBroker, MaxInflight: apply.DefaultMaxInflight,
		Options: target.Options{BootstrapServers: "k1:9092", Timeout: time.Second, LabDir: t.TempDir()}, Poll: time.Second, admin: adm, clock: applytest.NewClock()}
	if mod != nil {
		mod(o)
	}
	err := runApply(context.Background(), o)
	msg := ""
	if err != nil && !errors.Is(err, errkind.ErrSilent) {
		msg = err.Error()
	}
	return cmdutil.ExitCode(err), errOut.String(), strings.ReplaceAll(msg, filepath.Dir(path), "DIR")
}

// threeBrokers holds a/0..a/2 on brokers 1,2 with racks; the plan moves
// each to 1,3.
func threeBrokers() *applytest.Admin {
	f := applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2), applytest.Part("a", 1, 1, 2), applytest.Part("a", 2, 2, 1))
	f.Brokers[0].Rack, f.Brokers[1].Rack, f.Brokers[2].Rack = "r1", "r2", "r3"
	f.FinishPerPoll = 1
	return f
}

const threeMoves = `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,3]},{"topic":"a","partition":1,"replicas":[1,3]},{"topic":"a","partition":2,"replicas":[3,1]}]}`

func writePlan(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(path, []byte(threeMoves), 0o600))
	return path
}

func planOf(t *testing.T, path string) []topology.Partition {
	t.Helper()
	r, err := os.Open(path)
	require.NoError(t, err)
	defer r.Close() //nolint:errcheck // read-only
	plan, err := apply.ParsePlan(r, path)
	require.NoError(t, err)
	return plan
}

// The drift guard through the command: the sidecar beside the plan (as
// the plan command writes it), one partition reassigned between plan and
// apply: exit 4 naming it, nothing changed; --ignore-drift applies it;
// --source takes the layout the plan was computed from instead.
func TestApplyDrift(t *testing.T) {
	path := writePlan(t)
	orig := threeBrokers()
	c, err := orig.Snapshot(context.Background(), func(string) bool { return true })
	require.NoError(t, err)
	_, err = apply.WriteSourceFile(path, c, planOf(t, path))
	require.NoError(t, err)
	layout := filepath.Join(t.TempDir(), "layout.json")
	data, err := json.Marshal(c)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(layout, data, 0o600))

	drifted := func() *applytest.Admin {
		f := threeBrokers()
		f.Parts[1].Replicas = []int32{2, 1}
		return f
	}
	f := drifted()
	code, _, msg := runAt(t, f, path, nil)
	assert.Equal(t, cmdutil.ExitRefused, code)
	assert.Equal(t, "plan DIR/plan.json: the cluster changed since the plan was made: a/1 has replicas [2,1], the plan was made from [1,2]; make a new plan, or apply this one anyway with --ignore-drift", msg)
	assert.Empty(t, f.Calls)

	code, _, msg = runAt(t, drifted(), path, func(o *ApplyOptions) { o.Source = layout })
	assert.Equal(t, cmdutil.ExitRefused, code)
	assert.Contains(t, msg, "a/1 has replicas [2,1]")

	f = drifted()
	code, _, msg = runAt(t, f, path, func(o *ApplyOptions) { o.IgnoreDrift = true })
	assert.Equal(t, cmdutil.ExitOK, code, msg)
	assert.Equal(t, []int32{1, 3}, f.Parts[1].Replicas)

	f = threeBrokers()
	code, _, msg = runAt(t, f, path, nil)
	assert.Equal(t, cmdutil.ExitOK, code, msg)
}

// Resume through the command: an apply killed after its first request
// (one move per broker at a time: three waves) leaves its state beside
// the plan; apply without --resume refuses to start over (exit 4), with
// --resume it completes, submitting no move twice, and removes the
// throttle.
func TestApplyResume(t *testing.T) {
	path := writePlan(t)
	f := threeBrokers()
	f.FailReassignAfter = 1
	caps := func(o *ApplyOptions) { o.MaxInflightPerBroker, o.Throttle = 1, 1000 }
	code, errOut, msg := runAt(t, f, path, caps)
	t.Logf("killed:\n%s%s", errOut, msg)
	assert.Equal(t, cmdutil.ExitRuntime, code)
	assert.Contains(t, msg, "killed")
	assert.FileExists(t, apply.StatePath(path))
	f.FailReassignAfter = 0

	calls := len(f.Calls)
	code, _, msg = runAt(t, f, path, caps)
	t.Logf("again:\n%s", msg)
	assert.Equal(t, cmdutil.ExitRefused, code)
	assert.Equal(t, "--resume: DIR/plan.kplan-state.json holds an apply of this plan that did not finish (1 of 3 steps done): go on with --resume, or delete the file to start over", msg)
	assert.Len(t, f.Calls, calls)

	code, errOut, msg = runAt(t, f, path, func(o *ApplyOptions) { caps(o); o.Resume = true })
	t.Logf("--resume:\n%s", errOut)
	assert.Equal(t, cmdutil.ExitOK, code, msg)
	assert.Contains(t, errOut, "wave 2: the controller accepted 1 more moves (3 of 3 submitted)")
	seen := map[string]bool{}
	for _, c := range f.Calls {
		if strings.HasPrefix(c, "Reassign ") {
			assert.False(t, seen[c], "%s submitted twice", c)
			seen[c] = true
		}
	}
	assert.Len(t, seen, 3)
	assert.Equal(t, "ClearThrottle [1 2 3] [a]", f.Calls[len(f.Calls)-1])

	code, _, msg = runAt(t, threeBrokers(), writePlan(t), func(o *ApplyOptions) { o.Resume = true })
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, msg, "--resume: no state file")
}

// Interrupted with moves not yet submitted, apply says --resume submits
// them.
func TestApplyInterruptedWaves(t *testing.T) {
	path := writePlan(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := applytest.NewClock()
	clock.Cancel = cancel
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	o := &ApplyOptions{IO: ios, f: f, Format: report.Table, Plan: path, Mode: apply.ModeExecute, Yes: true, MaxInflightPerBroker: 1,
		Options: target.Options{BootstrapServers: "k1:9092", Timeout: time.Second, LabDir: t.TempDir()}, Poll: time.Second, admin: threeBrokers(), clock: clock}
	err := runApply(ctx, o)
	assert.Equal(t, cmdutil.ExitRuntime, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, "; 1 of 3 moves were not submitted yet: kplan reassign apply "+path+" --resume submits them; follow it with")
}
