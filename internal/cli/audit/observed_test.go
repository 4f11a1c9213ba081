package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuditObservedSnapshot: a snapshot kplan observe wrote on the lab
// (testdata/observed-lab.json, docs/observe.md's run) is a layout for
// --from and rates for --rates and --rates-file, in bytes/s.
func TestAuditObservedSnapshot(t *testing.T) {
	const snap = "testdata/observed-lab.json"
	type predicted struct {
		Partitions int    `json:"partitions"`
		Rates      string `json:"rates"`
		BytesPerS  bool   `json:"rates_bytes_per_second"`
		Predicted  []struct {
			Partitioner string `json:"partitioner"`
			Brokers     []struct {
				Load float64 `json:"load"`
			} `json:"brokers"`
		} `json:"predicted_load"`
	}
	var loads []float64
	for _, flag := range []string{"--rates", "--rates-file"} {
		code, out, errOut := run("", "audit", "--from", snap, flag, snap, "-o", "json")
		require.Equal(t, 0, code, errOut)
		var r predicted
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		assert.Equal(t, 8, r.Partitions)
		assert.Equal(t, "given", r.Rates)
		assert.True(t, r.BytesPerS)
		require.NotEmpty(t, r.Predicted)
		var sum float64
		for _, b := range r.Predicted[0].Brokers {
			sum += b.Load
		}
		loads = append(loads, sum)
	}
	assert.InDelta(t, 529_000, loads[0], 5_000, "the observed produce rates, orders 526 kB/s and clicks 3.8 kB/s")
	assert.Equal(t, loads[0], loads[1])

	code, _, errOut := run("", "audit", "--from", snap, "--rates", "testdata/fig3.3.golden.txt")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--rates: testdata/fig3.3.golden.txt: not a snapshot of kplan observe (--out)")
}

// TestAuditObservedLoad: with a snapshot as --from (or --observed), the
// audit adds the observed load per broker, its skews and the worst loss by
// bytes out (observed_load), with findings above --load-tolerance; a file
// that is no snapshot given as --observed, and a bad tolerance, are one
// line and exit 2.
func TestAuditObservedLoad(t *testing.T) {
	const snap = "testdata/observed-lab.json"
	type result struct {
		Observed *struct {
			Tolerance float64 `json:"tolerance"`
			Brokers   []struct {
				Broker   int32   `json:"broker"`
				BytesIn  float64 `json:"bytes_in_per_second"`
				BytesOut float64 `json:"bytes_out_per_second"`
			} `json:"brokers"`
			WorstLoss *struct {
				Broker int32 `json:"broker"`
				Out    struct {
					MaxOverMean float64 `json:"max_over_mean"`
				} `json:"bytes_out"`
			} `json:"worst_loss"`
		} `json:"observed_load"`
		Findings []struct {
			Rule    string `json:"rule"`
			Subject string `json:"subject"`
		} `json:"findings"`
	}
	for _, argv := range [][]string{
		{"audit", "--from", snap, "-o", "json"},
		{"audit", "--from", snap, "--observed", snap, "-o", "json"},
	} {
		code, out, errOut := run("", argv...)
		require.Equal(t, 0, code, errOut)
		var r result
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.NotNil(t, r.Observed, argv)
		assert.Equal(t, 0.10, r.Observed.Tolerance)
		require.Len(t, r.Observed.Brokers, 3)
		for _, b := range r.Observed.Brokers {
			assert.Positive(t, b.BytesIn)
			assert.Positive(t, b.BytesOut)
		}
		// RF 3 with replicas in order 1,2,3 / 2,3,1 / 3,1,2: a loss puts its
		// leaders on one survivor, a third more bytes out than the mean.
		require.NotNil(t, r.Observed.WorstLoss)
		assert.Greater(t, r.Observed.WorstLoss.Out.MaxOverMean, 1.10)
		var rules []string
		for _, f := range r.Findings {
			rules = append(rules, f.Rule)
		}
		assert.Contains(t, rules, "observed-loss-load")
	}

	// A looser band: no observed finding.
	code, out, errOut := run("", "audit", "--from", snap, "--load-tolerance", "0.5", "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, `"observed-load`)

	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"audit", "--from", snap, "--observed", "testdata/fig3.3.golden.txt"}, "--observed: testdata/fig3.3.golden.txt: malformed JSON"},
		{[]string{"audit", "--from", snap, "--load-tolerance", "-1"}, "--load-tolerance: want a fraction of 0 or more, got -1"},
		{[]string{"audit", "--from", snap, "--observed", "testdata/none.json"}, "--observed: open testdata/none.json"},
		{[]string{"audit", "--from", snap, "--observed", "../../../testdata/layouts/thesis-6-4.json"}, "is not a snapshot of kplan observe (--out): no observe_schema"},
	} {
		code, _, errOut := run("", tc.argv...)
		assert.Equal(t, 2, code, tc.argv)
		assert.Contains(t, errOut, tc.want, tc.argv)
		assert.Equal(t, 1, strings.Count(strings.TrimRight(errOut, "\n"), "\n")+1, "one line: %q", errOut)
	}
}
