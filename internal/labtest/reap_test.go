package labtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/localkafka"
)

// standIn starts a process whose argv names path (a file under a lab
// directory, as a JVM names its config), and waits for it when the test
// ends.
func standIn(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	cmd := exec.Command("tail", "-f", path)
	require.NoError(t, cmd.Start())
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-waited
	})
	return cmd
}

// labDir makes a directory of the pool under root with a lab.json whose
// one node is a stand-in process, and the owner file o (none when nil).
func labDir(t *testing.T, root, name string, o *owner) (string, *exec.Cmd) {
	t.Helper()
	dir := filepath.Join(root, "kplan-labtest-"+name)
	lab := filepath.Join(dir, labSubdir)
	require.NoError(t, os.MkdirAll(lab, 0o755))
	cfg := filepath.Join(lab, "node-1.properties")
	cmd := standIn(t, cfg)
	s := localkafka.State{Dir: lab, Nodes: []localkafka.Node{{ID: 1, Broker: true, Config: cfg, PID: cmd.Process.Pid}}}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(lab, "lab.json"), b, 0o644))
	if o != nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFile), []byte(o.String()+"\n"), 0o644))
	}
	return dir, cmd
}

// running reports whether cmd's process runs (zombies count as gone).
func running(cmd *exec.Cmd) bool {
	return localkafka.Node{PID: cmd.Process.Pid, Config: cmd.Args[len(cmd.Args)-1]}.Alive()
}

func TestReapStopsTheLabsOfGoneOwnersOnly(t *testing.T) {
	root := t.TempDir()
	me, err := self()
	require.NoError(t, err)
	// A pid that runs but started at another time is a reused pid: its
	// owner is gone.
	reused := owner{PID: me.PID, Start: "1"}
	orphan, orphanJVM := labDir(t, root, "orphan", &reused)
	// A process beside the JVMs naming the directory (a formatting JVM,
	// a delay process) goes too.
	extra := standIn(t, filepath.Join(orphan, "format.properties"))
	mine, mineJVM := labDir(t, root, "mine", &me)
	unowned, unownedJVM := labDir(t, root, "unowned", nil)
	// A file matching the pattern is no lab.
	require.NoError(t, os.WriteFile(filepath.Join(root, "kplan-labtest-file"), nil, 0o644))

	reaped, err := reap(root)
	require.NoError(t, err)
	require.Len(t, reaped, 1)
	assert.Equal(t, orphan, reaped[0].Dir)
	assert.Equal(t, me.PID, reaped[0].Owner)
	assert.ElementsMatch(t, []int{orphanJVM.Process.Pid, extra.Process.Pid}, reaped[0].Stopped)
	assert.False(t, running(orphanJVM), "the orphaned lab's JVM is stopped")
	assert.False(t, running(extra), "every process naming the orphaned lab is stopped")
	assert.NoFileExists(t, filepath.Join(orphan, ownerFile), "reaped once")
	assert.DirExists(t, orphan, "kept for post-mortems")

	assert.True(t, running(mineJVM), "a running owner's lab is left alone")
	assert.FileExists(t, filepath.Join(mine, ownerFile))
	assert.True(t, running(unownedJVM), "a directory without an owner file is left alone")
	assert.NoFileExists(t, filepath.Join(unowned, ownerFile))

	again, err := reap(root)
	require.NoError(t, err)
	assert.Empty(t, again, "nothing is reaped twice")
}

func TestOwnerFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	_, ok, err := readOwner(dir)
	require.NoError(t, err)
	assert.False(t, ok, "no owner file")

	require.NoError(t, writeOwner(dir))
	o, ok, err := readOwner(dir)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, os.Getpid(), o.PID)
	assert.True(t, o.alive(), "this process owns it")

	for _, bad := range []string{"", "12", "x 5", "1 2 3"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFile), []byte(bad), 0o644))
		_, _, err := readOwner(dir)
		assert.Error(t, err, "%q", bad)
	}
}
