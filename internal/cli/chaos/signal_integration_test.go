//go:build integration

package chaos_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// TestChaosLabSignals sends real signals to a `kplan chaos --cluster lab
// --kill broker-3 --restore --report DIR` process (this test binary run as
// kplan) once broker 3 is dead, so the run is in its failover or after
// phase. SIGTERM alone: kplan cleans up, restarts broker 3, writes the
// partial report and exits non-zero. SIGTERM then SIGINT: the second signal
// cuts the cleanup short, broker 3 stays down and the result says so. The
// in-process tests (internal/chaos TestInterruptEveryPhase) cover every
// phase; these cover the signals themselves.
func TestChaosLabSignals(t *testing.T) {
	for _, tc := range []struct {
		name string
		sigs []os.Signal
	}{
		{"sigterm", []os.Signal{syscall.SIGTERM}},
		{"sigterm-then-sigint", []os.Signal{syscall.SIGTERM, syscall.SIGINT}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab := labForRemote(t)
			dir := t.TempDir()
			self, err := os.Executable()
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, self, "chaos", "--cluster", "lab", "--lab-dir", lab.State.Dir,
				"--topic", "sigtest", "--partitioner", "roundrobin", "--kill", "broker-3", "--restore",
				"--warmup", "1s", "--phase-duration", "2s", "--report", dir, "-o", "json")
			cmd.Env = append(os.Environ(), asKplan+"=1")
			var out bytes.Buffer
			cmd.Stdout = &out
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			var errOut bytes.Buffer
			errDone := make(chan struct{})
			go func() {
				defer close(errDone)
				_, _ = io.Copy(&errOut, bufio.NewReader(stderr))
			}()
			t.Cleanup(func() { restartDead(t, lab) })

			// The kill happened: the run is past its before phase.
			require.Eventually(t, func() bool { return !brokerAlive(t, lab, 3) }, 2*time.Minute, 50*time.Millisecond, "broker 3 is killed")
			for _, s := range tc.sigs {
				require.NoError(t, cmd.Process.Signal(s))
			}
			<-errDone
			err = cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "kplan exits non-zero after an interruption; stderr:\n%s", errOut.String())
			assert.NotEqual(t, 0, ee.ExitCode())
			assert.Contains(t, errOut.String(), "chaos: interrupted; stopping the producers and cleaning up")
			assert.Contains(t, errOut.String(), "report written to "+dir)

			var res struct {
				Interrupted bool     `json:"interrupted"`
				Killed      int32    `json:"killed_broker"`
				Notes       []string `json:"notes"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "result.json"))
			require.NoError(t, err, "the partial report is written")
			require.NoError(t, json.Unmarshal(data, &res))
			assert.True(t, res.Interrupted)
			assert.Equal(t, int32(3), res.Killed)
			assert.Contains(t, out.String(), `"interrupted": true`, "the partial result is printed")
			if len(tc.sigs) == 1 {
				assert.True(t, brokerAlive(t, lab, 3), "--restore: broker 3 is restarted after the interruption")
				assert.Contains(t, res.Notes, "broker 3 restarted after the interruption")
				return
			}
			notes := strings.Join(res.Notes, "\n")
			assert.Contains(t, notes, "cleanup cut short")
			assert.NotContains(t, notes, "broker 3 restarted", "the second signal cut the cleanup short")
			// The signals race the restart: either it had not begun (broker
			// 3 stays down, and the result says so) or the second signal
			// came while the broker was being started (its process may be
			// up, and the result says that instead).
			if strings.Contains(notes, "restart of broker 3 cut short") {
				assert.NotContains(t, notes, "broker 3 is still down")
			} else {
				assert.False(t, brokerAlive(t, lab, 3), "the second signal came before the restart: broker 3 stays down")
				assert.Contains(t, res.Notes, "broker 3 is still down", "the result says what was left")
			}
		})
	}
}

// brokerAlive reports whether broker id runs, as the lab's state on disk
// says (the child process restarts brokers with new pids).
func brokerAlive(t *testing.T, lab *labtest.Lab, id int32) bool {
	t.Helper()
	s, err := localkafka.Load(lab.State.Dir)
	require.NoError(t, err)
	n, err := s.Node(id)
	require.NoError(t, err)
	return n.Alive()
}

// restartDead restarts every broker a test left down: the shared lab stays
// whole for the next test.
func restartDead(t *testing.T, lab *labtest.Lab) {
	s, err := localkafka.Load(lab.State.Dir)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range s.Brokers() {
		if !n.Alive() {
			assert.NoError(t, s.Restart(ctx, n.ID, kafka.WaitBrokers))
		}
	}
	lab.State.Nodes = s.Nodes
}
