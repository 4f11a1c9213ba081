package generate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cli/generate"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/topology"
)

func run(args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	return app.Run(context.Background(), f, args), out.String(), errOut.String()
}

func TestFlagsToOptions(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	var got *generate.Options
	cmd := generate.NewCmdGenerate(f, func(_ context.Context, o *generate.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"layout", "--brokers", "12", "--first-id", "1001", "--topics", "5", "--partitions", "50", "--replication-factor", "2",
		"--racks", "3", "--skew", "1.5", "--cells", "2", "--scatter", "0.25", "--uneven", "0.5", "--seed", "42", "--out", "x.json"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, topology.GenOptions{Brokers: 12, FirstID: 1001, Topics: 5, Partitions: 50, ReplicationFactor: 2,
		Racks: 3, Skew: 1.5, Cells: 2, Scatter: 0.25, Uneven: 0.5}, got.Layout)
	assert.Equal(t, uint64(42), got.Seed)
	assert.Equal(t, "x.json", got.Out)
}

func TestLayoutToStdoutAndFile(t *testing.T) {
	args := []string{"generate", "layout", "--brokers", "4", "--topics", "2", "--partitions", "6", "--replication-factor", "2", "--seed", "3"}
	code, out, errOut := run(args...)
	require.Equal(t, 0, code, errOut)
	c, err := topology.Load(strings.NewReader(out), "stdout")
	require.NoError(t, err)
	assert.Len(t, c.Partitions, 6)
	assert.Len(t, c.Brokers, 4)
	_, again, _ := run(args...)
	assert.Equal(t, out, again, "same seed, same file")
	other4 := append(slices.Clone(args[:len(args)-1]), "4")
	_, other, _ := run(other4...)
	assert.NotEqual(t, out, other, "another seed, another layout")

	path := filepath.Join(t.TempDir(), "l.json")
	code, stdout, errOut := run(append(args, "--out", path)...)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, out, string(b))
	assert.Contains(t, stdout, "kplan generate layout: wrote "+path)
	assert.Contains(t, stdout, "BROKERS  RACKS  TOPICS  PARTITIONS  REPLICATION FACTOR  SEED\n4        none   2       6           2                   3\n")

	// The summary honours -o like every other verb's data.
	code, stdout, errOut = run(append(args, "--out", path, "-o", "json")...)
	require.Equal(t, 0, code, errOut)
	var sum generate.Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.Equal(t, generate.Summary{Schema: "kplan.generate.layout/v1", Out: path, Bytes: len(b), Brokers: 4, Topics: 2, Partitions: 6, ReplicationFactor: 2, Seed: 3}, sum)

	// The audit reads it: the round trip demos rely on.
	code, _, errOut = run("audit", "--from", path)
	assert.Equal(t, 0, code, errOut)
}

func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--brokers", "0"}, "--brokers: want at least 1"},
		{[]string{"--topics", "10", "--partitions", "5"}, "--partitions: want at least one per topic (10)"},
		{[]string{"--brokers", "2", "--replication-factor", "3"}, "--replication-factor: 3 is above the 2 brokers of a cell"},
		{[]string{"--scatter", "2"}, "--scatter: want a fraction in 0..1"},
		{[]string{"--first-id", "-1"}, "--first-id: -1 is out of range"},
		{[]string{"--out", filepath.Join(dir, "no", "such.json")}, "--out: "},
		{[]string{"--brokers", "x"}, `invalid argument "x" for "--brokers" flag`},
		{[]string{"-o", "json"}, "--output: the summary is printed only with --out"},
		{[]string{"--out", filepath.Join(dir, "x.json"), "-o", "xml"}, "--output: "},
		{[]string{"--sizes", "zipf"}, `--sizes: "zipf": want lognormal:median=SIZE,sigma=X or pareto:alpha=X,min=SIZE`},
		{[]string{"--sizes", "lognormal:median=0"}, `--sizes: median: "0" is not a size`},
	} {
		code, out, errOut := run(append([]string{"generate", "layout"}, tt.args...)...)
		assert.Equal(t, cmdutil.ExitUsage, code, tt.args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, tt.want)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing half-written")
}

// --sizes draws sizes from the seed: the same flags give the same file,
// every partition sized, and the placement that of the run without sizes.
func TestLayoutSizes(t *testing.T) {
	args := []string{"generate", "layout", "--brokers", "6", "--racks", "2", "--topics", "3", "--partitions", "30", "--replication-factor", "2", "--seed", "9"}
	_, plain, _ := run(args...)
	code, sized, errOut := run(append(args, "--sizes", "lognormal:median=1GiB,sigma=2")...)
	require.Equal(t, 0, code, errOut)
	_, again, _ := run(append(args, "--sizes", "lognormal:median=1GiB,sigma=2")...)
	assert.Equal(t, sized, again)
	a, err := topology.LoadJSON([]byte(plain), "plain.json")
	require.NoError(t, err)
	b, err := topology.LoadJSON([]byte(sized), "sized.json")
	require.NoError(t, err)
	for i := range a.Partitions {
		assert.Equal(t, a.Partitions[i].Replicas, b.Partitions[i].Replicas)
		assert.Equal(t, int64(-1), a.Partitions[i].SizeBytes)
		assert.Positive(t, b.Partitions[i].SizeBytes)
	}
}
