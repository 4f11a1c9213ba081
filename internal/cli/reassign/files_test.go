//go:build unix

package reassign_test

import (
	"fmt"
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

// Re-planning with fewer waves (or none) used to leave the earlier plan's
// wave files beside the new ones. kplan removes its own stale wave files,
// and only those.
func TestStaleWavesRemoved(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	other := []string{"plan.wave-x.json", "plan.wave-0.json", "other.wave-3.json", "plan.wave-3.json.bak"}
	for _, name := range other {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644))
	}
	code, _, errOut := run("reassign", "--from", kafkakit, "--out", plan, "--waves", "3")
	require.Equal(t, 0, code, errOut)
	for i := 1; i <= 3; i++ {
		require.FileExists(t, filepath.Join(dir, fmt.Sprintf("plan.wave-%d.json", i)))
	}
	code, _, errOut = run("reassign", "--from", kafkakit, "--out", plan, "--waves", "1")
	require.Equal(t, 0, code, errOut)
	assert.FileExists(t, filepath.Join(dir, "plan.wave-1.json"))
	assert.NoFileExists(t, filepath.Join(dir, "plan.wave-2.json"))
	assert.NoFileExists(t, filepath.Join(dir, "plan.wave-3.json"))
	assert.Contains(t, errOut, "removed wave files of an earlier plan")
	code, _, errOut = run("reassign", "--from", kafkakit, "--out", plan)
	require.Equal(t, 0, code, errOut)
	assert.NoFileExists(t, filepath.Join(dir, "plan.wave-1.json"))
	for _, name := range append(other, "plan.json") {
		assert.FileExists(t, filepath.Join(dir, name), "not kplan's wave file")
	}
}
