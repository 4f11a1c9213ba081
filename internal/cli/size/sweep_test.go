package size_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

const simPlan = plansDir + "raptis-simulation.yaml"

// sweepJSON is the part of kplan.size.sweep/v2 the tests read.
type sweepJSON struct {
	Schema     string   `json:"schema"`
	Strategies []string `json:"strategies"`
	MSCNFL     *struct {
		Draws int    `json:"draws"`
		Seed  uint64 `json:"seed"`
	} `json:"ms_cnfl"`
	Points []struct {
		Value   int64 `json:"value"`
		Results []struct {
			Strategy             string                     `json:"strategy"`
			Feasible             bool                       `json:"feasible"`
			Partitions           int64                      `json:"partitions"`
			Brokers              int64                      `json:"brokers"`
			ReplicasPerBroker    float64                    `json:"replicas_per_broker"`
			ReplicationLatencyMs float64                    `json:"replication_latency_ms"`
			UnavailabilityMs     float64                    `json:"unavailability_ms"`
			FeasibleRate         *float64                   `json:"feasible_rate"`
			Constraints          map[string]json.RawMessage `json:"constraints"`
			MSCNFL               json.RawMessage            `json:"ms_cnfl"`
		} `json:"results"`
	} `json:"points"`
}

func sweep(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runKplan(t, append([]string{"size", "sweep", "--plan", simPlan}, args...)...)
	require.Equal(t, 0, code, errOut)
	return out
}

// TestSweepStrategySelects is the regression test for sweeps that always ran
// MS-CNFL: --strategy takes kplan size's values and the sweep solves exactly
// those, in every output.
func TestSweepStrategySelects(t *testing.T) {
	tests := []struct {
		strategy  string
		want      []string
		csvPrefix []string
		table     string
	}{
		{"bromin", []string{"bromin"}, []string{"bromin"}, "CONSUMERS  BROMIN P  BROMIN b\n"},
		{"bromax", []string{"bromax"}, []string{"bromax"}, "CONSUMERS  BROMAX P  BROMAX b\n"},
		{"both", []string{"bromin", "bromax"}, []string{"bromin", "bromax"}, "CONSUMERS  BROMIN P  BROMIN b  BROMAX P  BROMAX b\n"},
		{"ms-cnfl", []string{"ms-cnfl"}, []string{"ms_cnfl"}, "CONSUMERS  MS-CNFL P  MS-CNFL b  MS-CNFL OK%\n"},
		{"all", []string{"bromin", "bromax", "ms-cnfl"}, []string{"bromin", "bromax", "ms_cnfl"}, "MS-CNFL b  MS-CNFL OK%\n"},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			args := []string{"--vary", "consumers=200:600:100", "--strategy", tt.strategy, "--draws", "50"}
			var got sweepJSON
			require.NoError(t, json.Unmarshal([]byte(sweep(t, append(args, "-o", "json")...)), &got))
			assert.Equal(t, tt.want, got.Strategies)
			assert.Equal(t, tt.strategy == "ms-cnfl" || tt.strategy == "all", got.MSCNFL != nil, "draws and seed when ms-cnfl ran")
			require.Len(t, got.Points, 5)
			for _, p := range got.Points {
				var names []string
				for _, r := range p.Results {
					names = append(names, r.Strategy)
				}
				assert.Equal(t, tt.want, names, "at %d", p.Value)
			}

			rows, err := csv.NewReader(strings.NewReader(sweep(t, append(args, "-o", "csv")...))).ReadAll()
			require.NoError(t, err)
			var prefixes []string
			for _, col := range rows[0][1:] {
				if p, ok := strings.CutSuffix(col, "_feasible"); ok {
					prefixes = append(prefixes, p)
				}
			}
			assert.Equal(t, tt.csvPrefix, prefixes)

			assert.Contains(t, sweep(t, args...), tt.table)
		})
	}
	t.Run("size takes the same values", func(t *testing.T) {
		code, out, errOut := runKplan(t, "size", "--plan", plansDir+"raptis-prototype.yaml", "--strategy", "all", "--draws", "50", "-o", "json")
		require.Equal(t, 0, code, errOut)
		var got sizeJSON
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		var names []string
		for _, r := range got.Results {
			names = append(names, r.Strategy)
		}
		assert.Equal(t, []string{"bromin", "bromax", "ms-cnfl"}, names)
	})
}

// TestSweepJSONCompact is the regression test for sweeps repeating the full
// constraint object on every point: by default a point carries P, b, the
// binding constraint and the three loads; --constraints adds the checks and
// the MS-CNFL distribution, with the same numbers.
func TestSweepJSONCompact(t *testing.T) {
	args := []string{"--vary", "consumers=200:600:100", "--draws", "50", "-o", "json"}
	compactOut, fullOut := sweep(t, args...), sweep(t, append(args, "--constraints")...)
	var compact, full sweepJSON
	require.NoError(t, json.Unmarshal([]byte(compactOut), &compact))
	require.NoError(t, json.Unmarshal([]byte(fullOut), &full))
	assert.Equal(t, "kplan.size.sweep/v2", compact.Schema)
	assert.NotContains(t, compactOut, `"constraints"`)
	assert.NotContains(t, compactOut, `"violation_rate"`)
	assert.Less(t, 3*len(compactOut), len(fullOut), "the checks are most of a full sweep")

	require.Len(t, full.Points, len(compact.Points))
	for i, p := range compact.Points {
		for j, r := range p.Results {
			f := full.Points[i].Results[j]
			assert.Len(t, f.Constraints, 5, "--constraints: every check")
			assert.Equal(t, f.Strategy == "ms-cnfl", len(f.MSCNFL) > 0, "--constraints: the ms-cnfl distribution")
			assert.Equal(t, r.Strategy == "ms-cnfl", r.FeasibleRate != nil)
			var os struct{ Value float64 }
			require.NoError(t, json.Unmarshal(f.Constraints["os_load"], &os))
			assert.Equal(t, os.Value, r.ReplicasPerBroker, "the compact load is the check's value")
			r.Constraints, r.MSCNFL, f.Constraints, f.MSCNFL = nil, nil, nil, nil
			assert.Equal(t, f, r, "the same numbers with and without --constraints")
		}
	}
}

// TestSweepCSV: one header and one row per point, columns per strategy, the
// same numbers as the JSON.
func TestSweepCSV(t *testing.T) {
	args := []string{"--vary", "consumers=400:1600:300", "--strategy", "both"}
	out := sweep(t, append(args, "-o", "csv")...)
	golden.AssertString(t, "sweep-consumers-both.csv", out)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	var js sweepJSON
	require.NoError(t, json.Unmarshal([]byte(sweep(t, append(args, "-o", "json")...)), &js))
	require.Len(t, rows, 1+len(js.Points))
	assert.Equal(t, []string{"consumers",
		"bromin_feasible", "bromin_partitions", "bromin_brokers", "bromin_replication_latency_ms", "bromin_unavailability_ms", "bromin_replicas_per_broker",
		"bromax_feasible", "bromax_partitions", "bromax_brokers", "bromax_replication_latency_ms", "bromax_unavailability_ms", "bromax_replicas_per_broker",
	}, rows[0])
	f := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		return v
	}
	for i, p := range js.Points {
		row := rows[i+1]
		assert.Equal(t, strconv.FormatInt(p.Value, 10), row[0])
		for j, r := range p.Results {
			c := row[1+6*j:]
			assert.Equal(t, strconv.FormatBool(r.Feasible), c[0])
			assert.Equal(t, strconv.FormatInt(r.Partitions, 10), c[1])
			assert.Equal(t, strconv.FormatInt(r.Brokers, 10), c[2])
			assert.Equal(t, []float64{r.ReplicationLatencyMs, r.UnavailabilityMs, r.ReplicasPerBroker}, []float64{f(c[3]), f(c[4]), f(c[5])})
		}
	}
}

// TestSweepRangeEndsAtMaxInt64: a range ending next to math.MaxInt64 has its
// points and ends (stepping past the end used to overflow and never stop).
func TestSweepRangeEndsAtMaxInt64(t *testing.T) {
	out := sweep(t, "--vary", "consumers=9223372036854775800:9223372036854775807:5", "--strategy", "bromax", "-o", "csv")
	assert.Equal(t, []string{"consumers,bromax_feasible", "9223372036854775800,false", "9223372036854775805,false"},
		firstColumns(out, 2))
}

func firstColumns(csvText string, n int) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(csvText), "\n") {
		out = append(out, strings.Join(strings.SplitN(line, ",", n+1)[:n], ","))
	}
	return out
}

// BenchmarkSweepCLI is the CLI path of docs/BENCHMARKS.md's sweep target:
// the whole command (flags, plan file, solving, rendering) for a
// 100,000-point BroMin+BroMax sweep, output to io.Discard.
func BenchmarkSweepCLI(b *testing.B) {
	for _, format := range []string{"csv", "json"} {
		b.Run(format, func(b *testing.B) {
			f := cmdutil.NewTestFactory()
			f.IOStreams.Out = io.Discard
			args := []string{"size", "sweep", "--plan", simPlan, "--vary", "max-handles=1000:100999:1", "--strategy", "both", "-o", format}
			for b.Loop() {
				if code := app.Run(context.Background(), f, args); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}
