package audit_test

import (
	"encoding/json"
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
