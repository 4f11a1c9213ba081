package localkafka

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeJava is a stand-in for java whose broker runs until killed, keeping
// its argv (and so the lab's paths) in /proc/PID/cmdline as a JVM does; its
// StorageTool does the same when hangFormat, else exits at once. Each
// writes a marker file in dir/started when it runs.
func fakeJava(t *testing.T, dir string, hangFormat bool) string {
	t.Helper()
	fake := filepath.Join(dir, "fake-java")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "started"), 0o755))
	format := "exit 0"
	if hangFormat {
		format = ":"
	}
	require.NoError(t, os.WriteFile(fake, []byte(`#!/bin/sh
touch "`+dir+`/started/$$"
for a in "$@"; do
  if [ "$a" = kafka.tools.StorageTool ]; then `+format+`; fi
done
exec /bin/sh -c 'trap "exit 0" TERM; while :; do sleep 0.1; done' fake-jvm "$@"
`), 0o755))
	return fake
}

// waitStarted waits until n fake JVMs have run.
func waitStarted(t *testing.T, dir string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		e, _ := os.ReadDir(filepath.Join(dir, "started"))
		return len(e) >= n
	}, 20*time.Second, 10*time.Millisecond)
}

// TestUpInterrupted cancels Up's context (what SIGINT and SIGTERM do to
// `kplan lab up`) in each phase, once that phase's processes run. Up must
// return an *UpError naming the phase and what it stopped, leave no
// process that mentions the lab's directory, and leave a lab.json that
// claims nothing running, so that the next Up reuses the directory.
func TestUpInterrupted(t *testing.T) {
	for _, tc := range []struct {
		phase   Phase
		stopped []int32
	}{
		{PhaseFormat, nil},
		{PhaseStart, nil},
		{PhaseReady, []int32{1, 2}},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			tmp := t.TempDir()
			cfg := Config{Brokers: 2, JarsDir: fakeJars(t), Dir: filepath.Join(tmp, "lab"), BasePort: 26092 + os.Getpid()%500*10, Java: fakeJava(t, tmp, tc.phase == PhaseFormat)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg.Progress = func(p Phase) {
				if p != tc.phase {
					return
				}
				switch p {
				case PhaseFormat:
					go func() { waitStarted(t, tmp, 2); cancel() }() // both StorageTools run
				case PhaseStart:
					cancel()
				case PhaseReady:
					waitStarted(t, tmp, 4) // 2 StorageTools, then 2 brokers
					cancel()
				}
			}
			notReady := func(context.Context, string, []string, []int32) error { return errors.New("not yet") }
			_, err := Up(ctx, cfg, notReady)
			var ue *UpError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, tc.phase, ue.Phase)
			assert.ErrorIs(t, err, context.Canceled)
			require.NoError(t, ue.CleanupErr)
			assert.Equal(t, tc.stopped, ue.Cleaned.Stopped)

			left, perr := Leftovers(cfg.Dir)
			require.NoError(t, perr)
			assert.Empty(t, left, "left of the lab")
			s, lerr := Load(cfg.Dir)
			require.NoError(t, lerr, "lab.json stays for lab down and the next up")
			assert.False(t, s.AnyAlive())
			assert.Nil(t, s.Net)
			assert.NoError(t, checkDir(cfg.Dir), "the next up may use the directory")
		})
	}
}

// TestCleanupString: the words the interrupted `lab up` prints.
func TestCleanupString(t *testing.T) {
	assert.Equal(t, "no broker JVM had started", Cleanup{}.String())
	assert.Equal(t, "stopped 2 JVMs (node-1, node-2), removed 2 network namespaces (kplan-7-1, kplan-7-2) with their veth pairs and bridge kpl7br, removed 3 cgroups",
		Cleanup{Stopped: []int32{1, 2}, Namespaces: []string{"kplan-7-1", "kplan-7-2"}, Bridge: "kpl7br", Cgroups: []string{"a", "b", "c"}}.String())
}
