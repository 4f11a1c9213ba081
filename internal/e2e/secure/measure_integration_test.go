//go:build integration

package secure

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// TestMeasureSASLSSL is the regression test of `kplan measure` on the
// SASL_SSL lab, which failed with "rate below 1kB/s" when the producer's
// buffer was acknowledged after the run: through --bootstrap-server and
// --command-config (the lab by its cluster id, so no --yes) and through
// --cluster lab, each at --duration 3s, the shortest run with a warm-up
// window and two counted windows; each plan is feasible for kplan size at
// 10MB/s, and nothing printed or written holds the SCRAM password.
func TestMeasureSASLSSL(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Security: localkafka.SecuritySASLSSL})
	require.NotNil(t, lab.State.Security)
	cc := lab.State.Security.ClientConfig
	secret := password(t, cc)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var tr transcript
	kplan := func(args ...string) (int, string, string) {
		t.Helper()
		return tr.kplan(t, ctx, args...)
	}
	small := []string{"--duration", "3s", "--replication-samples", "20", "--election-partitions", "10", "--election-rounds", "1", "-o", "json"}
	work := t.TempDir()
	runs := []struct {
		name string
		args []string
	}{
		{"bootstrap-server", []string{"measure", "--bootstrap-server", lab.Bootstrap, "--command-config", cc, "--lab-dir", lab.State.Dir}},
		{"cluster-lab", []string{"measure", "--cluster", "lab", "--lab-dir", lab.State.Dir}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			plan := filepath.Join(work, r.name+".yaml")
			args := append(append(r.args, small...), "--out", plan)
			code, out, errOut := kplan(args...)
			require.Equal(t, 0, code, "stderr: %s", errOut)
			assert.Contains(t, errOut, "measure: deleted ", "scratch topics deleted")
			var measured struct {
				Produce struct {
					BytesPerSec int64 `json:"bytes_per_sec"`
					Windows     struct {
						N int `json:"n"`
					} `json:"windows_bytes_per_sec"`
				} `json:"partition_produce_rate"`
				Consume struct {
					BytesPerSec int64 `json:"bytes_per_sec"`
				} `json:"partition_consume_rate"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &measured), out)
			assert.Positive(t, measured.Produce.BytesPerSec)
			assert.Equal(t, 2, measured.Produce.Windows.N, "Tp from the two windows after the warm-up")
			assert.Positive(t, measured.Consume.BytesPerSec)

			code, out, errOut = kplan("size", "--plan", plan, "--throughput", "10MB/s", "-o", "json")
			text, rerr := os.ReadFile(plan)
			require.NoError(t, rerr)
			require.Equal(t, 0, code, "stderr: %s\nplan:\n%s", errOut, text)
			var sized struct {
				Results []struct {
					Strategy string `json:"strategy"`
					Feasible bool   `json:"feasible"`
				} `json:"results"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &sized), out)
			require.NotEmpty(t, sized.Results)
			for _, res := range sized.Results {
				assert.True(t, res.Feasible, "%s on the measured plan:\n%s", res.Strategy, text)
			}
			assert.NotContains(t, string(text), secret, "the plan holds the password")
		})
	}
	assert.NotContains(t, tr.b.String(), secret, "kplan's output holds the password")
	assert.Contains(t, tr.b.String(), "partition_produce_rate", "the transcript holds the verbs' output")
}
