package reassign_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
	"github.com/kplan-dev/kplan/internal/topology"
)

// observedSkew is a hand-written kplan observe snapshot of 4 brokers in 2
// racks: orders (6 partitions, RF 3, about 200 KiB/s each, two consumer
// groups), logs (8, 50 KiB/s, one group), clicks (12, 10 KiB/s, one
// group) and audit (4, 1 KiB/s, none), the busy topics led from brokers
// 1 and 2. observedIdle is the same with traffic false.
const (
	observedSkew = "testdata/observed-skew-4.json"
	observedIdle = "testdata/observed-idle-4.json"
	observedLab  = "../audit/testdata/observed-lab.json"
)

// The summary of a load plan: bytes in, out, leader bytes and disk per
// broker before and after, beside the count plan's.
func TestLoadGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"observed-skew-4-load.txt", []string{"--from", observedSkew, "--balance", "load", "--tolerance", "0.1"}},
		{"observed-skew-4-load.json", []string{"--from", observedSkew, "--balance", "load", "--tolerance", "0.1", "-o", "json"}},
		{"observed-skew-4-load-cordon-4.txt", []string{"--from", observedSkew, "--balance", "load", "--tolerance", "0.15", "--cordon", "4"}},
		{"observed-skew-4-load-budget-3GiB.txt", []string{"--from", observedSkew, "--balance", "load", "--tolerance", "0.1", "--max-move-bytes", "3GiB"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := run(append([]string{"reassign"}, tc.args...)...)
			require.Equal(t, 0, code, errOut)
			golden.AssertString(t, tc.golden, out)
		})
	}
}

// --loads takes the rates from a snapshot beside another layout source:
// the same plan as --from the snapshot itself, and a layout without
// sizes takes the snapshot's.
func TestLoadsFlag(t *testing.T) {
	dir := t.TempDir()
	layout := filepath.Join(dir, "layout.json")
	f, err := os.Open(observedSkew)
	require.NoError(t, err)
	c, err := topology.Load(f, observedSkew)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	for i := range c.Partitions {
		c.Partitions[i].SizeBytes = -1
	}
	out, err := os.Create(layout)
	require.NoError(t, err)
	require.NoError(t, topology.WriteLayout(out, c))
	require.NoError(t, out.Close())

	code, viaFrom, errOut := run("reassign", "--from", observedSkew, "--balance", "load", "--tolerance", "0.1", "-o", "json")
	require.Equal(t, 0, code, errOut)
	code, viaLoads, errOut := run("reassign", "--from", layout, "--loads", observedSkew, "--balance", "load", "--tolerance", "0.1", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var a, b map[string]any
	require.NoError(t, json.Unmarshal([]byte(viaFrom), &a))
	require.NoError(t, json.Unmarshal([]byte(viaLoads), &b))
	assert.Equal(t, a["load"], b["load"])
	assert.Equal(t, a["replicas_moved"], b["replicas_moved"])
}

// A plan file of --balance load moves exactly the bytes the summary
// counts, and its final loads are those the summary reports.
func TestLoadPlanFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "plan.json")
	code, stdout, errOut := run("reassign", "--from", observedSkew, "--balance", "load", "--tolerance", "0.1", "--out", out, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var sum struct {
		BytesMoved int64 `json:"bytes_moved"`
		Load       struct {
			BytesMoved int64 `json:"bytes_moved"`
			Within     bool  `json:"within"`
		} `json:"load"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.True(t, sum.Load.Within)
	assert.Equal(t, sum.BytesMoved, sum.Load.BytesMoved)
	f, err := os.Open(observedSkew)
	require.NoError(t, err)
	c, err := topology.Load(f, observedSkew)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	pf, err := os.Open(out)
	require.NoError(t, err)
	plan, err := topology.Load(pf, out)
	require.NoError(t, pf.Close())
	require.NoError(t, err)
	var copied int64
	for _, p := range plan.Partitions {
		old := c.Partitions[c.Find(p.Key())]
		for _, r := range p.Replicas {
			if !containsID(old.Replicas, r) {
				copied += old.CopyBytes()
			}
		}
	}
	assert.Equal(t, sum.BytesMoved, copied)
}

// Refusals: one line naming the flag, exit 2.
func TestBadLoadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no loads", []string{"--from", sized, "--balance", "load"}, "--loads: --balance load needs each partition's produce and consumer bytes/s: " + sized + " is a layout, not a kplan observe snapshot (give one as --loads)"},
		{"no loads from stdin", []string{"--from", "-", "--balance", "load"}, "--loads: --balance load needs each partition's produce and consumer bytes/s: give a kplan observe snapshot (--out) as --loads, or as --from"},
		{"idle snapshot", []string{"--from", observedIdle, "--balance", "load"}, "--from: " + observedIdle + ": observe.traffic: false: the cluster had no traffic in the observed window, so the snapshot has no rates"},
		{"idle snapshot as --loads", []string{"--from", sized, "--loads", observedIdle, "--balance", "load"}, "--loads: " + observedIdle + ": observe.traffic: false"},
		{"loads not a snapshot", []string{"--from", sized, "--loads", sized, "--balance", "load"}, "--loads: --balance load needs each partition's produce and consumer bytes/s: " + sized + " is a layout"},
		{"loads missing", []string{"--from", sized, "--loads", "nope.json", "--balance", "load"}, "--loads: open nope.json: no such file or directory"},
		{"loads without load", []string{"--from", sized, "--loads", observedSkew}, "--loads: applies with --balance load only"},
		{"budget syntax", []string{"--from", observedSkew, "--balance", "load", "--max-move-bytes", "lots"}, `--max-move-bytes: "lots" is not a size`},
		{"no band", []string{"--from", observedSkew, "--balance", "load", "--tolerance", "0"}, "--tolerance: --balance load needs a band above 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(append([]string{"reassign"}, tc.args...)...)
			assert.Equal(t, cmdutil.ExitUsage, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
			assert.Equal(t, 1, countLines(errOut), errOut)
		})
	}
}

// The lab's own snapshot (a real kplan observe run): balanced already, so
// the plan copies nothing and every broker is within the band.
func TestLoadLabSnapshot(t *testing.T) {
	code, stdout, errOut := run("reassign", "--from", observedLab, "--balance", "load", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var sum struct {
		Load struct {
			BytesMoved int64 `json:"bytes_moved"`
			Within     bool  `json:"within"`
			PerBroker  []any `json:"per_broker"`
		} `json:"load"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.True(t, sum.Load.Within)
	assert.Zero(t, sum.Load.BytesMoved)
	assert.Len(t, sum.Load.PerBroker, 3)
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
