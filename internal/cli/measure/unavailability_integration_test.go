//go:build integration

package measure

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report/measurereport"
)

// unavailLab starts a 3-broker lab of this test's own (fast failover, as
// `kplan lab up`) and stops it at the end. The package shares no TestMain:
// the other measure verbs' tests keep theirs.
func unavailLab(t *testing.T) *localkafka.State {
	t.Helper()
	jars, err := localkafka.FindJars("")
	require.NoError(t, err, "Kafka's jars (make kafka, or KPLAN_KAFKA_JARS)")
	base := 0
	for b := 23092 + (os.Getpid()%40)*250; b < 60000 && base == 0; b += 250 {
		free := true
		for i := 0; i < 60 && free; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b+i)))
			if err != nil {
				free = false
				continue
			}
			_ = l.Close()
		}
		if free {
			base = b
		}
	}
	require.NotZero(t, base, "a free port range")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := localkafka.Up(ctx, localkafka.Config{Brokers: 3, JarsDir: jars, Dir: t.TempDir(), BasePort: base, FastFailover: true}, kafka.BrokersReady(""))
	require.NoError(t, err)
	t.Cleanup(func() {
		// The run restarted brokers: their processes are in the state file,
		// not in s.
		now, err := localkafka.Load(s.Dir)
		if !assert.NoError(t, err) {
			now = s
		}
		assert.NoError(t, now.Down(15*time.Second))
		assert.False(t, now.AnyAlive(), "lab JVMs left running")
	})
	return s
}

// TestUnavailabilityLab kills a broker of a real lab leading 1, 10 and 50
// partitions and checks every count was measured, the fit has a positive
// intercept (detection), the broker is back and the scratch topics are
// gone.
func TestUnavailabilityLab(t *testing.T) {
	s := unavailLab(t)
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	f.Now = time.Now
	cmd := NewCmdUnavailability(f, nil)
	report := t.TempDir()
	cmd.SetArgs([]string{"--cluster", "lab", "--lab-dir", s.Dir, "--partitions", "1,10,50", "--repeat", "1", "-o", "json", "--report", report})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(t, cmd.ExecuteContext(ctx), "stderr: %s", errOut)
	t.Logf("stderr:\n%s", errOut)

	var res experiment.UnavailabilityResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.False(t, res.Partial)
	require.Len(t, res.Runs, 3)
	for i, n := range []int{1, 10, 50} {
		r := res.Runs[i]
		assert.Equal(t, n, r.Partitions)
		assert.Positive(t, r.AllMS, "%d partitions: measured", n)
		assert.LessOrEqual(t, r.FirstMS, r.MedianMS)
		assert.LessOrEqual(t, r.MedianMS, r.AllMS)
	}
	require.NotNil(t, res.Fit, res.FitError)
	assert.Positive(t, res.Fit.DetectionMS, "detection (intercept) is positive")
	assert.Len(t, res.Fit.Residuals, 3)
	assert.Len(t, res.PlanLines, 3)
	assert.True(t, strings.HasPrefix(res.PlanLines[2], "election-time: "), res.PlanLines[2])
	assert.FileExists(t, report+"/"+measurereport.UnavailPlot)

	// The broker is back and no scratch topic is left.
	now, err := localkafka.Load(s.Dir)
	require.NoError(t, err)
	for _, n := range now.Brokers() {
		assert.True(t, n.Alive(), "broker-%d running", n.ID)
	}
	adm, err := kafka.NewScratchAdmin(kafka.ConnOptions{BootstrapServers: strings.Join(s.Bootstrap(), ",")}, "test")
	require.NoError(t, err)
	defer adm.Close()
	snap, err := adm.Snapshot(ctx)
	require.NoError(t, err)
	for _, p := range snap.Partitions {
		assert.False(t, strings.HasPrefix(p.Topic, "kplan-unavail-"), fmt.Sprintf("scratch topic %s left", p.Topic))
	}
}
