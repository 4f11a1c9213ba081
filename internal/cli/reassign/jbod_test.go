package reassign_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReassignLogDirsFromFile: a layout file whose log_dirs name two dirs
// per broker, every replica in /d0: `--balance bytes` writes log_dirs (one
// per replica, "any" where no preference), the summary lists each
// broker's dirs and the intra-broker moves, and the rollback names the
// dirs the replicas are in now.
func TestReassignLogDirsFromFile(t *testing.T) {
	dir := t.TempDir()
	var parts []string
	for p := range 12 {
		a, b := 1+p%2, 2-p%2
		parts = append(parts, fmt.Sprintf(`{"topic":"t","partition":%d,"replicas":[%d,%d],"log_dirs":["/d0","/d0"],"size_bytes":%d}`, p, a, b, (p+1)<<20))
	}
	// A file names a broker's dirs through its replicas: a small
	// partition in /d1 on brokers 1 and 2, one in each dir on broker 3.
	parts = append(parts, `{"topic":"u","partition":0,"replicas":[3],"log_dirs":["/d0"],"size_bytes":1}`,
		`{"topic":"u","partition":1,"replicas":[3],"log_dirs":["/d1"],"size_bytes":1}`,
		`{"topic":"u","partition":2,"replicas":[1,2],"log_dirs":["/d1","/d1"],"size_bytes":1}`)
	layout := filepath.Join(dir, "layout.json")
	require.NoError(t, os.WriteFile(layout, []byte(`{"version":1,"brokers":[{"id":1},{"id":2},{"id":3}],"partitions":[`+strings.Join(parts, ",")+"]}"), 0o600))
	plan, rollback := filepath.Join(dir, "plan.json"), filepath.Join(dir, "rollback.json")
	code, out, errOut := run("reassign", "--from", layout, "--balance", "bytes", "--tolerance", "0.1", "--out", plan, "--rollback", rollback, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var sum struct {
		Dirs struct {
			Unit    string `json:"unit"`
			Within  bool   `json:"within"`
			Brokers []struct {
				Broker int32 `json:"broker"`
				Dirs   []struct {
					Dir    string `json:"dir"`
					Before int64  `json:"before"`
					After  int64  `json:"after"`
				} `json:"dirs"`
			} `json:"brokers"`
			IntraMoves []struct {
				Broker int32  `json:"broker"`
				From   string `json:"from"`
				To     string `json:"to"`
			} `json:"intra_moves"`
		} `json:"log_dirs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	assert.Equal(t, "bytes", sum.Dirs.Unit)
	assert.True(t, sum.Dirs.Within, out)
	require.Len(t, sum.Dirs.Brokers, 3)
	assert.NotEmpty(t, sum.Dirs.IntraMoves)
	for _, f := range []string{plan, rollback} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var file struct {
			Partitions []struct {
				Replicas []int32  `json:"replicas"`
				LogDirs  []string `json:"log_dirs"`
			} `json:"partitions"`
		}
		require.NoError(t, json.Unmarshal(data, &file))
		named := 0
		for _, p := range file.Partitions {
			require.Len(t, p.LogDirs, len(p.Replicas), "%s: %s", f, data)
			for _, d := range p.LogDirs {
				assert.Contains(t, []string{"any", "/d0", "/d1"}, d)
				if d != "any" {
					named++
				}
			}
		}
		assert.Positive(t, named, "%s names dirs: %s", f, data)
	}

	code, text, errOut := run("reassign", "--from", layout, "--balance", "bytes", "--tolerance", "0.1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "Log dirs per broker (bytes, band ±10% of each broker's mean)")
	assert.Contains(t, text, "Intra-broker moves (log dir changes, no network)")

	// --log-dirs any: no dir pass, no log_dirs in the plan.
	code, out, errOut = run("reassign", "--from", layout, "--balance", "bytes", "--tolerance", "0.1", "--log-dirs", "any", "--out", plan, "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, `"log_dirs"`)
	data, err := os.ReadFile(plan)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "log_dirs")

	code, _, errOut = run("reassign", "--from", layout, "--log-dirs", "some")
	assert.Equal(t, 2, code)
	assert.Equal(t, "kplan: --log-dirs: want balance or any, got \"some\"\n", errOut)

	// A plan's bad log_dirs: one line naming the plan, the field and the
	// partition, before any connection.
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["","/a"]}]}`), 0o600))
	code, _, errOut = run("reassign", "apply", bad, "--bootstrap-server", "127.0.0.1:1")
	assert.Equal(t, 2, code)
	assert.Equal(t, "kplan: plan "+bad+": log_dirs: t-0: an empty dir for broker 1 (want a dir or \"any\")\n", errOut)
}
