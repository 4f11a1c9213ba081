package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadInputMeasure is TestBadInputEverywhere's rows for `kplan measure`:
// each fails before any cluster is contacted (127.0.0.1:1 answers nothing)
// and writes no plan.
func TestBadInputMeasure(t *testing.T) {
	in := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	lab := filepath.Join(in, "lab")
	t.Setenv("KPLAN_LAB_DIR", lab)
	plan := filepath.Join(out, "plan.yaml")
	bs := []string{"measure", "--bootstrap-server", "127.0.0.1:1", "--out", plan}
	with := func(extra ...string) []string { return append(append([]string{}, bs...), extra...) }

	tests := []badInput{
		{[]string{"measure"}, 2, "--bootstrap-server"},
		{[]string{"measure", "--cluster", "k8s"}, 2, "--cluster"},
		{[]string{"measure", "--cluster", "lab", "--bootstrap-server", "127.0.0.1:1"}, 2, "--bootstrap-server"},
		{[]string{"measure", "--cluster", "lab", "--out", plan}, 2, lab},
		{with("--acks", "2"), 2, "--acks"},
		{with("--acks", "-1x"), 2, "--acks"},
		{with("--record-size", "0"), 2, "--record-size"},
		{with("--record-size", "2000000"), 2, "--record-size"},
		{with("--record-size", "1k"), 2, "--record-size"},
		{with("--duration", "10ms"), 2, "--duration"},
		{with("--duration", "forever"), 2, "--duration"},
		// The warm-up window and two counted windows (the SASL_SSL lab at
		// --duration 1s counted nothing).
		{with("--duration", "1s"), 2, "--duration"},
		{with("--duration", "2s"), 2, "--duration"},
		{with("--duration", "5s", "--window", "2s"), 2, "--duration"},
		{with("--window", "0s"), 2, "--window"},
		{with("--linger", "-1ms"), 2, "--linger"},
		{with("--replication-samples", "0"), 2, "--replication-samples"},
		{with("--replication-interval", "-1s"), 2, "--replication-interval"},
		{with("--replication-record-size", "0"), 2, "--replication-record-size"},
		{with("--election-partitions", "-3"), 2, "--election-partitions"},
		{with("--election-partitions", "20000"), 2, "--election-partitions"},
		{with("--election-rounds", "0"), 2, "--election-rounds"},
		{with("--election-time", "25ms"), 2, "--election-time"},
		{with("--election-partitions", "0", "--election-time", "25"), 2, "--election-time"},
		{with("--election-partitions", "0", "--election-time", "-5ms"), 2, "--election-time"},
		{with("--max-handles", "0"), 2, "--max-handles"},
		{with("--max-handles", "-7"), 2, "--max-handles"},
		{with("--replication-factor", "0"), 2, "--replication-factor"},
		{with("--replication-factor", "65"), 2, "--replication-factor"},
		{with("--throughput", "50MB"), 2, "--throughput"},
		{with("--consumers", "0"), 2, "--consumers"},
		{with("--max-brokers", "0"), 2, "--max-brokers"},
		{with("--max-replication-latency", "0s"), 2, "--max-replication-latency"},
		{with("--max-unavailability", "2"), 2, "--max-unavailability"},
		{with("--timeout", "0s"), 2, "--timeout"},
		{with("-o", "csv"), 2, "--output"},
		{[]string{"measure", "--bootstrap-server", "127.0.0.1:1", "--out", filepath.Join(out, "missing", "plan.yaml")}, 2, "--out"},
		{[]string{"measure", "--bootstrap-server", "127.0.0.1:1", "--out", out}, 2, "--out"},
		{with("--lab-dir", ""), 2, "--lab-dir"},
		{with("extra"), 2, "extra"},
	}
	runBadInputs(t, tests, out, lab)
}
