//go:build integration

package chaos_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestChaosWorkersLab: three `kplan worker` processes (this test binary
// run as kplan) and `kplan chaos --cluster lab --workers 3 --kill
// broker-3` on the shared 3-broker lab. Worker 2 is killed (SIGKILL)
// during its after phase. The merged result has every partitioner, the
// leaders before and after the kill, 0 lost and 0 duplicates; workers 0
// and 1 missed nothing and each of their acknowledged records was read
// back once; worker 2 is named with its after phase; the run's topics are
// gone.
func TestChaosWorkersLab(t *testing.T) {
	lab := labForRemote(t)
	t.Cleanup(func() { restartDead(t, lab) })
	self, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := fmt.Sprintf("itw%d", os.Getpid())

	// The workers start first: they wait for the coordinator's plan.
	afterStarted := make(chan struct{})
	var once sync.Once
	workers := startWorkers(ctx, t, self, lab, run, 3, func(i int) []string {
		if i == 1 {
			// Its clock 2 s behind the coordinator's: measured through the
			// brokers' log-append times and corrected.
			return []string{"--clock-skew", "-2s"}
		}
		return nil
	}, func(i int, line string) {
		// Once its failover report is out (published when its after
		// phase began; reports go out in phase order): the after phase
		// is what it misses.
		if i == 2 && strings.Contains(line, "phase failover reported") {
			once.Do(func() { close(afterStarted) })
		}
	})
	go func() {
		select {
		case <-afterStarted:
			_ = workers[2].cmd.Process.Signal(syscall.SIGKILL)
		case <-ctx.Done():
		}
	}()

	res, coordErr := runCoordinator(ctx, t, self, "chaos", "--cluster", "lab", "--lab-dir", lab.State.Dir,
		"--topic", "wtest", "--workers", "3", "--run", run, "--kill", "broker-3",
		"--rate", "50kB/s", "--warmup", "1s", "--phase-duration", "3s", "-o", "json")
	for i, w := range workers {
		<-w.done
		err := w.cmd.Wait()
		if i == 2 {
			require.Error(t, err, "worker 2 was killed")
			continue
		}
		require.NoError(t, err, "worker %d; stderr:\n%s", i, w.errOut.String())
		assert.Contains(t, w.out.String(), "phases reported: warm-up, before, failover, after; missed: none", "worker %d", i)
	}
	assert.Contains(t, coordErr, "kplan worker --run "+run+" --index 2 --bootstrap-server ")

	checkMergedKill(t, res, run)
	for _, w := range res.Workers.Workers[:2] {
		assert.Empty(t, w.Missed, "worker %d", w.Index)
		assert.Positive(t, w.Acked, "worker %d", w.Index)
		assert.Equal(t, w.Acked, w.Read, "worker %d: each acknowledged record read back once", w.Index)
	}
	assert.Equal(t, []chaos.MissedPhase{{Phase: "after", Reason: "no report"}}, res.Workers.Workers[2].Missed)
	for _, w := range res.Workers.Workers {
		want := 0.0
		if w.Index == 1 {
			want = 2000
		}
		require.NotNil(t, w.Clock, "worker %d", w.Index)
		assert.InDelta(t, want, w.Clock.SkewMS, w.Clock.UncertaintyMS+1, "worker %d", w.Index)
		assert.Equal(t, w.Index == 1, w.Clock.Corrected, "worker %d", w.Index)
	}
	assert.Contains(t, strings.Join(res.Notes, "\n"), "worker 2 missed phase after")

	adm := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap, CommandConfig: lab.ClientConfig}, "test")
	defer adm.Close()
	runTopics := func(topic string) bool { return topic == dist.ControlTopic(run) || topic == dist.ResultsTopic(run) }
	left, err := adm.Snapshot(ctx, runTopics)
	require.NoError(t, err)
	assert.Empty(t, left.Partitions, "the run's topics are deleted; notes: %q", res.Notes)
}

// workerProc is one `kplan worker` process of a test.
type workerProc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	errOut bytes.Buffer
	done   chan struct{} // closed once its stderr is read to the end
}

// startWorkers starts n `kplan worker` processes (this test binary run as
// kplan) for run on lab, worker i with extra(i) appended to its arguments;
// onLine, if set, gets each line of their stderr.
func startWorkers(ctx context.Context, t *testing.T, self string, lab *labtest.Lab, run string, n int, extra func(int) []string, onLine func(int, string)) []*workerProc {
	t.Helper()
	workers := make([]*workerProc, n)
	for i := range workers {
		args := []string{"worker", "--run", run, "--index", fmt.Sprint(i), "--bootstrap-server", lab.Bootstrap, "--join-timeout", "2m"}
		if extra != nil {
			args = append(args, extra(i)...)
		}
		if lab.ClientConfig != "" {
			args = append(args, "--command-config", lab.ClientConfig)
		}
		w := &workerProc{cmd: exec.CommandContext(ctx, self, args...), done: make(chan struct{})}
		w.cmd.Env = append(os.Environ(), asKplan+"=1")
		w.cmd.Stdout = &w.out
		stderr, err := w.cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, w.cmd.Start())
		go func() {
			defer close(w.done)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				line := sc.Text()
				w.errOut.WriteString(line + "\n")
				if onLine != nil {
					onLine(i, line)
				}
			}
		}()
		workers[i] = w
	}
	return workers
}

// runCoordinator runs `kplan args...` (a `kplan chaos --workers N -o json`)
// and returns its result and stderr.
func runCoordinator(ctx context.Context, t *testing.T, self string, args ...string) (*chaos.Result, string) {
	t.Helper()
	coord := exec.CommandContext(ctx, self, args...)
	coord.Env = append(os.Environ(), asKplan+"=1")
	var out, errOut bytes.Buffer
	coord.Stdout, coord.Stderr = &out, &errOut
	require.NoError(t, coord.Run(), "kplan chaos; stderr:\n%s", errOut.String())
	var res chaos.Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	return &res, errOut.String()
}

// checkMergedKill checks what a 3-worker `kplan chaos --kill broker-3` on
// the 3-broker lab (layout 1,2;2,3;3,1) must give, as a single-process
// run: every default partitioner, the leaders before and after the kill,
// nothing lost or duplicated, the workers' merged histograms, and the
// workers section of run with 3 workers.
func checkMergedKill(t *testing.T, res *chaos.Result, run string) {
	t.Helper()
	var names []string
	for _, p := range res.Partitioners {
		names = append(names, p.Name)
		assert.Zero(t, p.Lost, p.Name)
		assert.Zero(t, p.Duplicates, p.Name)
		before, after := p.Phases["before"], p.Phases["after"]
		require.NotNil(t, before, p.Name)
		require.NotNil(t, after, p.Name)
		assert.Equal(t, []int32{1, 2, 3}, before.Leaders, p.Name)
		assert.Equal(t, []int32{1, 2}, after.Leaders, p.Name)
		assert.Positive(t, before.Acked, p.Name)
		assert.Equal(t, before.Acked, before.LatencyMS.Count, "%s: the workers' merged histograms", p.Name)
	}
	assert.Equal(t, chaos.DefaultPartitioners, names)
	require.NotNil(t, res.Workers)
	assert.Equal(t, run, res.Workers.Run)
	require.Len(t, res.Workers.Workers, 3)
}
