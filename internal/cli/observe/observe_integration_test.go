//go:build integration

package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

// recording keeps the last raw sample the verb took.
type recording struct {
	observe.Sampler
	mu   sync.Mutex
	last observe.Sample
}

func (r *recording) Sample(ctx context.Context) (observe.Sample, error) {
	s, err := r.Sampler.Sample(ctx)
	r.mu.Lock()
	r.last = s
	r.mu.Unlock()
	return s, err
}

// The workload of TestObserveLab: a fast topic of large records, a slow
// one of small records (30x fewer records/s, 10x smaller), an idle one.
const (
	fastRate, fastSize = 600.0, 1000
	slowRate, slowSize = 20.0, 100
)

// labRun is what one observation of the lab saw.
type labRun struct {
	result   observe.Result
	last     observe.Sample // the verb's last raw sample
	snapshot []byte         // its --out file
	path     string
}

// observeLab creates prefix-fast, prefix-slow and prefix-idle on the shared
// lab, writes the first two with kplan's workload engine (loadgen.Write) at
// fastRate and slowRate, reads the fast one with two consumer groups, and
// runs kplan observe over window with three samples.
func observeLab(t *testing.T, prefix string, window time.Duration) labRun {
	t.Helper()
	lab := labtest.Shared(t)
	conn := kafka.ConnOptions{BootstrapServers: lab.Bootstrap}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, kafka.CreateTopic(ctx, cl, prefix+"-fast", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, nil))
	require.NoError(t, kafka.CreateTopic(ctx, cl, prefix+"-slow", [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil))
	require.NoError(t, kafka.CreateTopic(ctx, cl, prefix+"-idle", [][]int32{{1, 3}}, nil))
	mine := func(s string) bool { return strings.HasPrefix(s, prefix+"-") }
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, mine)
		return err == nil && len(c.Partitions) == 7
	}, 30*time.Second, 200*time.Millisecond)
	require.NoError(t, kafkatest.FillPartitions(ctx, conn, prefix+"-idle", []int32{0}, 20, 500))

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, s := range []loadgen.WriteSpec{{Topic: prefix + "-fast", Rate: fastRate, RecordSize: fastSize, Run: 1}, {Topic: prefix + "-slow", Rate: slowRate, RecordSize: slowSize, Run: 2}} {
		wg.Go(func() {
			if _, err := loadgen.Write(wctx, conn, "test", s); err != nil {
				errs <- err
			}
		})
	}
	for _, g := range []string{prefix + "-readers-a", prefix + "-readers-b"} {
		wg.Go(func() {
			if _, err := loadgen.ConsumeGroup(wctx, conn, "test", g, []string{prefix + "-fast"}, 500*time.Millisecond); err != nil {
				errs <- err
			}
		})
	}
	defer func() {
		stop()
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.NoError(t, err)
		}
	}()
	time.Sleep(3 * time.Second) // producers and groups settle

	rec := &recording{}
	out := filepath.Join(t.TempDir(), "observed.json")
	ios, stdout, stderr, _ := iostreamsTest()
	opts := &Options{IO: ios, Version: "test", Conn: conn, Plan: observe.Plan{Window: window, Samples: 3}, Out: out, Format: report.JSON,
		Topics: regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + "-"),
		wrap:   func(s observe.Sampler) observe.Sampler { rec.Sampler = s; return rec }}
	require.NoError(t, runObserve(ctx, opts))
	t.Logf("stderr:\n%s", stderr.String())
	run := labRun{path: out, last: rec.last}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &run.result))
	run.snapshot, err = os.ReadFile(out)
	require.NoError(t, err)
	return run
}

// TestObserveLab runs kplan observe on the real lab while kplan's own
// workload engine writes two topics at rates 30x apart with records 10x
// apart and two consumer groups read the fast one, and checks what must
// hold: a rate for every partition, each topic's rate of the right order
// of magnitude, each replica's bytes as DescribeLogDirs said at the last
// sample, both groups found, the idle topic flagged, and a snapshot that
// loads as a layout with sizes and as rates. How close the rates come to
// what was written is an acceptance figure (TestAcceptObserveRates).
func TestObserveLab(t *testing.T) {
	run := observeLab(t, "obs", 6*time.Second)
	r := run.result
	assert.True(t, r.Traffic)
	require.Len(t, r.Partitions, 7)
	topics := map[string]observe.TopicLoad{}
	for _, tl := range r.Topics {
		topics[tl.Topic] = tl
	}
	for _, p := range r.Partitions {
		assert.Positive(t, p.ObservedSeconds, "%s-%d has an observed rate", p.Topic, p.Partition)
		assert.Equal(t, p.Topic == "obs-idle", p.Idle, "%s-%d", p.Topic, p.Partition)
	}
	fast, slow, idle := topics["obs-fast"], topics["obs-slow"], topics["obs-idle"]
	t.Logf("obs-fast: %.1f records/s, %.0f B/s, %.0f B/record; obs-slow: %.2f records/s, %.0f B/s, %.0f B/record",
		fast.Produce.RecordsPerSecond.Mean, fast.Produce.BytesPerSecond.Mean, fast.Produce.BytesPerRecord,
		slow.Produce.RecordsPerSecond.Mean, slow.Produce.BytesPerSecond.Mean, slow.Produce.BytesPerRecord)
	// How close the rates are to what was written is a measured statistic:
	// TestAcceptObserveRates checks it (within 10%) in make acceptance.
	// Here, only that the written topics have rates and bytes.
	for _, tl := range []observe.TopicLoad{fast, slow} {
		assert.Positive(t, tl.Produce.RecordsPerSecond.Mean, "%s has a record rate", tl.Topic)
		assert.Positive(t, tl.Produce.BytesPerSecond.Mean, "%s has a byte rate", tl.Topic)
		assert.Positive(t, tl.Produce.BytesPerRecord, "%s has bytes per record", tl.Topic)
	}
	assert.True(t, idle.Idle, "the topic nobody writes is flagged")
	assert.Positive(t, idle.SizeBytes, "its bytes on disk are still reported")
	assert.ElementsMatch(t, []string{"obs-readers-a", "obs-readers-b"}, fast.Groups)
	for _, g := range r.Groups {
		if g.Topic == "obs-fast" {
			assert.Positive(t, g.RecordsPerSecond.Mean, "%s reads", g.Group)
		}
	}

	// Kafka 4.3.1 answers ListOffsets' earliest-local (-4): without tiered
	// storage it is the log start offset, so nothing is remote.
	require.Len(t, run.last.Offsets, 7)
	for _, o := range run.last.Offsets {
		assert.Equal(t, o.Start, o.LocalStart, "%s-%d: earliest local offset", o.Topic, o.Partition)
	}
	for _, p := range r.Partitions {
		assert.Zero(t, p.RemoteBytes, "%s-%d", p.Topic, p.Partition)
	}

	// Each replica's bytes are what DescribeLogDirs said at the last sample.
	want := map[[3]any]int64{}
	for _, rs := range run.last.Replicas {
		want[[3]any{rs.Topic, rs.Partition, rs.Broker}] = rs.Bytes
	}
	n := 0
	for _, p := range r.Partitions {
		assert.Len(t, p.Replicas, p.RF, "%s-%d: a size from every replica", p.Topic, p.Partition)
		for _, rp := range p.Replicas {
			assert.Equal(t, want[[3]any{p.Topic, p.Partition, rp.Broker}], rp.Bytes, "%s-%d on broker %d", p.Topic, p.Partition, rp.Broker)
			n++
		}
	}
	assert.Equal(t, 3*3+3*2+2, n)

	c, err := topology.Load(bytes.NewReader(run.snapshot), run.path)
	require.NoError(t, err)
	for _, p := range c.Partitions {
		assert.Positive(t, p.SizeBytes, "%s has its size in the snapshot", p.Key())
	}
	tr, err := observe.ParseSnapshotRates(run.snapshot, run.path)
	require.NoError(t, err)
	assert.InDelta(t, fast.Produce.BytesPerSecond.Mean, tr.BytesPerSecond["obs-fast"], 1e-6)
}
