//go:build integration

package lab_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/localkafka"
)

// buildKplan builds the kplan binary into a temporary directory.
func buildKplan(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kplan")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kplan-dev/kplan/cmd/kplan").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// TestLabUpInterrupted sends SIGINT or SIGTERM to a real `kplan lab up`
// process (the built binary, Kafka's real jars) as it enters each phase,
// which it tells by the progress lines on its stderr: while the
// StorageTool JVMs format storage, as the broker JVMs are launched, and
// while it waits for them to answer; with network namespaces
// (--broker-bandwidth) and with cgroups (--broker-cpu) too. Each run must
// exit 1 with one line saying it was interrupted and what it cleaned, and
// leave no JVM (by the pids lab.json held, and by every process whose argv
// mentions the lab's directory), no namespace, veth or bridge, no cgroup,
// and a lab.json that claims nothing running, which `kplan lab down`
// accepts.
func TestLabUpInterrupted(t *testing.T) {
	bin := buildKplan(t)
	jars, err := localkafka.FindJars("")
	require.NoError(t, err)
	signalled := map[syscall.Signal]string{syscall.SIGINT: "interrupt signal received", syscall.SIGTERM: "terminated signal received"}
	for i, tc := range []struct {
		name  string
		phase localkafka.Phase
		sig   syscall.Signal
		args  []string
		// phases the interrupt may land in (the launch of a JVM takes
		// microseconds, so a signal sent as it begins may land in the wait).
		within []localkafka.Phase
	}{
		{"format-sigint", localkafka.PhaseFormat, syscall.SIGINT, nil, []localkafka.Phase{localkafka.PhaseFormat}},
		{"format-sigterm-netns", localkafka.PhaseFormat, syscall.SIGTERM, []string{"--broker-bandwidth", "5MB/s"}, []localkafka.Phase{localkafka.PhaseFormat}},
		{"start-sigint-cgroup", localkafka.PhaseStart, syscall.SIGINT, []string{"--broker-cpu", "0.5"}, []localkafka.Phase{localkafka.PhaseStart, localkafka.PhaseReady}},
		{"start-sigterm", localkafka.PhaseStart, syscall.SIGTERM, nil, []localkafka.Phase{localkafka.PhaseStart, localkafka.PhaseReady}},
		{"ready-sigterm-cgroup", localkafka.PhaseReady, syscall.SIGTERM, []string{"--broker-cpu", "0.5"}, []localkafka.Phase{localkafka.PhaseReady}},
		{"ready-sigint-netns", localkafka.PhaseReady, syscall.SIGINT, []string{"--broker-bandwidth", "5MB/s", "--brokers", "2"}, []localkafka.Phase{localkafka.PhaseReady}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "lab")
			base := 25092 + (os.Getpid()%40)*100 + i*40
			t.Cleanup(func() {
				if s, err := localkafka.Load(dir); err == nil {
					_ = s.Down(0)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			args := append([]string{"lab", "up", "--dir", dir, "--base-port", strconv.Itoa(base), "--brokers", "1", "--heap-mb", "256", "--kafka-jars", jars}, tc.args...)
			cmd := exec.CommandContext(ctx, bin, args...)
			var stdout strings.Builder
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())

			var lines []string
			var atSignal *localkafka.State
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines = append(lines, sc.Text())
				if atSignal == nil && sc.Text() == "lab up: "+string(tc.phase) {
					if tc.phase == localkafka.PhaseFormat {
						// Signal once a StorageTool JVM runs.
						require.Eventually(t, func() bool {
							pids, err := localkafka.ProcessesOf(dir)
							require.NoError(t, err)
							return slices.ContainsFunc(pids, func(p int) bool { return p != cmd.Process.Pid })
						}, 30*time.Second, 5*time.Millisecond, "no StorageTool JVM")
					}
					require.NoError(t, cmd.Process.Signal(tc.sig))
					// lab.json is saved before formatting begins: the
					// namespaces, and the pids once the JVMs run.
					atSignal, err = localkafka.Load(dir)
					require.NoError(t, err)
				}
			}
			err = cmd.Wait()
			t.Logf("kplan %s (stderr):\n%s", strings.Join(args, " "), strings.Join(lines, "\n"))
			require.NotNil(t, atSignal, "kplan lab up never reached %q", tc.phase)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			assert.Equal(t, 1, exit.ExitCode())
			assert.Empty(t, stdout.String(), "no bootstrap servers for a lab that is not up")

			last := lines[len(lines)-1]
			assert.True(t, strings.HasPrefix(last, "kplan: lab up interrupted ("+signalled[tc.sig]+") while "), last)
			landed := false
			for _, p := range tc.within {
				landed = landed || strings.Contains(last, " while "+string(p)+"; cleaned up: ")
			}
			assert.True(t, landed, "interrupted in %v: %s", tc.within, last)
			assert.True(t, strings.HasSuffix(last, "; nothing of the lab runs (its files stay in "+dir+", which the next lab up clears)"), last)
			if tc.phase == localkafka.PhaseReady {
				assert.Contains(t, last, "stopped ")
			}
			if atSignal.Net != nil {
				assert.Contains(t, last, "removed "+strconv.Itoa(len(atSignal.Net.Namespaces))+" network namespace")
				assert.Contains(t, last, "bridge "+atSignal.Net.Bridge)
			} else {
				assert.NotContains(t, tc.args, "--broker-bandwidth", "the namespaces are made before formatting")
			}
			if slices.Contains(tc.args, "--broker-cpu") && strings.Contains(last, "stopped ") {
				assert.Contains(t, last, "removed 2 cgroups", "the broker's and the lab's")
			}

			// Nothing left: by the pids lab.json held, by scanning /proc,
			// and by the names of the namespaces, links and cgroups.
			for _, n := range atSignal.Nodes {
				assert.False(t, n.PID > 0 && n.Alive(), "node-%d (pid %d) still runs", n.ID, n.PID)
			}
			left, err := localkafka.Leftovers(dir)
			require.NoError(t, err)
			assert.Empty(t, left, "left of the interrupted lab")
			if atSignal.Net != nil {
				for _, ns := range atSignal.Net.Namespaces {
					assert.NoFileExists(t, "/run/netns/"+ns)
				}
				assert.NoDirExists(t, "/sys/class/net/"+atSignal.Net.Bridge)
			}

			// lab.json claims nothing running; lab down has nothing to do.
			s, err := localkafka.Load(dir)
			require.NoError(t, err)
			assert.False(t, s.AnyAlive())
			assert.Nil(t, s.Net)
			code, _, errOut := run("lab", "down", "--dir", dir, "--grace", "0")
			assert.Equal(t, 0, code, errOut)
		})
	}
}
