package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

func run(args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

func TestRootHelpListsExitCodesAndVersion(t *testing.T) {
	code, out, _ := run("--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Exit codes:")
	assert.Contains(t, out, "version")
	assert.Contains(t, out, "completion")
}

func TestUnknownCommandAndFlagAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"--no-such-flag"}, {"version", "extra"}} {
		code, out, errOut := run(args...)
		assert.Equal(t, cmdutil.ExitUsage, code, args)
		assert.Empty(t, out)
		assert.Regexp(t, `^kplan: .+\n$`, errOut, "one line on stderr")
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run("version")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "kplan test\n")
}

func TestCompletion(t *testing.T) {
	code, out, _ := run("completion", "bash")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "bash completion")
}

func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.out")
	code, out, _ := run("--cpu-profile", path, "version")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "kplan ")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Positive(t, st.Size(), "a profile, even of a short command, has a header")

	code, _, errOut := run("--cpu-profile", filepath.Join(t.TempDir(), "no", "such", "dir"), "version")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--cpu-profile")
}
