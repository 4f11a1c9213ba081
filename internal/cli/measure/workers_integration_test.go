//go:build integration

package measure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	mm "github.com/kplan-dev/kplan/internal/measure"
)

// TestMeasureWorkersLab: `kplan measure --workers 2` on the shared lab,
// Tp produced by two `kplan worker` processes (this test binary run as
// kplan) started before it with its --run id. The plan says Tp came from
// 2 workers of that run, its Tp and Tc are measured, every worker
// reported its phase and exited 0, and neither the scratch topics nor the
// run's topics are left.
func TestMeasureWorkersLab(t *testing.T) {
	lab := labtest.Shared(t)
	self, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := fmt.Sprintf("mw%d", os.Getpid())

	type proc struct {
		cmd         *exec.Cmd
		out, errOut bytes.Buffer
	}
	var workers []*proc
	for i := range 2 {
		args := []string{"worker", "--run", run, "--index", fmt.Sprint(i), "--bootstrap-server", lab.Bootstrap, "--join-timeout", "2m"}
		if lab.ClientConfig != "" {
			args = append(args, "--command-config", lab.ClientConfig)
		}
		w := &proc{cmd: exec.CommandContext(ctx, self, args...)}
		w.cmd.Env = append(os.Environ(), asKplan+"=1")
		w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.errOut
		require.NoError(t, w.cmd.Start())
		workers = append(workers, w)
	}

	args := []string{"measure", "--cluster", "lab", "--lab-dir", lab.State.Dir, "--workers", "2", "--run", run,
		"--duration", "3s", "--window", "500ms", "--record-size", "1000", "--replication-samples", "20",
		"--election-partitions", "0", "--election-time", "25ms", "-o", "json"}
	t.Logf("$ kplan %s", strings.Join(args, " "))
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	code := app.Run(ctx, f, args)
	t.Logf("stderr:\n%s", errOut)
	require.Equal(t, cmdutil.ExitOK, code, "stderr: %s", errOut)
	for i, w := range workers {
		require.NoError(t, w.cmd.Wait(), "worker %d; stderr:\n%s", i, w.errOut.String())
		assert.Contains(t, w.out.String(), "phases reported: before; missed: none", "worker %d", i)
	}
	assert.Contains(t, errOut.String(), "kplan worker --run "+run+" --index 1 --bootstrap-server ")

	var plan mm.Plan
	require.NoError(t, json.Unmarshal(out.Bytes(), &plan), out.String())
	assert.Equal(t, 2, plan.Settings.Workers)
	assert.Equal(t, run, plan.Settings.WorkersRun)
	assert.Positive(t, plan.Produce.BytesPerSec)
	assert.Equal(t, 5, plan.Produce.Windows.N, "six 500ms windows, the first the warm-up")
	assert.Positive(t, plan.Produce.Records)
	assert.Positive(t, plan.Consume.BytesPerSec)

	adm := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap, CommandConfig: lab.ClientConfig}, "test")
	defer adm.Close()
	left, err := adm.Snapshot(ctx, func(topic string) bool {
		return strings.HasPrefix(topic, "kplan-measure-") || strings.HasPrefix(topic, dist.TopicPrefix+run)
	})
	require.NoError(t, err)
	assert.Empty(t, left.Partitions, "the scratch and run topics are deleted")
}
