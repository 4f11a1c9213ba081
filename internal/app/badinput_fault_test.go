package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadInputFault: `kplan chaos --fault` with malformed faults, and where
// no fault can be injected, fails before any cluster is contacted with one
// line naming --fault (or the file line, or the flag it needs).
func TestBadInputFault(t *testing.T) {
	in := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	lab := filepath.Join(in, "lab")
	t.Setenv("KPLAN_LAB_DIR", lab)
	o := func(name string) string { return filepath.Join(out, name) }
	badFault := filepath.Join(in, "fault.yaml")
	require.NoError(t, os.WriteFile(badFault, []byte("cluster: lab\nfault: loss:broker-2:ten%\n"), 0o600))

	tests := []badInput{
		{[]string{"chaos", "--cluster", "lab", "--fault", "delay:broker-2", "--report", o("report")}, 2, "--fault"},
		{[]string{"chaos", "--cluster", "lab", "--fault", "delay:broker-2:fast"}, 2, "--fault"},
		{[]string{"chaos", "--cluster", "lab", "--fault", "delay:broker-2:2h"}, 2, "--fault"},
		{[]string{"chaos", "--cluster", "lab", "--fault", "loss:broker-2:10"}, 2, "--fault"},
		{[]string{"chaos", "--cluster", "lab", "--fault", "loss:broker-2:0%"}, 2, "--fault"},
		{[]string{"chaos", "--cluster", "lab", "--fault", "jitter:broker-2:5ms"}, 2, "--fault"},
		{[]string{"chaos", "--cluster", "lab", "--fault", "partition:broker-x"}, 2, "--fault"},
		{[]string{"chaos", "--cluster", "lab", "--fault", "partition:none"}, 2, "--fault"},
		{[]string{"chaos", "--fault", "delay:broker-2:100ms", "--report", o("report")}, 2, "--fault"},
		{[]string{"chaos", "--workload", badFault, "--report", o("report")}, 2, badFault + ":2: fault"},
		{[]string{"chaos", "--bootstrap-server", "127.0.0.1:1", "--fault", "delay:broker-2:1ms"}, 2, "--killer"},
		{[]string{"chaos", "--bootstrap-server", "127.0.0.1:1", "--killer", "exec", "--kill-cmd", "true", "--fault", "delay:broker-2:1ms"}, 2, "--fault"},
	}
	runBadInputs(t, tests, out, lab)
}
