//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestMeasureThenSize is issue 15's first acceptance item at a small size:
// `kplan measure --bootstrap-server <lab>` writes a plan (no --yes: the
// cluster id says it is the local lab), and `kplan size --plan` on it with
// a throughput gives a feasible answer.
func TestMeasureThenSize(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	plan := filepath.Join(t.TempDir(), "lab-measured.yaml")
	code, out, errOut := runKplan(t, ctx, "measure", "--bootstrap-server", lab.Bootstrap, "--lab-dir", lab.State.Dir,
		"--duration", "2s", "--window", "500ms", "--replication-samples", "30", "--election-partitions", "10", "--election-rounds", "2",
		"--out", plan, "-o", "json")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, errOut, "measure: deleted ")

	var measured struct {
		Produce struct {
			BytesPerSec int64 `json:"bytes_per_sec"`
		} `json:"partition_produce_rate"`
		Handles struct {
			Value int64 `json:"max_handles"`
			Given bool  `json:"given"`
		} `json:"max_handles"`
		Machine struct {
			Brokers      int    `json:"brokers"`
			KafkaVersion string `json:"kafka_version"`
		} `json:"machine"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &measured))
	assert.Positive(t, measured.Produce.BytesPerSec)
	assert.False(t, measured.Handles.Given, "Hmax read from the lab brokers' limits")
	assert.Positive(t, measured.Handles.Value)
	assert.Equal(t, 4, measured.Machine.Brokers)
	assert.Contains(t, measured.Machine.KafkaVersion, "(the lab's jars)")

	b, err := os.ReadFile(plan)
	require.NoError(t, err)
	var keys map[string]string
	require.NoError(t, yaml.Unmarshal(b, &keys))
	for _, k := range []string{"partition-produce-rate", "partition-consume-rate", "replication-latency", "election-time", "max-handles"} {
		assert.NotEmpty(t, keys[k], "plan key %s", k)
	}

	code, out, errOut = runKplan(t, ctx, "size", "--plan", plan, "--throughput", "1MB/s", "-o", "json")
	require.Equal(t, 0, code, "stderr: %s\nplan:\n%s", errOut, b)
	var sized struct {
		Results []struct {
			Strategy   string `json:"strategy"`
			Feasible   bool   `json:"feasible"`
			Partitions int64  `json:"partitions"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sized))
	require.NotEmpty(t, sized.Results)
	for _, r := range sized.Results {
		assert.True(t, r.Feasible, "%s on the measured plan:\n%s", r.Strategy, b)
		assert.Positive(t, r.Partitions)
	}

	// Nothing left behind.
	code, out, errOut = runKplan(t, ctx, "audit", "--bootstrap-server", lab.Bootstrap, "-o", "json")
	require.Contains(t, []int{0, 3}, code, errOut)
	assert.NotContains(t, out, "kplan-measure-")
}
