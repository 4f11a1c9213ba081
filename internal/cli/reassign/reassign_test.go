package reassign_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cli/reassign"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
	"github.com/kplan-dev/kplan/internal/topology"
)

const (
	layouts  = "../../../testdata/layouts/"
	kafkakit = layouts + "kafkakit-optimize-input.json"
)

func run(args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	return app.Run(context.Background(), f, args), out.String(), errOut.String()
}

// parseOptions parses `kplan reassign` flags (args, space-separated) into
// the options the command would run with, without running it.
func parseOptions(t *testing.T, args string) *reassign.Options {
	t.Helper()
	f := cmdutil.NewTestFactory()
	var got *reassign.Options
	cmd := reassign.NewCmdReassign(f, func(_ context.Context, o *reassign.Options) error { got = o; return nil })
	cmd.SetArgs(strings.Fields(args))
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)
	require.NoError(t, cmd.Execute())
	return got
}

// assertUsage runs kplan args and checks the usage error: exit 2, nothing
// on stdout, one line on stderr holding want.
func assertUsage(t *testing.T, want string, args ...string) {
	t.Helper()
	code, out, errOut := run(args...)
	assert.Equal(t, cmdutil.ExitUsage, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, want)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
}

func TestNewCmdReassign(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  string
		check func(*testing.T, *reassign.Options)
	}{
		{"defaults", "--from x.json", func(t *testing.T, o *reassign.Options) {
			assert.Equal(t, "x.json", o.Source.From)
			assert.Nil(t, o.Brokers)
			assert.False(t, o.SeedSet)
			assert.Equal(t, "table", string(o.Format))
		}},
		{"target", "--from x.json --brokers 1-3,7:rack-b --replication-factor 2 --seed 5", func(t *testing.T, o *reassign.Options) {
			assert.Equal(t, []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 7, Rack: "rack-b"}}, o.Brokers)
			assert.Equal(t, 2, o.ReplicationFactor)
			assert.True(t, o.SeedSet)
			assert.Equal(t, uint64(5), o.Seed)
		}},
		{"files", "--bootstrap-server k:9092 --out p.json --rollback r.json --election-out e.json --waves 3 --max-moves-per-wave 10 -o json", func(t *testing.T, o *reassign.Options) {
			assert.Equal(t, "k:9092", o.Source.BootstrapServers)
			assert.Equal(t, []string{"p.json", "r.json", "e.json"}, []string{o.Out, o.Rollback, o.ElectionOut})
			assert.Equal(t, 3, o.Waves)
			assert.Equal(t, 10, o.MaxMovesPerWave)
			assert.Equal(t, "json", string(o.Format))
		}},
		{"overlaps", "--from x.json --fix-overlaps --cell-size 4", func(t *testing.T, o *reassign.Options) {
			assert.True(t, o.FixOverlaps)
			assert.Equal(t, 4, o.CellSize)
		}},
		{"failover", "--from x.json --failover-domain rack --reorder-only", func(t *testing.T, o *reassign.Options) {
			assert.Equal(t, "rack", o.FailoverDomain)
			assert.True(t, o.ReorderOnly)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseOptions(t, tc.args)
			tc.check(t, got)
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{\"version\":1,\"partitions\":[\n {\"topic\":\"t\",\"partition\":0,\"replicas\":[1,1]}]}\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"brokers syntax", []string{"--from", kafkakit, "--brokers", "1,x"}, `--brokers: "x" is not a broker id`},
		{"brokers twice", []string{"--from", kafkakit, "--brokers", "1-3,2"}, "--brokers: broker 2 is listed twice"},
		{"too few brokers", []string{"--from", kafkakit, "--brokers", "1737"}, "--brokers: 1 target broker cannot hold replication factor 2"},
		{"rf too big", []string{"--from", kafkakit, "--brokers", "1737,1739", "--replication-factor", "3"}, "--replication-factor: 2 target brokers cannot hold replication factor 3"},
		{"waves without out", []string{"--from", kafkakit, "--waves", "2"}, "need --out FILE"},
		{"cell size alone", []string{"--from", kafkakit, "--cell-size", "3"}, "--cell-size: only applies with --fix-overlaps"},
		{"same file twice", []string{"--from", kafkakit, "--out", "a.json", "--rollback", "a.json"}, "--out and --rollback: both name a.json"},
		{"duplicate replica", []string{"--from", bad}, bad + ":2"},
		{"no source", nil, "no layout"},
		{"tolerance negative", []string{"--from", kafkakit, "--tolerance", "-0.1"}, "--tolerance: must be at least 0 and below 1"},
		{"tolerance whole", []string{"--from", kafkakit, "--tolerance", "1"}, "--tolerance: must be at least 0 and below 1"},
		{"max moves negative", []string{"--from", kafkakit, "--max-moves", "-1"}, "--max-moves: must be positive"},
		{"failover moves not a count", []string{"--from", kafkakit, "--failover-moves", "x"}, "--failover-moves: must be a count of moves or auto"},
		{"failover moves with reorder-only", []string{"--from", kafkakit, "--failover-moves", "3", "--reorder-only"}, "--failover-moves: moves replicas"},
		{"failover domain", []string{"--from", kafkakit, "--failover-domain", "zone"}, `--failover-domain: must be broker, rack, both or none, got "zone"`},
		{"rack domain without racks", []string{"--from", kafkakit, "--failover-domain", "rack"}, "--failover-domain: rack needs every target broker in a rack"},
		{"reorder-only with brokers", []string{"--from", kafkakit, "--reorder-only", "--brokers", "1737,1739"}, "--reorder-only: keeps every replica set, so it cannot change the brokers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertUsage(t, tc.want, append([]string{"reassign"}, tc.args...)...)
		})
	}
}

func TestKafkaKitGolden(t *testing.T) {
	code, out, errOut := run("reassign", "--from", kafkakit)
	require.Equal(t, 0, code, errOut)
	golden.AssertString(t, "kafkakit.txt", out)
}

// Racks fewer than the replication factor plan normally (they used to exit
// 2 blaming --brokers, a flag not given): one rack constrains nothing.
func TestFewerRacksThanReplicas(t *testing.T) {
	code, out, errOut := run("reassign", "--from", layouts+"one-rack.json", "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "--brokers")
	var sum struct {
		After struct {
			Replicas struct{ Min, Max int } `json:"replicas"`
		} `json:"after"`
		Notes []string `json:"notes"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum))
	assert.LessOrEqual(t, sum.After.Replicas.Max-sum.After.Replicas.Min, 1)
	assert.Contains(t, strings.Join(sum.Notes, "\n"), "1 rack for replication factor 2")
}

// On the lab's racks (a, b, c, a) an even spread does not fit rack a: the
// plan names the rack, shows the rack-aware targets and the --brokers that
// would allow an even spread.
func TestRackBoundGolden(t *testing.T) {
	code, out, errOut := run("reassign", "--from", layouts+"racks-4-brokers-3-racks.json")
	require.Equal(t, 0, code, errOut)
	golden.AssertString(t, "racks-4-brokers-3-racks.txt", out)
	assert.Contains(t, out, "3 (rack-aware targets, see Racks)")
	assert.Contains(t, out, "--brokers 1-3,4:new-rack-1")
}

// --cell-size 3 on demo-cells (9 brokers, 3 racks) used to deal every rack
// into its own cell and exit 2; cells now mix racks, and the count-balance
// bound stands beside the per-cell one.
func TestCellsGolden(t *testing.T) {
	code, out, errOut := run("reassign", "--from", layouts+"demo-cells.json", "--fix-overlaps", "--cell-size", "3", "-o", "markdown")
	require.Equal(t, 0, code, errOut)
	golden.AssertString(t, "demo-cells-cell-size-3.md", out)
	assert.Contains(t, out, "count-balance bound")
	assert.Equal(t, 3, strings.Count(out, "rack-0,rack-1,rack-2"), "every cell mixes the three racks")
}

// TestFiles writes every file, checks each parses as Kafka's format,
// that the plan applied to the input is balanced, that the rollback
// restores the input, and that two runs are byte-identical.
func TestFiles(t *testing.T) {
	var first map[string][]byte
	for range 2 {
		dir := t.TempDir()
		plan := filepath.Join(dir, "plan.json")
		args := []string{"reassign", "--from", kafkakit, "--brokers", "1737,1739,1743,1745,1746,1752,1754,1755,1756,1759,1760,1763,1764,1767,1768,1770,1792,1860,1872,1873,1874,1876,2000",
			"--out", plan, "--rollback", filepath.Join(dir, "rollback.json"), "--election-out", filepath.Join(dir, "elect.json"), "--waves", "3", "-o", "json"}
		code, out, errOut := run(args...)
		require.Equal(t, 0, code, errOut)
		var sum struct {
			ReplicasMoved int      `json:"replicas_moved"`
			LowerBound    int      `json:"lower_bound"`
			Files         []string `json:"files"`
			After         struct {
				Replicas struct{ Min, Max int } `json:"replicas"`
				Leaders  struct{ Min, Max int } `json:"leaders"`
			} `json:"after"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &sum))
		assert.Len(t, sum.Files, 6)
		assert.LessOrEqual(t, sum.After.Replicas.Max-sum.After.Replicas.Min, 1)
		assert.LessOrEqual(t, sum.After.Leaders.Max-sum.After.Leaders.Min, 1)
		assert.LessOrEqual(t, float64(sum.ReplicasMoved), 1.1*float64(sum.LowerBound))

		in := load(t, kafkakit)
		p := load(t, plan)
		after := in.Clone()
		for _, np := range p.Partitions {
			after.Partitions[after.Find(np.Key())].Replicas = np.Replicas
			assert.NotContains(t, np.Replicas, int32(1962), "drained broker in the plan")
		}
		rb := load(t, filepath.Join(dir, "rollback.json"))
		require.Len(t, rb.Partitions, len(p.Partitions))
		for _, op := range rb.Partitions {
			after.Partitions[after.Find(op.Key())].Replicas = op.Replicas
		}
		for i := range in.Partitions {
			assert.Equal(t, in.Partitions[i].Replicas, after.Partitions[i].Replicas)
		}
		var elect struct {
			Partitions []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
			} `json:"partitions"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "elect.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &elect))
		waves := 0
		for i := 1; i <= 3; i++ {
			w := load(t, filepath.Join(dir, "plan.wave-"+string(rune('0'+i))+".json"))
			waves += len(w.Partitions)
		}
		assert.Equal(t, len(p.Partitions), waves)

		files := map[string][]byte{}
		for _, name := range []string{"plan.json", "rollback.json", "elect.json", "plan.wave-1.json", "plan.wave-2.json", "plan.wave-3.json"} {
			files[name], err = os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
		}
		if first == nil {
			first = files
		} else {
			assert.Equal(t, first, files, "two runs differ")
		}
	}
}

// TestNothingHalfWritten: when one file cannot be written, none is.
func TestNothingHalfWritten(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	code, _, errOut := run("reassign", "--from", kafkakit, "--out", plan, "--rollback", filepath.Join(dir, "missing", "rollback.json"))
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "rollback.json")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "files left behind")
}

func load(t *testing.T, path string) *topology.Cluster {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // read-only
	c, err := topology.Load(f, path)
	require.NoError(t, err)
	return c
}

func TestParseBrokers(t *testing.T) {
	got, err := reassign.ParseBrokers("5,1-2:r1, 9:r2")
	require.NoError(t, err)
	assert.Equal(t, []topology.Broker{{ID: 1, Rack: "r1"}, {ID: 2, Rack: "r1"}, {ID: 5}, {ID: 9, Rack: "r2"}}, got)
	for _, bad := range []string{"", "1,,2", "-1", "3-1", "a", "1-x"} {
		_, err := reassign.ParseBrokers(bad)
		assert.Error(t, err, bad)
	}
}

// --max-moves caps the plan and the summary says what is left.
func TestMaxMovesSummary(t *testing.T) {
	code, out, errOut := run("reassign", "--from", kafkakit, "--max-moves", "40")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `replicas moved\s+(40|3\d)\n`, out)
	assert.Regexp(t, `left by --max-moves\s+\d+ moves in \d+ partitions`, out)
}
