package measure

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

// fixturePlan is a plan from fixed samples and a pinned clock.
func fixturePlan(t *testing.T) *Plan {
	t.Helper()
	tp, err := ThroughputOf([]int64{9e6, 21e6, 22e6, 23e6, 5e6}, time.Second, 4*time.Second, 78125)
	require.NoError(t, err)
	tc, err := ThroughputOf([]int64{30e6, 60e6, 62e6, 61e6}, time.Second, 4*time.Second, 207000)
	require.NoError(t, err)
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	lr, err := ReplicationOf([]time.Duration{ms(4), ms(5), ms(4.5), ms(30)}, []time.Duration{ms(2), ms(2.5), ms(2), ms(3)})
	require.NoError(t, err)
	u, err := ElectionOf([]time.Duration{ms(400), ms(450), ms(420)}, []time.Duration{ms(60), ms(70), ms(65)}, 100)
	require.NoError(t, err)
	h, err := HandlesOf(20000, 65530)
	require.NoError(t, err)
	return &Plan{
		Date:    time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Command: "kplan measure --cluster lab --out plans/lab-measured.yaml",
		Machine: Machine{Host: "vm", Cores: 2, Cluster: "kplan lab /tmp/lab (127.0.0.1:19092)", ClusterID: "abc", Brokers: 3, KafkaVersion: "4.3.1 (the lab's jars)"},
		Settings: Settings{Acks: "all", RecordSize: 1024, Duration: 4 * time.Second, Window: time.Second, Linger: 10 * time.Millisecond,
			MaxBuffered: 10000, MaxBufferedBytes: 4 << 20, ReplicationFactor: 3, ReplicationRecordSize: 100, ReplicationInterval: 10 * time.Millisecond, ElectionRounds: 3},
		Requirements: Requirements{Consumers: 1, ReplicationFactor: 3, MaxBrokers: 3, MaxReplicationLatency: 200 * time.Millisecond, MaxUnavailability: 2 * time.Second},
		Produce:      tp, Consume: tc, Replication: lr, Election: &u, Handles: h,
	}
}

func TestPlanYAMLGolden(t *testing.T) {
	p := fixturePlan(t)
	golden.Assert(t, "plan.yaml", p.YAML())

	p.Election, p.ElectionTime = nil, 25*time.Millisecond
	p.Requirements.Throughput = 50_000_000
	p.Handles = Handles{Value: 30000, Given: true}
	golden.Assert(t, "plan-given.yaml", p.YAML())

	p.ElectionTime = 0
	golden.Assert(t, "plan-no-u.yaml", p.YAML())
}

// TestPlanYAMLKeys checks the plan holds exactly the keys kplan size
// reads, with values in its syntax.
func TestPlanYAMLKeys(t *testing.T) {
	var got map[string]string
	require.NoError(t, yaml.Unmarshal(fixturePlan(t).YAML(), &got))
	assert.Equal(t, map[string]string{
		"consumers": "1", "replication-factor": "3", "max-brokers": "3",
		"max-replication-latency": "200ms", "max-unavailability": "2s",
		"partition-produce-rate": "22MB/s", "partition-consume-rate": "61MB/s",
		"replication-latency": "2.5ms", "election-time": "4.2ms", "max-handles": "10000",
	}, got)
}

func TestPlanYAMLCommentsWrap(t *testing.T) {
	for i, line := range strings.Split(string(fixturePlan(t).YAML()), "\n") {
		if strings.HasPrefix(line, "#") {
			assert.LessOrEqual(t, len(line), 110, "line %d: %s", i+1, line)
		}
	}
}

func TestPlanJSON(t *testing.T) {
	b, err := json.Marshal(fixturePlan(t))
	require.NoError(t, err)
	var back Plan
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, int64(22_000_000), back.Produce.BytesPerSec)
	assert.Equal(t, 4200*time.Microsecond, back.Election.PerPartition)
}

func TestFormatMs(t *testing.T) {
	for d, want := range map[time.Duration]string{
		969 * time.Microsecond: "0.969ms", 25 * time.Millisecond: "25ms", 2951 * time.Microsecond: "2.951ms",
		time.Microsecond: "0.001ms", time.Nanosecond: "0.000001ms", 1500 * time.Millisecond: "1500ms",
	} {
		assert.Equal(t, want, FormatMs(d))
		back, err := time.ParseDuration(want)
		require.NoError(t, err)
		assert.Equal(t, d, back, "round trip of %s", want)
	}
}
