//go:build integration

package measure

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/labtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

func kplan(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	code := app.Run(ctx, f, args)
	return code, out.String(), errOut.String()
}

// TestMeasureSecuredLab: `kplan measure --cluster lab` on a SASL_SSL lab
// uses the lab's client.properties, and `kplan measure --bootstrap-server`
// with --command-config does too; both plans size feasibly.
func TestMeasureSecuredLab(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Security: "sasl_ssl"})
	require.NotEmpty(t, lab.ClientConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	short := []string{"--duration", "1s", "--window", "500ms", "--replication-samples", "20", "--election-partitions", "6", "--election-rounds", "1"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"cluster lab", []string{"measure", "--cluster", "lab", "--lab-dir", lab.State.Dir}},
		{"bootstrap-server", []string{"measure", "--bootstrap-server", lab.Bootstrap, "--command-config", lab.ClientConfig, "--lab-dir", lab.State.Dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := filepath.Join(t.TempDir(), "plan.yaml")
			code, _, errOut := kplan(t, ctx, append(append(tc.args, short...), "--out", plan)...)
			require.Equal(t, 0, code, "stderr: %s", errOut)
			assert.Contains(t, errOut, "measure: deleted ")
			code, out, errOut := kplan(t, ctx, "size", "--plan", plan, "--throughput", "1MB/s", "--strategy", "bromax", "-o", "json")
			require.Equal(t, 0, code, "stderr: %s", errOut)
			var sized struct {
				Results []struct {
					Feasible bool `json:"feasible"`
				} `json:"results"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &sized))
			require.Len(t, sized.Results, 1)
			assert.True(t, sized.Results[0].Feasible, "bromax on the measured plan")
		})
	}
	// Without the lab's client.properties the secured listener refuses.
	code, _, errOut := kplan(t, ctx, "measure", "--bootstrap-server", lab.Bootstrap, "--max-handles", "100", "--yes", "--timeout", "3s")
	assert.NotEqual(t, 0, code)
	assert.NotEmpty(t, errOut)
}
