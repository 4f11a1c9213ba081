package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadInputBatching: `kplan measure batching` with malformed flags fails
// before any cluster is contacted, with one line naming the flag and
// nothing written where --report or --apply-to point.
func TestBadInputBatching(t *testing.T) {
	in := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	lab := filepath.Join(in, "lab")
	t.Setenv("KPLAN_LAB_DIR", lab)
	aFile := filepath.Join(in, "a-file")
	require.NoError(t, os.WriteFile(aFile, nil, 0o600))
	badProps := filepath.Join(in, "client.properties")
	require.NoError(t, os.WriteFile(badProps, []byte("bootstrap.servers=127.0.0.1:1\nsecurity.protocol=BOGUS\n"), 0o600))
	o := func(name string) string { return filepath.Join(out, name) }
	mb := func(args ...string) []string {
		return append([]string{"measure", "batching", "--report", o("report"), "--apply-to", o("producer.properties")}, args...)
	}
	tests := []badInput{
		{mb(), 2, "--cluster lab or --bootstrap-server"},
		{mb("--cluster", "lab", "--linger", "5"), 2, "--linger"},
		{mb("--cluster", "lab", "--linger", "1500us"), 2, "--linger"},
		{mb("--cluster", "lab", "--linger", "0,0"), 2, "--linger"},
		{mb("--cluster", "lab", "--linger", "2m"), 2, "--linger"},
		{mb("--cluster", "lab", "--batch-size", "4x"), 2, "--batch-size"},
		{mb("--cluster", "lab", "--batch-size", "0"), 2, "--batch-size"},
		{mb("--cluster", "lab", "--batch-size", "100B"), 2, "--batch-size"},
		{mb("--cluster", "lab", "--batch-size", ""), 2, "--batch-size"},
		{mb("--cluster", "lab", "--record-size", "100"), 2, "--batch-size: 1 records of 100 B"},
		{mb("--cluster", "lab", "--record-size", "-1"), 2, "--record-size"},
		{mb("--cluster", "lab", "--rate", "fast"), 2, "--rate"},
		{mb("--cluster", "lab", "--rate", "0/s"), 2, "--rate"},
		{mb("--cluster", "lab", "--acks", "2"), 2, "--acks"},
		{mb("--cluster", "lab", "--latency-objective", "soon"), 2, "--latency-objective"},
		{mb("--cluster", "lab", "--latency-objective", "0s"), 2, "--latency-objective"},
		{mb("--cluster", "lab", "--cell-duration", "-1s"), 2, "--cell-duration"},
		{mb("--cluster", "lab", "--warmup", "-1s"), 2, "--warmup"},
		{mb("--cluster", "lab", "--delivery-timeout", "0s"), 2, "--delivery-timeout"},
		{mb("--cluster", "lab", "--max-buffered-records", "0"), 2, "--max-buffered-records"},
		{mb("--cluster", "lab", "--partitions", "0"), 2, "--partitions"},
		{mb("--cluster", "lab", "--replication-factor", "-1"), 2, "--replication-factor"},
		{mb("--cluster", "lab", "--topic", "a b"), 2, "--topic"},
		{mb("--cluster", "lab", "-o", "xml"), 2, "xml"},
		{mb("--cluster", "bogus"), 2, "--cluster"},
		{mb("--cluster", "lab", "--bootstrap-server", "127.0.0.1:1"), 2, "--bootstrap-server"},
		{mb("--bootstrap-server", "127.0.0.1:1", "--lab-dir", lab), 2, "--lab-dir"},
		{mb("--bootstrap-server", "127.0.0.1:1", "--yes", "--command-config", badProps), 2, badProps + ":2"},
		{mb("--bootstrap-server", "127.0.0.1:1", "--yes", "--command-config", filepath.Join(in, "missing.properties")), 2, "--command-config"},
		{[]string{"measure", "batching", "--cluster", "lab", "--report", filepath.Join(aFile, "report")}, 2, "--report"},
		{[]string{"measure", "batching", "--cluster", "lab", "--apply-to", filepath.Join(out, "nodir", "p.properties")}, 2, "--apply-to"},
		{[]string{"measure", "batching", "--cluster", "lab", "--apply-to", out}, 2, "--apply-to"},
		// Not the lab and no --yes: refused before anything is written.
		{mb("--bootstrap-server", "127.0.0.1:1"), 4, "--yes"},
		// The lab is not running: a usage error naming --cluster lab, no
		// lab directory made.
		{mb("--cluster", "lab", "--lab-dir", lab), 2, "--cluster lab"},
	}
	runBadInputs(t, tests, out, lab)
}
