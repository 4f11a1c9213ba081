package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadInputLabNet is `kplan lab net`'s rows of TestBadInputEverywhere:
// each fails on its flags before the lab is looked at, naming the flag.
func TestBadInputLabNet(t *testing.T) {
	in := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	lab := filepath.Join(in, "lab")
	t.Setenv("KPLAN_LAB_DIR", lab)
	net := func(args ...string) []string { return append([]string{"lab", "net", "--dir", lab}, args...) }
	tests := []badInput{
		{net("--clients", "--delay", "soon"), 2, "--delay"},
		{net("--clients", "--delay", "200"), 2, "--delay"},
		{net("--clients", "--delay", "-5ms"), 2, "--delay"},
		{net("--clients", "--delay", "20s"), 2, "--delay"},
		{net("--clients", "--jitter", "5ms"), 2, "--jitter"},
		{net("--clients", "--delay", "5ms", "--jitter", "10ms"), 2, "--jitter"},
		{net("--clients", "--delay", "5ms", "--jitter", "x"), 2, "--jitter"},
		{net("--clients", "--loss", "150%"), 2, "--loss"},
		{net("--clients", "--loss", "five"), 2, "--loss"},
		{net("--clients", "--loss", "NaN"), 2, "--loss"},
		{net("--clients", "--rate", "fast"), 2, "--rate"},
		{net("--clients", "--rate", "-1MB/s"), 2, "--rate"},
		{net("--broker", "0", "--delay", "5ms"), 2, "--broker"},
		{net("--broker", "two", "--delay", "5ms"), 2, "--broker"},
		{net("--broker", "2", "--clients", "--delay", "5ms"), 2, "--broker"},
		{net("--delay", "5ms"), 2, "--broker"},
		{net("--clients"), 2, "--delay"},
		{net("--clear", "--delay", "5ms"), 2, "--clear"},
		{net("--clients", "--delay", "5ms", "--timeout", "0s"), 2, "--timeout"},
		{net("--clients", "--delay", "5ms", "extra"), 2, "extra"},
		// Valid flags, no lab in --dir: refused before anything is made.
		{net("--clients", "--delay", "5ms"), 2, "no lab in"},
		{net("--clear"), 2, "no lab in"},
	}
	runBadInputs(t, tests, out, lab)
}
