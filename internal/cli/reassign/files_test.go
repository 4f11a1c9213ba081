//go:build unix

package reassign_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
)

// Plans, rollbacks, election and wave files are handed to other accounts:
// under umask 022 they are 0644, not os.CreateTemp's 0600.
func TestFilesAreShared(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	code, _, errOut := run("reassign", "--from", kafkakit, "--out", plan, "--rollback", filepath.Join(dir, "rollback.json"),
		"--election-out", filepath.Join(dir, "elect.json"), "--waves", "2")
	require.Equal(t, 0, code, errOut)
	for _, name := range []string{"plan.json", "rollback.json", "elect.json", "plan.wave-1.json", "plan.wave-2.json"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), name)
	}
}

// A file that cannot be written is bad input naming the file: exit 2, one
// line.
func TestUnwritableFileIsUsage(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "plan.json")
	code, out, errOut := run("reassign", "--from", kafkakit, "--out", missing)
	assert.Equal(t, cmdutil.ExitUsage, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "cannot write "+missing)
}
