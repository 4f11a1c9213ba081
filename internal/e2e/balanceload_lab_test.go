//go:build integration || acceptance

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/observe"
)

// loadTolerance is --balance load's band in the lab runs: every broker's
// bytes in and bytes out within 10% of the mean.
const loadTolerance = 0.10

// balanceLoadFigures is one run's measured and planned skews.
type balanceLoadFigures struct {
	InBefore, OutBefore, InAfter, OutAfter float64
	// CountIn is the count-balanced plan's bytes in max/mean on the same
	// snapshot; BytesCopied and CountCopied what each plan copies.
	CountIn                  float64
	BytesCopied, CountCopied int64
	// SizeRatio is the largest partition's size over the smallest's in
	// the snapshot before the plan.
	SizeRatio float64
}

// loadShape is a balanceLoadRun's topics and timing: the hot topic's and
// the cold topic's assignments, and observe's window.
type loadShape struct {
	hot, cold         [][]int32
	window            string
	samples, warm     int
	hotRate, coldRate float64
	// hotSize and coldSize are the topics' record sizes in bytes.
	hotSize, coldSize int
}

// fourBrokerLoad is the acceptance run's shape: 8 hot partitions on
// brokers 1-2 at 2000 records/s of 1000 bytes, 8 cold ones on 3-4 at 100
// records/s of 50 bytes (rates and record sizes 20x apart, bytes/s 400x,
// so partition sizes end far more than 50x apart), 15 s windows of 3
// samples.
var fourBrokerLoad = loadShape{
	hot:    [][]int32{{1, 2}, {1, 2}, {2, 1}, {2, 1}, {1, 2}, {2, 1}, {1, 2}, {2, 1}},
	cold:   [][]int32{{3, 4}, {4, 3}, {3, 4}, {4, 3}, {3, 4}, {4, 3}, {3, 4}, {4, 3}},
	window: "15s", samples: 3, warm: 10, hotRate: 2000, coldRate: 100, hotSize: 1000, coldSize: 50,
}

// threeBrokerLoad is make test's short run on the shared 3-broker lab: 6
// hot partitions on brokers 1-2, 3 cold ones on broker 3, 6 s windows.
var threeBrokerLoad = loadShape{
	hot:    [][]int32{{1, 2}, {2, 1}, {1, 2}, {2, 1}, {1, 2}, {2, 1}},
	cold:   [][]int32{{3}, {3}, {3}},
	window: "6s", samples: 2, warm: 4, hotRate: 500, coldRate: 25, hotSize: 1000, coldSize: 50,
}

// balanceLoadRun runs the sequence once on topics named after prefix.
func balanceLoadRun(t *testing.T, lab *labtest.Lab, prefix string, shape loadShape) balanceLoadFigures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn := kafka.ConnOptions{BootstrapServers: lab.Bootstrap}
	cl, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	hot, cold := prefix+"-hot", prefix+"-cold"
	require.NoError(t, kafka.CreateTopic(ctx, cl, hot, shape.hot, nil))
	require.NoError(t, kafka.CreateTopic(ctx, cl, cold, shape.cold, nil))
	cl.Close()

	// The traffic, for the whole sequence.
	traffic, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	run := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil && !errors.Is(err, context.Canceled) {
				errs <- err
			}
		})
	}
	run(func() error {
		_, err := loadgen.Write(traffic, conn, "test", loadgen.WriteSpec{Topic: hot, Rate: shape.hotRate, RecordSize: shape.hotSize, Run: 1})
		return err
	})
	run(func() error {
		_, err := loadgen.Write(traffic, conn, "test", loadgen.WriteSpec{Topic: cold, Rate: shape.coldRate, RecordSize: shape.coldSize, Run: 2})
		return err
	})
	for _, g := range []string{prefix + "-readers-a", prefix + "-readers-b"} {
		run(func() error {
			_, err := loadgen.ConsumeGroup(traffic, conn, "test", g, []string{hot}, time.Second)
			return err
		})
	}
	defer func() {
		stop()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("traffic: %v", err)
		}
	}()
	time.Sleep(time.Duration(shape.warm) * time.Second) // the groups join, sizes grow

	dir := t.TempDir()
	before, after, plan := filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json"), filepath.Join(dir, "plan.json")
	topics := "^" + prefix + "-"
	observe := func(out string) {
		mustKplan(ctx, t, "observe", "--bootstrap-server", lab.Bootstrap, "--topics", topics, "--window", shape.window, "--samples", fmt.Sprint(shape.samples), "--out", out)
	}
	observe(before)
	planOut, _ := mustKplan(ctx, t, "reassign", "--from", before, "--balance", "load", "--tolerance", fmt.Sprint(loadTolerance), "--out", plan, "-o", "json")
	var sum struct {
		Load struct {
			BytesMoved int64 `json:"bytes_moved"`
			Replicas   *struct {
				BytesMoved int64 `json:"bytes_moved"`
				In         struct {
					MaxOverMean float64 `json:"max_over_mean"`
				} `json:"bytes_in"`
			} `json:"replicas_plan"`
		} `json:"load"`
	}
	require.NoError(t, json.Unmarshal([]byte(planOut), &sum), planOut)
	require.NotNil(t, sum.Load.Replicas, "the count plan's figures")
	_, applyErr := mustKplan(ctx, t, "reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--lab-dir", lab.State.Dir, "--throttle", "50MB/s")
	require.True(t, strings.Contains(applyErr, "accepted") || strings.Contains(applyErr, "nothing to do"), applyErr)
	time.Sleep(3 * time.Second)
	observe(after)

	f := balanceLoadFigures{CountIn: sum.Load.Replicas.In.MaxOverMean, BytesCopied: sum.Load.BytesMoved, CountCopied: sum.Load.Replicas.BytesMoved}
	f.InBefore, f.OutBefore = observedSkew(ctx, t, before)
	f.SizeRatio = sizeRatio(t, before)
	f.InAfter, f.OutAfter = observedSkew(ctx, t, after)
	return f
}

// observedSkew is kplan audit's observed bytes in and bytes out max/mean
// of a snapshot.
func observedSkew(ctx context.Context, t *testing.T, snap string) (float64, float64) {
	t.Helper()
	out, _ := mustKplan(ctx, t, "audit", "--from", snap, "-o", "json")
	var r struct {
		Observed struct {
			In struct {
				MaxOverMean float64 `json:"max_over_mean"`
			} `json:"bytes_in"`
			Out struct {
				MaxOverMean float64 `json:"max_over_mean"`
			} `json:"bytes_out"`
		} `json:"observed_load"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Positive(t, r.Observed.In.MaxOverMean, "%s: no observed load", snap)
	return r.Observed.In.MaxOverMean, r.Observed.Out.MaxOverMean
}

// sizeRatio is the largest partition's size over the smallest's (at
// least one byte) in a snapshot.
func sizeRatio(t *testing.T, snap string) float64 {
	t.Helper()
	data, err := os.ReadFile(snap)
	require.NoError(t, err)
	r, err := observe.ReadSnapshot(data, snap)
	require.NoError(t, err)
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, p := range r.Partitions {
		lo, hi = min(lo, max(p.SizeBytes, 1)), max(hi, p.SizeBytes)
	}
	require.NotEmpty(t, r.Partitions)
	return float64(hi) / float64(lo)
}
