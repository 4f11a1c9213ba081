package size_test

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
	"github.com/kplan-dev/kplan/internal/cli/size"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

// plansDir is the repository's plans/ directory.
const plansDir = "../../../plans/"

// runKplan runs the whole binary's command tree in process.
func runKplan(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	code := app.Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

type sizeJSON struct {
	Results []struct {
		Strategy    string                     `json:"strategy"`
		Feasible    bool                       `json:"feasible"`
		Partitions  int64                      `json:"partitions"`
		Brokers     int64                      `json:"brokers"`
		Binding     string                     `json:"binding"`
		Constraints map[string]json.RawMessage `json:"constraints"`
		Fixes       []struct{ Flag, Op, Value string }
	} `json:"results"`
}

// TestTable4 reproduces the paper's Table 4 from the shipped plan file.
func TestTable4(t *testing.T) {
	tests := []struct {
		r                      string
		maxP, maxB, minP, minB int64
	}{
		{"3", 213, 16, 40, 3},
		{"5", 128, 16, 40, 5},
	}
	for _, tt := range tests {
		t.Run("r="+tt.r, func(t *testing.T) {
			code, out, errOut := runKplan(t, "size", "--plan", plansDir+"raptis-prototype.yaml", "--replication-factor", tt.r, "-o", "json")
			require.Equal(t, 0, code, errOut)
			var got sizeJSON
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			require.Len(t, got.Results, 2)
			mn, mx := got.Results[0], got.Results[1]
			assert.Equal(t, "bromin", mn.Strategy)
			assert.Equal(t, [2]int64{tt.minP, tt.minB}, [2]int64{mn.Partitions, mn.Brokers})
			assert.Equal(t, "bromax", mx.Strategy)
			assert.Equal(t, [2]int64{tt.maxP, tt.maxB}, [2]int64{mx.Partitions, mx.Brokers})
			for _, r := range got.Results {
				assert.True(t, r.Feasible)
				assert.Equal(t, "replication_latency", r.Binding)
				assert.Len(t, r.Constraints, 5)
			}
			golden.AssertString(t, "prototype-r"+tt.r+".json", out)
		})
	}
}

func TestGoldenHumanFormats(t *testing.T) {
	for format, ext := range map[string]string{"table": "txt", "markdown": "md", "yaml": "yaml"} {
		t.Run(format, func(t *testing.T) {
			code, out, _ := runKplan(t, "size", "--plan", plansDir+"raptis-prototype.yaml", "-o", format)
			require.Equal(t, 0, code)
			golden.AssertString(t, "prototype."+ext, out)
		})
	}
}

func TestInfeasibleExit3WithOutputAndFixes(t *testing.T) {
	code, out, errOut := runKplan(t, "size", "--plan", plansDir+"raptis-prototype.yaml", "--consumers", "400", "-o", "json")
	assert.Equal(t, cmdutil.ExitFindings, code)
	assert.Empty(t, errOut, "the result speaks for itself")
	var got sizeJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	for _, r := range got.Results {
		assert.False(t, r.Feasible)
		assert.Equal(t, "replication_latency", r.Binding)
	}
	golden.AssertString(t, "infeasible.json", out)

	code, out, _ = runKplan(t, "size", "--plan", plansDir+"raptis-prototype.yaml", "--consumers", "400", "--strategy", "bromax")
	assert.Equal(t, cmdutil.ExitFindings, code)
	assert.Contains(t, out, "needs --max-brokers >= 30")
	assert.Contains(t, out, "needs --max-replication-latency >= 375ms")
}

func TestMSCNFLSeeded(t *testing.T) {
	args := []string{"size", "--plan", plansDir + "raptis-prototype.yaml", "--strategy", "ms-cnfl", "--seed", "7", "--draws", "5000", "-o", "json"}
	code, a, _ := runKplan(t, args...)
	require.Equal(t, 0, code, "a baseline that violates constraints is a finding about the baseline, not an error")
	_, b, _ := runKplan(t, args...)
	assert.Equal(t, a, b, "same seed, same output")
	assert.Contains(t, a, `"violation_rate"`)
	assert.Contains(t, a, `"draws": 5000`)
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	misspelt := write("misspelt.yaml", "throughput: 100MB/s\nconsumer: 40\n")
	badValue := write("badvalue.yaml", "throughput: 100MB/s\nconsumers: 40\nreplication-factor: 3\nmax-brokers: 16\npartition-produce-rate: fast\n")
	notMap := write("list.yaml", "- a\n- b\n")
	dup := write("dup.yaml", "consumers: 1\nconsumers: 2\n")
	protoBody, err := os.ReadFile(plansDir + "raptis-prototype.yaml")
	require.NoError(t, err)
	rfAboveB := write("rf.yaml", strings.Replace(string(protoBody), "replication-factor: 3 ", "replication-factor: 17", 1))
	badStrategy := write("strategy.yaml", "# a plan naming a strategy\nstrategy: bromid\n"+string(protoBody))
	proto := plansDir + "raptis-prototype.yaml"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"negative rate", []string{"--plan", proto, "--throughput", "-5MB/s"}, "--throughput: "},
		{"NaN rate", []string{"--plan", proto, "--throughput", "NaNMB/s"}, "--throughput: "},
		{"missing unit", []string{"--plan", proto, "--throughput", "100"}, "--throughput: "},
		{"unknown unit", []string{"--plan", proto, "--partition-produce-rate", "10XB/s"}, "--partition-produce-rate: "},
		{"zero consumers", []string{"--plan", proto, "--consumers", "0"}, "--consumers: "},
		{"zero duration", []string{"--plan", proto, "--election-time", "0s"}, "--election-time: "},
		{"duration without unit", []string{"--plan", proto, "--max-unavailability", "2000"}, "--max-unavailability: "},
		{"r above B", []string{"--plan", proto, "--replication-factor", "17"}, "--replication-factor: "},
		{"unknown strategy", []string{"--plan", proto, "--strategy", "bromid"}, "--strategy: "},
		{"unknown compat", []string{"--plan", proto, "--compat", "python"}, "--compat: "},
		{"bad output", []string{"--plan", proto, "-o", "xml"}, "--output: "},
		{"little half", []string{"--plan", proto, "--record-size", "100"}, "--record-size"},
		{"missing input", []string{"--consumers", "3"}, "--throughput is required"},
		{"plan missing", []string{"--plan", filepath.Join(dir, "none.yaml")}, "--plan: "},
		{"plan misspelt key", []string{"--plan", misspelt}, misspelt + `:2: unknown key "consumer" (did you mean "consumers"?)`},
		{"plan bad value", []string{"--plan", badValue}, badValue + ":5: partition-produce-rate: "},
		{"plan not a map", []string{"--plan", notMap}, notMap + ":1: "},
		{"plan duplicate", []string{"--plan", dup}, dup + `:2: duplicate key "consumers"`},
		// The domain's field error, spelled as the plan's line that set it.
		{"plan r above B", []string{"--plan", rfAboveB}, "kplan: " + rfAboveB + ":9: replication-factor: replication factor 17 exceeds --max-brokers 16\n"},
		{"unknown flag", []string{"--consumer", "3"}, "unknown flag"},
		{"sweep without vary", []string{"sweep", "--plan", proto}, "--vary is required"},
		{"sweep bad input", []string{"sweep", "--plan", proto, "--vary", "colour=1:2:1"}, "--vary: "},
		{"sweep reversed", []string{"sweep", "--plan", proto, "--vary", "consumers=9:1:1"}, "end is below start"},
		{"sweep too many", []string{"sweep", "--plan", proto, "--vary", "consumers=1:100000000:1"}, "points (max"},
		{"sweep r above B", []string{"sweep", "--plan", proto, "--vary", "replication-factor=3:20:1"}, "at 17"},
		{"sweep unknown strategy", []string{"sweep", "--plan", proto, "--vary", "consumers=1:2:1", "--strategy", "bromid"}, "--strategy: "},
		{"sweep strategy from plan", []string{"sweep", "--plan", badStrategy, "--vary", "consumers=1:2:1"}, badStrategy + ":2: strategy: "},
		{"sweep constraints in csv", []string{"sweep", "--plan", proto, "--vary", "consumers=1:2:1", "--constraints", "-o", "csv"}, "--constraints: "},
		{"sweep constraints in a table", []string{"sweep", "--plan", proto, "--vary", "consumers=1:2:1", "--constraints"}, "--constraints: "},
		{"sweep zero draws", []string{"sweep", "--plan", proto, "--vary", "consumers=1:2:1", "--draws", "0"}, "--draws: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runKplan(t, append([]string{"size"}, tt.args...)...)
			assert.Equal(t, cmdutil.ExitUsage, code)
			assert.Empty(t, out, "no partial output")
			assert.Contains(t, errOut, tt.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		})
	}
}

func TestFlagsOverridePlan(t *testing.T) {
	var got *size.Options
	f := cmdutil.NewTestFactory()
	cmd := size.NewCmdSize(f, func(_ context.Context, o *size.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--plan", plansDir + "raptis-prototype.yaml", "--max-brokers", "24", "--strategy", "bromin", "--compat", "kafka-hdd"})
	require.NoError(t, cmd.Execute())
	require.NotNil(t, got)
	assert.Equal(t, int64(24), got.Input.MaxBrokers, "flag wins")
	assert.Equal(t, int64(100_000_000), got.Input.Throughput, "file fills the rest")
	assert.Equal(t, "bromin", got.Strategy)
	assert.Equal(t, "kafka-hdd", string(got.Input.Compat))
}

func TestSweepOutputs(t *testing.T) {
	code, out, errOut := runKplan(t, "size", "sweep", "--plan", plansDir+"raptis-simulation.yaml", "--vary", "consumers=200:600:100")
	require.Equal(t, 0, code, errOut)
	golden.AssertString(t, "sweep-consumers.txt", out)

	code, out, _ = runKplan(t, "size", "sweep", "--plan", plansDir+"raptis-simulation.yaml", "--vary", "max-brokers=20:60:20", "-o", "csv")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4)
	assert.True(t, strings.HasPrefix(lines[0], "max-brokers,bromin_feasible,bromin_partitions"))

	png := filepath.Join(t.TempDir(), "fig.png")
	code, _, errOut = runKplan(t, "size", "sweep", "--plan", plansDir+"raptis-simulation.yaml", "--vary", "replication-factor=4:20:4", "--plot", png, "-o", "json")
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(png)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(b[:4]))
}

// FuzzPlanLoader feeds arbitrary plan files through the whole command: it
// must answer with a result or a usage error, never panic.
func FuzzPlanLoader(f *testing.F) {
	seed, err := os.ReadFile(plansDir + "raptis-prototype.yaml")
	require.NoError(f, err)
	f.Add(string(seed))
	f.Add("throughput: 100MB/s\nconsumer: 4\n")
	f.Add("- a\n")
	f.Add("consumers: [1, 2]\n")
	f.Add("max-brokers: 99999999999999999999\n")
	f.Add(": :\n\t")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(dir, "plan.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runKplan(t, "size", "--plan", p, "-o", "json")
		switch code {
		case 0, cmdutil.ExitFindings:
		case cmdutil.ExitUsage:
			if strings.Count(errOut, "\n") != 1 {
				t.Fatalf("usage error is not one line: %q", errOut)
			}
		default:
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}
