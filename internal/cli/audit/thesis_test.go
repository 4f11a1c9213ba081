package audit_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/partitioner"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

type group struct {
	brokers []int32
	topics  []string
}

// TestThesisFigures audits the thesis's example clusters (Burato 2019,
// ch. 3) as bundled layouts and checks their max groups and overlaps, then
// pins the whole report as golden text and JSON.
func TestThesisFigures(t *testing.T) {
	tests := []struct {
		file     string
		groups   []group
		overlaps map[[2]int][]int32
		finding  string // a rule + subject that must be reported
	}{
		{"thesis-fig3.4-x.json", []group{{[]int32{1, 2, 3}, []string{"A", "B", "C"}}}, nil, ""},
		{"thesis-fig3.4-y.json", []group{{[]int32{1, 2}, []string{"A", "C"}}, {[]int32{3}, []string{"B"}}}, nil, ""},
		{"thesis-fig3.5-z.json", []group{{[]int32{1, 2}, []string{"A", "C"}}, {[]int32{2}, []string{"B"}}},
			map[[2]int][]int32{{1, 2}: {2}}, "partial-overlap groups 1,2"},
		{"thesis-fig3.7.json", []group{
			{[]int32{1}, []string{"t001"}}, {[]int32{2}, []string{"t010"}}, {[]int32{1, 2}, []string{"t011"}}, {[]int32{3}, []string{"t100"}},
			{[]int32{1, 3}, []string{"t101"}}, {[]int32{2, 3}, []string{"t110"}}, {[]int32{1, 2, 3}, []string{"t111"}},
		}, map[[2]int][]int32{
			{1, 3}: {1}, {1, 5}: {1}, {1, 7}: {1}, {2, 3}: {2}, {2, 6}: {2}, {2, 7}: {2}, {3, 5}: {1}, {3, 6}: {2}, {3, 7}: {1, 2},
			{4, 5}: {3}, {4, 6}: {3}, {4, 7}: {3}, {5, 6}: {3}, {5, 7}: {1, 3}, {6, 7}: {2, 3},
		}, "partial-overlap groups 6,7"},
		{"thesis-fig3.8.json", []group{{[]int32{1, 2, 3}, []string{"A", "B"}}}, nil, "uneven-spread B"},
		{"thesis-6.4.json", []group{{[]int32{1, 2}, []string{"A"}}, {[]int32{2, 3}, []string{"B"}}},
			map[[2]int][]int32{{1, 2}: {2}}, "partial-overlap groups 1,2"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			code, out, errOut := run("", "audit", "--from", layouts+tt.file, "-o", "json")
			require.Equal(t, 0, code, errOut)
			var r auditJSON
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			require.Len(t, r.MaxGroups, len(tt.groups))
			for i, g := range tt.groups {
				assert.Equal(t, g.brokers, r.MaxGroups[i].Brokers, "group %d", i+1)
				assert.Equal(t, g.topics, r.MaxGroups[i].Topics, "group %d", i+1)
			}
			got := map[[2]int][]int32{}
			for _, o := range r.Overlaps {
				got[o.Groups] = o.SharedBrokers
			}
			if tt.overlaps == nil {
				assert.Empty(t, got, "no overlap")
			} else {
				assert.Equal(t, tt.overlaps, got)
			}
			if tt.finding != "" {
				var rules []string
				for _, f := range r.Findings {
					rules = append(rules, f.Rule+" "+f.Subject)
				}
				assert.Contains(t, rules, tt.finding)
			}
			name := strings.TrimSuffix(tt.file, ".json")
			golden.AssertString(t, name+".json", out)
			code, out, _ = run("", "audit", "--from", layouts+tt.file)
			require.Equal(t, 0, code)
			golden.AssertString(t, name+".txt", out)
		})
	}
}

// TestSection64Shares is the thesis's §6.4 table at a = 30MB/s, b =
// 20MB/s: round robin (Kafka's default then) gives brokers a/3, 2a/3+b/2,
// b/2; the Node partitioner a/2, a/2+b/2, b/2.
func TestSection64Shares(t *testing.T) {
	code, out, errOut := run("", "audit", "--from", layouts+"thesis-6.4.json", "--rates", "A=30MB/s,B=20MB/s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r struct {
		Rates     string `json:"rates"`
		Predicted []struct {
			Partitioner string `json:"partitioner"`
			Brokers     []struct {
				Broker int32   `json:"broker"`
				Load   float64 `json:"load"`
				Share  float64 `json:"share"`
			} `json:"brokers"`
		} `json:"predicted_load"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, "given", r.Rates)
	want := map[string][]float64{"roundrobin": {10e6, 30e6, 10e6}, "node": {15e6, 25e6, 10e6}}
	require.Len(t, r.Predicted, 2)
	for _, p := range r.Predicted {
		var got []float64
		for _, b := range p.Brokers {
			got = append(got, b.Load)
		}
		assert.Equal(t, want[p.Partitioner], got, p.Partitioner)
	}
	golden.AssertString(t, "thesis-6.4-rates.json", out)
	_, out, _ = run("", "audit", "--from", layouts+"thesis-6.4.json", "--rates", "A=30MB/s,B=20MB/s")
	golden.AssertString(t, "thesis-6.4-rates.txt", out)
}

func TestDemoLayout(t *testing.T) {
	code, out, errOut := run("", "audit", "--from", layouts+"demo-cells.json", "--what-if", "broker-7")
	require.Equal(t, 0, code, errOut)
	golden.AssertString(t, "demo-cells.txt", out)
}

func TestRatesFlags(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--rates", "A=1MB/s,B=2"}, cmdutil.ExitUsage, "--rates: mix of rates with units and plain weights"},
		{[]string{"--rates", "A"}, cmdutil.ExitUsage, `--rates: "A": want topic=rate`},
		{[]string{"--rates", "A=1", "--rates-file", "x"}, cmdutil.ExitUsage, "give one, not both"},
		{[]string{"--rates-file", dir + "/none"}, cmdutil.ExitUsage, "--rates-file: open"},
		{[]string{"--rates", "A=3,B=1", "--fail-on", "warning"}, cmdutil.ExitFindings, ""},
	}
	for _, tt := range tests {
		code, _, errOut := run("", append([]string{"audit", "--from", layouts + "thesis-6.4.json"}, tt.args...)...)
		assert.Equal(t, tt.code, code, tt.args)
		assert.Contains(t, errOut, tt.want)
	}
}

// TestEveryChaosPartitionerPredicted: every partitioner kplan chaos runs
// has a predicted column or a line saying which column it equals.
func TestEveryChaosPartitionerPredicted(t *testing.T) {
	code, out, errOut := run("", "audit", "--from", layouts+"thesis-6.4.json", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r struct {
		Predicted []struct {
			Partitioner string `json:"partitioner"`
		} `json:"predicted_load"`
		Equivalents []struct {
			Partitioner string `json:"partitioner"`
			Equals      string `json:"equals"`
		} `json:"predicted_equivalents"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	var got []string
	for _, p := range r.Predicted {
		got = append(got, p.Partitioner)
	}
	for _, e := range r.Equivalents {
		got = append(got, e.Partitioner)
	}
	slices.Sort(got)
	// kplan chaos runs every partitioner of internal/partitioner, sqf
	// shared by every producer among them.
	want := partitioner.Names()
	require.Contains(t, want, audit.SQFShared)
	assert.Equal(t, want, got)
	assert.ElementsMatch(t, want, audit.SharePartitioners, "PredictShares predicts each directly")
}
