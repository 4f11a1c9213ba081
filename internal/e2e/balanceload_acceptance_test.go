//go:build acceptance

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/acceptance"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/loadgen"
)

// Issue 22's bounds for `kplan reassign --balance load` on the lab.
const (
	// loadTolerance is the plan's band: every broker's bytes in and bytes
	// out within 10% of the mean, measured after the apply.
	loadTolerance = 0.10
	// countApart is how far apart the count-balanced plan must leave the
	// brokers for the test to mean anything (max/mean).
	countApart = 1.5
)

// balanceLoadFigures is one run's measured and planned skews.
type balanceLoadFigures struct {
	InBefore, OutBefore, InAfter, OutAfter float64
	// CountIn is the count-balanced plan's bytes in max/mean on the same
	// snapshot; BytesCopied and CountCopied what each plan copies.
	CountIn                  float64
	BytesCopied, CountCopied int64
}

// TestAcceptBalanceLoad is issue 22's proof on real brokers, ACCEPT_REPEAT
// runs on a 4-broker lab, each on topics of its own: a hot topic (2 MB/s
// of 1000-byte records, read by two consumer groups) whose 8 partitions
// all live on brokers 1 and 2, a cold one (100 kB/s) on brokers 3 and 4.
// kplan observe measures the cluster, kplan reassign --balance load
// --tolerance 0.1 plans from the snapshot, kplan reassign apply executes
// the plan while the traffic goes on, and kplan observe measures again:
// bytes in and bytes out per broker within 10% of the mean (the upper end
// of the 95% interval of max/mean at most 1.10), where the count-balanced
// plan on the same snapshot leaves them at least 1.5x apart.
func TestAcceptBalanceLoad(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 4})
	var figs []balanceLoadFigures
	for i := range acceptance.Repeat(t) {
		f := balanceLoadRun(t, lab, fmt.Sprintf("accload%d", i))
		t.Logf("run %d: %+v", i+1, f)
		figs = append(figs, f)
	}
	col := func(get func(balanceLoadFigures) float64) []float64 {
		var out []float64
		for _, f := range figs {
			out = append(out, get(f))
		}
		return out
	}
	acceptance.Check(t, "e2e/balance-load/after/bytes-in/max-over-mean", "", acceptance.AtMost, 1+loadTolerance, col(func(f balanceLoadFigures) float64 { return f.InAfter }))
	acceptance.Check(t, "e2e/balance-load/after/bytes-out/max-over-mean", "", acceptance.AtMost, 1+loadTolerance, col(func(f balanceLoadFigures) float64 { return f.OutAfter }))
	acceptance.Check(t, "e2e/balance-load/count-plan/bytes-in/max-over-mean", "", acceptance.AtLeast, countApart, col(func(f balanceLoadFigures) float64 { return f.CountIn }))
}

// balanceLoadRun runs the sequence once on topics named after prefix.
func balanceLoadRun(t *testing.T, lab *labtest.Lab, prefix string) balanceLoadFigures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn := kafka.ConnOptions{BootstrapServers: lab.Bootstrap}
	cl, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	hot, cold := prefix+"-hot", prefix+"-cold"
	require.NoError(t, kafka.CreateTopic(ctx, cl, hot, [][]int32{{1, 2}, {1, 2}, {2, 1}, {2, 1}, {1, 2}, {2, 1}, {1, 2}, {2, 1}}, nil))
	require.NoError(t, kafka.CreateTopic(ctx, cl, cold, [][]int32{{3, 4}, {4, 3}, {3, 4}, {4, 3}, {3, 4}, {4, 3}, {3, 4}, {4, 3}}, nil))
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
		_, err := loadgen.Write(traffic, conn, "test", loadgen.WriteSpec{Topic: hot, Rate: 2000, RecordSize: 1000, Run: 1})
		return err
	})
	run(func() error {
		_, err := loadgen.Write(traffic, conn, "test", loadgen.WriteSpec{Topic: cold, Rate: 100, RecordSize: 1000, Run: 2})
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
	time.Sleep(10 * time.Second) // the groups join, sizes grow

	dir := t.TempDir()
	before, after, plan := filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json"), filepath.Join(dir, "plan.json")
	topics := "^" + prefix + "-"
	observe := func(out string) {
		mustKplan(ctx, t, "observe", "--bootstrap-server", lab.Bootstrap, "--topics", topics, "--window", "15s", "--samples", "3", "--out", out)
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
