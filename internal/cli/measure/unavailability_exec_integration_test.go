//go:build integration

package measure_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
)

// asKplan makes the test binary run as kplan (its arguments are kplan's):
// the exec killer's kill and restore commands call it for `kplan lab kill`
// and `kplan lab restart`, so no kplan binary has to be built first. The
// test is in the external package: the internal one cannot import
// internal/app, which imports it.
const asKplan = "KPLAN_TEST_AS_KPLAN"

func TestMain(m *testing.M) {
	if os.Getenv(asKplan) == "1" {
		os.Exit(app.Main())
	}
	os.Exit(labtest.Main(m))
}

// TestUnavailabilityExecKiller runs `kplan measure unavailability` on "any
// cluster with a killer": the real (PLAINTEXT) lab reached through
// --bootstrap-server, the exec killer killing and restarting brokers with
// `kplan lab kill` and `kplan lab restart`, --yes. Every count is
// measured, detection (the intercept) is positive, the killed broker is
// back in every ISR and no kplan-unavail topic is left.
func TestUnavailabilityExecKiller(t *testing.T) {
	lab := labtest.Shared(t)
	dir := lab.State.Dir
	self, err := os.Executable()
	require.NoError(t, err)
	kp := asKplan + "=1 " + self
	args := []string{"unavailability", "--bootstrap-server", lab.Bootstrap, "--killer", "exec",
		"--kill-cmd", kp + " lab kill broker-{id} --dir " + dir,
		"--restore-cmd", kp + " lab restart broker-{id} --dir " + dir,
		"--partitions", "1,10", "--repeat", "1", "--yes", "-o", "json"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A topic of the user's with a replica on every broker, so that "back
	// in every ISR" is checked on partitions the run did not make.
	const probe = "isr-probe"
	m := loadgen.NewMeasurer(kafka.ConnOptions{BootstrapServers: lab.Bootstrap, Timeout: 10 * time.Second}, "test")
	defer m.Close()
	require.NoError(t, m.CreateScratch(ctx, probe, 3, 3, []int32{1, 2, 3}))
	defer func() {
		_, err := m.DeleteScratch(context.WithoutCancel(ctx))
		assert.NoError(t, err)
	}()
	t.Logf("$ kplan measure %s", strings.Join(args, " "))
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	code := app.Run(ctx, f, append([]string{"measure"}, args...))
	t.Logf("stderr:\n%s", errOut)
	require.Equal(t, cmdutil.ExitOK, code, "stderr: %s", errOut)

	var res experiment.UnavailabilityResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.NotEqual(t, "lab", res.Cluster, "a cluster reached through --bootstrap-server, not the lab adapter")
	assert.False(t, res.Partial)
	require.Len(t, res.Runs, 2)
	for i, n := range []int{1, 10} {
		r := res.Runs[i]
		assert.Equal(t, n, r.Partitions)
		assert.Positive(t, r.AllMS, "%d partitions: measured", n)
		assert.LessOrEqual(t, r.FirstMS, r.AllMS)
	}
	require.NotNil(t, res.Fit, res.FitError)
	assert.Positive(t, res.Fit.DetectionMS, "detection (intercept) is positive")
	victim := res.Victim

	// The killed broker runs again (restarted by the restore command, in
	// another process: its new pid is in the lab's state file) and is back
	// in every ISR; no scratch topic is left.
	now, err := localkafka.Load(dir)
	require.NoError(t, err)
	lab.State.Nodes = now.Nodes
	for _, n := range now.Brokers() {
		assert.True(t, n.Alive(), "broker-%d running", n.ID)
	}
	adm, err := kafka.NewScratchAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer adm.Close()
	snap, err := adm.Snapshot(ctx)
	require.NoError(t, err)
	probed := 0
	for _, p := range snap.Partitions {
		assert.False(t, strings.HasPrefix(p.Topic, "kplan-unavail-"), fmt.Sprintf("scratch topic %s left", p.Topic))
		if slices.Contains(p.Replicas, victim) {
			assert.Contains(t, p.ISR, victim, "%s/%d: broker %d back in the ISR", p.Topic, p.Partition, victim)
		}
		if p.Topic == probe {
			probed++
		}
	}
	assert.Equal(t, 3, probed, "the probe topic's partitions were checked")
}
