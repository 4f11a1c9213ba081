//go:build integration

package kafka_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	climeasure "github.com/kplan-dev/kplan/internal/cli/measure"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/report/measurereport"
)

// The command's test lives here, beside internal/kafka's lab: one lab per
// test binary, and this binary already has one.

// lockedBuffer is a buffer the test reads while the command writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runBatching runs `kplan measure batching` in process; stderr receives
// its progress lines and, at the end, its error.
func runBatching(ctx context.Context, stderr *lockedBuffer, args ...string) (code int, stdout string) {
	var out bytes.Buffer
	f := &cmdutil.Factory{IOStreams: &iostreams.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: stderr}, Version: "test", Now: time.Now}
	cmd := climeasure.NewCmdBatching(f, nil)
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read the test binary's own command line
	cmd.SetOut(&out)
	cmd.SetErr(stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(stderr, err)
	}
	return cmdutil.ExitCode(err), out.String()
}

// batchingTopics lists the scratch topics left on the lab.
func batchingTopics(t *testing.T, lab *labtest.Lab, prefix string) []string {
	t.Helper()
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap, CommandConfig: lab.ClientConfig}, "test")
	require.NoError(t, err)
	defer cl.Close()
	ts, err := kadm.NewClient(cl).ListTopics(context.Background())
	require.NoError(t, err)
	var left []string
	for _, n := range ts.Names() {
		if strings.HasPrefix(n, prefix) {
			left = append(left, n)
		}
	}
	return left
}

// TestBatchingLab runs a 2x2 sweep on the lab: every cell measured records
// with p50 <= p99 <= max, both choices are made, --apply-to wrote a
// properties file that parses and holds the recommended cell, the report
// has its heatmap, and the scratch topic is gone.
func TestBatchingLab(t *testing.T) {
	lab := labtest.Shared(t)
	dir := t.TempDir()
	props := filepath.Join(dir, "producer.properties")
	require.NoError(t, os.WriteFile(props, []byte("# mine\ncompression.type=lz4\nlinger.ms=999\n"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stderr lockedBuffer
	code, out := runBatching(ctx, &stderr, "--cluster", "lab", "--lab-dir", lab.State.Dir, "--topic", "kplan-batching-it",
		"--linger", "0,20ms", "--batch-size", "1,10", "--rate", "200/s", "--cell-duration", "1500ms", "--warmup", "500ms",
		"--latency-objective", "200ms", "--apply-to", props, "--report", filepath.Join(dir, "report"), "-o", "json")
	require.Equal(t, 0, code, stderr.String())

	var s measure.BatchStudy
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	require.Len(t, s.Cells, 4)
	assert.True(t, s.Complete)
	for _, c := range s.Cells {
		name := c.Linger + " x " + c.BatchSize.String()
		assert.Positive(t, c.Sent, name)
		assert.Positive(t, c.Latency.Count, "%s: latencies measured", name)
		assert.Equal(t, c.Received, c.Latency.Count, "%s: one latency per record read", name)
		assert.LessOrEqual(t, c.Latency.P50, c.Latency.P99, name)
		assert.LessOrEqual(t, c.Latency.P99, c.Latency.Max, name)
		assert.GreaterOrEqual(t, c.Received, c.Acked, "%s: acks=all on a healthy lab: every acknowledged record is read back", name)
		assert.Positive(t, c.RecordsPerBatch, name)
		if c.BatchSize.Records == 1 {
			assert.InDelta(t, 1.0, c.RecordsPerBatch, 1e-9, "%s: a 1-record batch.size holds one record", name)
		}
		assert.LessOrEqual(t, c.RecordsPerBatch, float64(max(c.BatchSize.Records, 1)), "%s: batch.size bounds the records per batch", name)
	}
	require.NotNil(t, s.Recommended)
	assert.Equal(t, measure.BatchRuleTimely, s.Recommended.Rule)
	if s.MeanChoice == nil {
		for _, c := range s.Cells {
			assert.Greater(t, c.Latency.Mean, s.ObjectiveMS, "no mean-latency pick: no cell's mean meets the objective")
		}
	}

	data, err := os.ReadFile(props)
	require.NoError(t, err)
	_, err = kafka.ParseProperties(data, props)
	require.NoError(t, err, "the properties file parses")
	kv := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			_, dup := kv[k]
			assert.False(t, dup, "key %s once", k)
			kv[k] = v
		}
	}
	best := s.Cells[s.Recommended.Cell]
	assert.Equal(t, strconv.FormatInt(best.LingerMS, 10), kv["linger.ms"])
	assert.Equal(t, strconv.Itoa(int(best.BatchBytes)), kv["batch.size"])
	assert.Equal(t, "all", kv["acks"])
	assert.Equal(t, "lz4", kv["compression.type"], "other settings kept")
	assert.Contains(t, string(data), "# mine")

	for _, f := range []string{measurereport.BatchHeatmap, measurereport.BatchReportJSON, measurereport.BatchReportMarkdown} {
		st, err := os.Stat(filepath.Join(dir, "report", f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
	assert.Empty(t, batchingTopics(t, lab, "kplan-batching-it"), "scratch topic deleted")
}

// TestBatchingLabInterrupted cancels a run in its second cell (as Ctrl-C
// does through the command's context): the command fails, prints the cell
// it measured, and still deletes its scratch topic.
func TestBatchingLabInterrupted(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var code int
	var out string
	var stderr lockedBuffer
	go func() {
		defer close(done)
		code, out = runBatching(ctx, &stderr, "--cluster", "lab", "--lab-dir", lab.State.Dir, "--topic", "kplan-batching-int",
			"--linger", "0", "--batch-size", "1,10,100", "--rate", "200/s", "--cell-duration", "2s", "--warmup", "200ms", "-o", "json")
	}()
	// Cancel once the first cell is reported.
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(stderr.String(), "cell 1/3") {
		select {
		case <-done:
			t.Fatalf("finished before it was interrupted: code %d, %s", code, stderr.String())
		case <-deadline:
			t.Fatal("no cell reported in 2 minutes")
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	<-done
	assert.NotEqual(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "stopped after 1 of 3 cells")
	var s measure.BatchStudy
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	assert.False(t, s.Complete)
	assert.Len(t, s.Cells, 1)
	assert.Empty(t, batchingTopics(t, lab, "kplan-batching-int"), "scratch topic deleted after the interrupt")
}
