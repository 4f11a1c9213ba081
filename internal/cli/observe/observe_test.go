package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/clock/clocktest"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
)

// parse runs `kplan observe args` up to its run function and returns the
// options it would run with.
func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	var got *Options
	cmd := NewCmdObserve(cmdutil.NewTestFactory(), func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	return got, err
}

func TestNewCmdObserve(t *testing.T) {
	o, err := parse(t, "--bootstrap-server", "k1:9092", "--window", "10s", "--samples", "3", "--topics", "^a", "--out", "/tmp/x.json", "-o", "json")
	require.NoError(t, err)
	assert.Equal(t, observe.Plan{Window: 10 * time.Second, Samples: 3}, o.Plan)
	assert.Equal(t, "k1:9092", o.Conn.BootstrapServers)
	assert.Equal(t, "^a", o.Topics.String())
	assert.Equal(t, "/tmp/x.json", o.Out)
	assert.Equal(t, report.JSON, o.Format)
	assert.False(t, o.Lab)

	o, err = parse(t, "--cluster", "lab", "--lab-dir", "/tmp/lab")
	require.NoError(t, err)
	assert.True(t, o.Lab)
	assert.Equal(t, "/tmp/lab", o.LabDir)
	assert.Equal(t, observe.Plan{Window: time.Minute, Samples: 2}, o.Plan, "defaults")
	assert.Nil(t, o.Topics)
}

func TestNewCmdObserveBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--bootstrap-server: required (or --cluster lab)"},
		{[]string{"--cluster", "lab", "--bootstrap-server", "k:1"}, "--bootstrap-server: not with --cluster lab (the lab knows its own addresses)"},
		{[]string{"--cluster", "prod"}, `--cluster: unknown cluster "prod" (want lab, or --bootstrap-server)`},
		{[]string{"--cluster", "lab", "--samples", "1"}, "--samples: want 2 or more, got 1"},
		{[]string{"--cluster", "lab", "--window", "-1s"}, "--window: want a positive duration, got -1s"},
		{[]string{"--cluster", "lab", "--window", "1ms", "--samples", "5"}, "--window: 1ms is too short for 5 samples (a millisecond or more between samples)"},
		{[]string{"--cluster", "lab", "--topics", "("}, "--topics: error parsing regexp: missing closing ): `(`"},
		{[]string{"--cluster", "lab", "-o", "csv"}, `--output: unknown output format "csv" (want table, json, yaml or markdown)`},
		{[]string{"--bootstrap-server", " , "}, "--bootstrap-server: no address given"},
		{[]string{"--cluster", "lab", "--timeout", "0s"}, "--timeout: want a positive duration, got 0s"},
	} {
		_, err := parse(t, tc.args...)
		require.Error(t, err, "%v", tc.args)
		assert.Equal(t, tc.want, err.Error(), "%v", tc.args)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), "%v", tc.args)
	}
}

// producingClock is a fake clock that, each time observe waits for the
// next sample, writes records to the fake cluster and commits a group's
// offset at half of them: the traffic of the window, exactly known.
type producingClock struct {
	*clocktest.Clock
	t       *testing.T
	conn    kafka.ConnOptions
	records int
	end     int64
}

func (c *producingClock) Sleep(ctx context.Context, d time.Duration) error {
	require.NoError(c.t, kafkatest.FillPartitions(ctx, c.conn, "busy", []int32{0}, c.records, 100))
	c.end += int64(c.records)
	require.NoError(c.t, kafkatest.CommitOffset(ctx, c.conn, "readers", "busy", 0, c.end/2))
	return c.Clock.Sleep(ctx, d)
}

// TestRunObserveFake runs the verb on an in-process fake cluster: a topic
// written at a known rate, one written never, one group reading half.
func TestRunObserveFake(t *testing.T) {
	addrs, stop, err := kafkatest.FakeClusterWithTopics(1, 1, "busy", "quiet")
	require.NoError(t, err)
	defer stop()
	conn := kafka.ConnOptions{BootstrapServers: strings.Join(addrs, ",")}
	require.NoError(t, kafkatest.FillPartitions(context.Background(), conn, "quiet", []int32{0}, 1, 10))

	out := filepath.Join(t.TempDir(), "snap.json")
	ios, stdout, stderr, _ := iostreamsTest()
	clk := &producingClock{Clock: clocktest.New(), t: t, conn: conn, records: 200}
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	cmd := NewCmdObserve(f, func(ctx context.Context, o *Options) error {
		o.Clock = clk
		return runObserve(ctx, o)
	})
	cmd.SetArgs([]string{"--bootstrap-server", conn.BootstrapServers, "--window", "10s", "--samples", "3", "--out", out, "-o", "json"})
	require.NoError(t, cmd.Execute())

	var r observe.Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &r))
	assert.True(t, r.Traffic)
	assert.Equal(t, 3, r.Samples)
	assert.InDelta(t, 10, r.WindowSeconds, 1e-9)
	require.Len(t, r.Topics, 2)
	busy, quiet := r.Topics[0], r.Topics[1]
	assert.Equal(t, "busy", busy.Topic)
	assert.Equal(t, int64(400), busy.Produce.Records, "200 records before each of the two later samples")
	assert.InDelta(t, 40, busy.Produce.RecordsPerSecond.Mean, 1e-9)
	assert.Positive(t, busy.Produce.BytesPerSecond.Mean)
	assert.Greater(t, busy.Produce.BytesPerRecord, 100.0, "a 100-byte value and its record overhead")
	assert.True(t, quiet.Idle)
	assert.False(t, busy.Idle)
	assert.Equal(t, []string{"readers"}, busy.Groups)
	require.Len(t, r.Groups, 1)
	assert.InDelta(t, 20, r.Groups[0].RecordsPerSecond.Mean, 1e-9, "the group commits half of what is written, from the second sample")
	assert.Equal(t, int64(200), r.Groups[0].Lag)
	assert.Equal(t, 3, strings.Count(stderr.String(), "observe: sample "), stderr.String())

	data, err := os.ReadFile(out)
	require.NoError(t, err)
	c, err := topology.Load(bytes.NewReader(data), out)
	require.NoError(t, err)
	for _, p := range c.Partitions {
		assert.GreaterOrEqual(t, p.SizeBytes, int64(0), "%s has its size", p.Key())
	}
	rates, err := audit.ParseRatesFile(data, out)
	require.NoError(t, err)
	assert.InDelta(t, busy.Produce.BytesPerSecond.Mean, rates.Of("busy"), 1e-9)
	assert.Zero(t, rates.Of("quiet"))
}

// TestRunObserveNoTraffic: a cluster nothing writes to is said to have no
// traffic, in the text and the JSON.
func TestRunObserveNoTraffic(t *testing.T) {
	addrs, stop, err := kafkatest.FakeClusterWithTopics(1, 2, "still")
	require.NoError(t, err)
	defer stop()
	ios, stdout, _, _ := iostreamsTest()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	cmd := NewCmdObserve(f, func(ctx context.Context, o *Options) error {
		o.Clock = clocktest.New()
		return runObserve(ctx, o)
	})
	cmd.SetArgs([]string{"--bootstrap-server", strings.Join(addrs, ","), "--window", "5s"})
	require.NoError(t, cmd.Execute())
	assert.Contains(t, stdout.String(), observe.NoTrafficNote)
	assert.Contains(t, stdout.String(), "idle")

	cmd = NewCmdObserve(f, func(ctx context.Context, o *Options) error {
		o.Clock = clocktest.New()
		return runObserve(ctx, o)
	})
	cmd.SetArgs([]string{"--bootstrap-server", strings.Join(addrs, ","), "--window", "5s", "--topics", "^nothing$"})
	err = cmd.Execute()
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Contains(t, err.Error(), `--topics: no topic of `)
}

func iostreamsTest() (*iostreams.IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	ios, in, out, errOut := iostreams.Test()
	return ios, out, errOut, in
}
