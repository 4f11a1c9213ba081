//go:build integration

package faulter_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/chaos/lab/faulter"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// slowExp is a slow-broker experiment on a lab: the --slow spec, the
// partitioners (side by side unless sequential), each producer's rate in
// bytes/s (0: unlimited) of 10 KiB records, on two partitions per broker
// with replication factor 2.
type slowExp struct {
	topic, spec   string
	partitioners  []string
	sequential    bool
	rate          int64
	warmup, phase time.Duration
	// sqfSlack is sqf's slack in records (0: the default).
	sqfSlack int64
}

// slowRun runs e on lab.
func slowRun(t *testing.T, lab *labtest.Lab, e slowExp) *chaos.Result {
	t.Helper()
	lc, err := chaoslab.Open(lab.State, kafka.ConnOptions{}, "test")
	require.NoError(t, err)
	defer lc.Close()
	f, err := chaos.ParseSlow(e.spec)
	require.NoError(t, err)
	brokers, err := lc.Brokers(context.Background())
	require.NoError(t, err)

	cfg := chaos.Defaults()
	cfg.Topic, cfg.Partitioners, cfg.Sequential = e.topic, e.partitioners, e.sequential
	cfg.Fault, cfg.Slow, cfg.Target = &f, true, chaos.Target{Kind: chaos.TargetNone}
	cfg.Assignment = chaos.RingAssignment(brokers, 2*len(brokers), 2)
	cfg.RecordSize, cfg.Rate, cfg.MaxBufferedRecords = 10240, e.rate, 1000
	cfg.Warmup, cfg.Phase = e.warmup, e.phase
	cfg.Objective = 200 * time.Millisecond
	if e.sqfSlack > 0 {
		cfg.SQFSlack = e.sqfSlack
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := chaos.Run(ctx, faulter.New(lc), cfg)
	require.NoError(t, err)
	return res
}

// TestLabSlowBroker is the slow-broker experiment's invariants on real
// brokers (issue 24), not its figures: with broker 2's sends capped at
// 1MB/s (each producer writes 2MB/s, acks=all, replication factor 2),
// sqf sends broker 2 the smallest share of the slow phase, no
// acknowledged record is lost, the cap is cleared at the end, and the
// result recommends a partitioner judged in the slow phase. How much
// better sqf does than the default is an acceptance figure
// (TestAcceptLabSlowBroker).
func TestLabSlowBroker(t *testing.T) {
	lab := labtest.Shared(t)
	// One after another: side by side, the default's records queue up at
	// the cap too and delay sqf's there, which blurs what sqf does. sqf's
	// slack is 8 records (80 KiB) instead of 64 (640 KiB of these 10 KiB
	// records): at 200 records/s, a backlog of 64 records on the capped
	// broker takes longer to build than a short phase lasts, and within the
	// slack sqf serves every broker round robin (with 64, broker 2 got 25.2%
	// against 26.7% and 26.8% in one run).
	res := slowRun(t, lab, slowExp{topic: "labslow", spec: "broker-2:bandwidth=1MB/s", partitioners: []string{"default", "sqf"},
		sequential: true, rate: 2_000_000, warmup: 2 * time.Second, phase: 4 * time.Second, sqfSlack: 8})

	assert.Equal(t, "broker-2:bandwidth=1MB/s", res.Slow)
	require.NotNil(t, res.Fault)
	assert.Equal(t, int32(2), res.Fault.Broker)
	assert.Equal(t, []string{"fault"}, res.Fault.Phases)
	assert.Nil(t, lab.State.NetConditions(), "the cap is cleared at the end of the run")
	assert.Equal(t, int32(-1), res.KilledBroker, "nothing killed")
	for _, p := range res.Partitioners {
		slow := checkSlowPhases(t, p)
		if p.Name != "sqf" {
			continue
		}
		capped := slow.Shares["2"]
		for b, s := range slow.Shares {
			if b != "2" && b != "-1" {
				assert.Less(t, capped, s, "sqf: the capped broker 2 has the smallest share of the slow phase, not above broker %s's", b)
			}
		}
	}
	rec := res.Recommendation
	require.NotNil(t, rec, "a recommendation")
	assert.Equal(t, "fault", rec.Phase, "judged with the broker slow")
	assert.Equal(t, chaos.ByThroughput, rec.Objective)
	assert.Contains(t, []string{"default", "sqf"}, rec.Partitioner)
	assert.NotEmpty(t, rec.RunnerUp)
	assert.NotNil(t, rec.AtRest, "the cost at rest")
}

// TestLabSlowBrokerCPU: --slow broker-2:cpu=20% on real brokers. Broker
// 2's JVM is held to a fifth of one CPU during the slow phase only: its
// cgroup's CFS throttled the JVM while the producers saturated the brokers
// (cpu.stat's nr_throttled grew), and once the run ends the quota is
// lifted; no acknowledged record is lost. What each partitioner gains
// against a CPU-starved broker is an acceptance figure.
func TestLabSlowBrokerCPU(t *testing.T) {
	lab := labtest.Shared(t)
	if err := localkafka.CheckCPUPrivileges(); err != nil {
		t.Fatalf("the lab's CPU caps need root and a cgroup cpu controller: %v", err)
	}
	dir, err := lab.State.BrokerCPUCgroup(2)
	require.NoError(t, err)
	throttled := func() int64 {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
		if errors.Is(err, os.ErrNotExist) {
			return 0 // the cgroup is made at the first cap
		}
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "nr_throttled "); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err)
				return n
			}
		}
		t.Fatalf("no nr_throttled in %s/cpu.stat", dir)
		return 0
	}
	before := throttled()
	res := slowRun(t, lab, slowExp{topic: "labslowcpu", spec: "broker-2:cpu=20%", partitioners: []string{"default", "sqf"},
		rate: 0, warmup: 2 * time.Second, phase: 4 * time.Second})

	assert.Equal(t, "broker-2:cpu=20%", res.Slow)
	require.NotNil(t, res.Fault)
	assert.Equal(t, int32(2), res.Fault.Broker)
	assert.Equal(t, []string{"fault"}, res.Fault.Phases)
	assert.Greater(t, throttled(), before, "broker 2's JVM was throttled by its CPU cap")
	quota, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	if errors.Is(err, os.ErrNotExist) {
		quota, err = os.ReadFile(filepath.Join(dir, "cpu.max")) // cgroup v2
	}
	require.NoError(t, err)
	assert.Contains(t, []string{"-1", "max 100000"}, strings.TrimSpace(string(quota)), "the cap is lifted at the end of the run")
	for _, p := range res.Partitioners {
		checkSlowPhases(t, p)
	}
}

// checkSlowPhases logs a partitioner's at-rest and slow phases and checks
// that the slow one acknowledged records and nothing acknowledged was
// lost; it returns the slow phase.
func checkSlowPhases(t *testing.T, p chaos.PartitionerResult) *chaos.PhaseResult {
	t.Helper()
	rest, slow := p.Phases["before"], p.Phases["fault"]
	require.NotNil(t, rest, p.Name)
	require.NotNil(t, slow, p.Name)
	t.Logf("%-8s at rest %.2f MB/s %v p99 %.0f ms; slow %.2f MB/s %v p99 %.0f ms; acked %d lost %d",
		p.Name, rest.ThroughputMBps, rest.PerBroker, rest.LatencyMS.P99, slow.ThroughputMBps, slow.PerBroker, slow.LatencyMS.P99, p.Acked, p.Lost)
	assert.Positive(t, slow.Acked, p.Name)
	assert.Zero(t, p.Lost, "%s: acknowledged records lost", p.Name)
	return slow
}
