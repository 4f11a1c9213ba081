package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadInputUnavailability is TestBadInputEverywhere's rows for `kplan
// measure unavailability`: each fails before any cluster is contacted.
func TestBadInputUnavailability(t *testing.T) {
	in := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	lab := filepath.Join(in, "lab")
	t.Setenv("KPLAN_LAB_DIR", lab)
	o := func(name string) string { return filepath.Join(out, name) }
	twice := filepath.Join(in, "twice.yaml")
	require.NoError(t, os.WriteFile(twice, []byte("throughput: 1MB/s\nelection-time: 5ms\nelection-time: 6ms\n"), 0o600))
	aFile := filepath.Join(in, "file")
	require.NoError(t, os.WriteFile(aFile, nil, 0o600))
	u := []string{"measure", "unavailability"}
	row := func(args ...string) []string { return append(append([]string{}, u...), args...) }
	tests := []badInput{
		{row("--partitions", "1,ten", "--report", o("report")), 2, "--partitions"},
		{row("--partitions", "1,1"), 2, "--partitions"},
		{row("--partitions", "20000"), 2, "--partitions"},
		{row("--repeat", "0", "--report", o("report")), 2, "--repeat"},
		{row("--replication-factor", "1"), 2, "--replication-factor"},
		{row("--broker", "-7"), 2, "--broker"},
		{row("--topic", "bad topic"), 2, "--topic"},
		{row("--failover-timeout", "soon"), 2, "--failover-timeout"},
		{row("--request-timeout", "0s"), 2, "--request-timeout"},
		{row("--cluster", "embedded"), 2, "--cluster"},
		{row("-o", "csv"), 2, "--output"},
		{row("--out-plan", filepath.Join(in, "missing.yaml")), 2, "--out-plan"},
		{row("--out-plan", twice, "--report", o("report")), 2, "--out-plan"},
		{row("--report", filepath.Join(aFile, "report")), 2, "--report"},
		{row("--command-config", in), 2, "--command-config"},
		{row("--killer", "docker"), 2, "--killer"},
		{row("--yes"), 2, "--yes"},
		{row("--bootstrap-server", "127.0.0.1:1"), 2, "--killer"},
		{row("--bootstrap-server", "127.0.0.1:1", "--killer", "bogus"), 2, "--killer"},
		{row("--bootstrap-server", "127.0.0.1:1", "--killer", "exec", "--kill-cmd", "true"), 2, "--restore-cmd"},
		{row("--bootstrap-server", "127.0.0.1:1", "--killer", "docker"), 2, "container-template"},
		{row("--bootstrap-server", "127.0.0.1:1", "--killer", "docker", "--container-template", "k-{id}", "--kill-cmd", "true"), 2, "--kill-cmd"},
		{row("--bootstrap-server", "127.0.0.1:1", "--cluster", "lab"), 2, "--bootstrap-server"},
		{row("--cluster", "lab", "--lab-dir", filepath.Join(in, "nolab"), "--report", o("report")), 2, "--cluster lab"},
	}
	runBadInputs(t, tests, out, lab)
}
