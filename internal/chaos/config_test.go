package chaos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/loadgen"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
		err  string
	}{
		{"broker-3", Target{Kind: TargetBroker, Broker: 3}, ""},
		{"busiest", Target{Kind: TargetBusiest}, ""},
		{"none", Target{Kind: TargetNone}, ""},
		{"leader-of:orders/2", Target{Kind: TargetLeaderOf, Topic: "orders", Partition: 2}, ""},
		{"leader-of:a/b/7", Target{Kind: TargetLeaderOf, Topic: "a/b", Partition: 7}, ""},
		{"broker-", Target{}, "want broker-N"},
		{"broker--1", Target{}, "want broker-N"},
		{"leader-of:orders", Target{}, "want leader-of:TOPIC/PARTITION"},
		{"leader-of:orders/x", Target{}, "not a partition number"},
		{"kafka-1", Target{}, "unknown target"},
	} {
		got, err := ParseTarget(tc.in)
		if tc.err != "" {
			require.Error(t, err, tc.in)
			assert.Contains(t, err.Error(), tc.err, tc.in)
			assert.Equal(t, "kill", errkind.FieldOf(err), tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.in, got.String(), "round trip")
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"broker-3", "busiest", "none", "leader-of:t/0", "leader-of:/1", "broker-99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if err != nil {
			return
		}
		again, err := ParseTarget(tg.String())
		require.NoError(t, err, "String of a parsed target parses")
		assert.Equal(t, tg, again)
	})
}

func TestParseAssignment(t *testing.T) {
	a, err := ParseAssignment("1,2;2,3; 3 ,1")
	require.NoError(t, err)
	assert.Equal(t, [][]int32{{1, 2}, {2, 3}, {3, 1}}, a)
	assert.Equal(t, "1,2;2,3;3,1", FormatAssignment(a))
	for _, bad := range []string{"", "1,", "1,1", "1,2;3", "a", "-1", "1;;2"} {
		_, err := ParseAssignment(bad)
		assert.Error(t, err, bad)
	}
}

func FuzzParseAssignment(f *testing.F) {
	for _, s := range []string{"1,2;2,3;3,1", "1;2;1", "1,2,3", "", ";", "1,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAssignment(s)
		if err != nil {
			return
		}
		again, err := ParseAssignment(FormatAssignment(a))
		require.NoError(t, err)
		assert.Equal(t, a, again)
		for _, reps := range a {
			assert.Len(t, reps, len(a[0]), "every partition has as many replicas")
		}
	})
}

// RingAssignment: every partition has rf distinct replicas, leaders cycle
// through the brokers, so leadership is as even as the counts allow.
func TestRingAssignment(t *testing.T) {
	assert.Equal(t, [][]int32{{1, 2}, {2, 3}, {3, 1}}, RingAssignment([]int32{1, 2, 3}, 3, 2))
	for n := 1; n <= 6; n++ {
		brokers := make([]int32, n)
		for i := range brokers {
			brokers[i] = int32(i + 1)
		}
		for parts := 1; parts <= 12; parts++ {
			for rf := 1; rf <= n; rf++ {
				a := RingAssignment(brokers, parts, rf)
				lead := map[int32]int{}
				for _, reps := range a {
					require.Len(t, reps, rf)
					seen := map[int32]bool{}
					for _, r := range reps {
						assert.False(t, seen[r])
						seen[r] = true
					}
					lead[reps[0]]++
				}
				lo, hi := parts, 0
				for _, b := range brokers {
					lo, hi = min(lo, lead[b]), max(hi, lead[b])
				}
				assert.LessOrEqual(t, hi-lo, 1)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Defaults()
	require.NoError(t, ok.Validate())
	for _, tc := range []struct {
		name, field, msg string
		mut              func(*Config)
	}{
		{"no partitioner", "partitioner", "no partitioner", func(c *Config) { c.Partitioners = nil }},
		{"unknown", "partitioner", `unknown partitioner "x"`, func(c *Config) { c.Partitioners = []string{"x"} }},
		{"twice", "partitioner", "given twice", func(c *Config) { c.Partitioners = []string{"node", "node"} }},
		{"topic", "topic", "empty topic name", func(c *Config) { c.Topic = "" }},
		{"assignment", "partitions", "no partitions", func(c *Config) { c.Assignment = nil }},
		{"record size", "record-size", "record size 10", func(c *Config) { c.RecordSize = 10 }},
		{"phase", "phase-duration", "must be positive", func(c *Config) { c.Phase = 0 }},
		{"acks", "acks", `want all or 1, got "0"`, func(c *Config) { c.Acks = loadgen.AcksNone }},
		{"metadata ages", "metadata-max-age", "metadata ages", func(c *Config) { c.MetadataMaxAge = c.MetadataMinAge / 2 }},
		{"failover budget", "failover-timeout", "failover timeout", func(c *Config) { c.FailoverTimeout = 0 }},
	} {
		c := Defaults()
		tc.mut(&c)
		err := c.Validate()
		require.Error(t, err, tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
		assert.Equal(t, tc.field, errkind.FieldOf(err), tc.name)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), tc.name)
	}
}

func TestValidateWorkload(t *testing.T) {
	base := func() Config {
		c := Defaults()
		c.Workload = []WorkloadTopic{{Name: "A", Assignment: [][]int32{{1, 2}}, Rate: 1000}}
		return c
	}
	for _, tc := range []struct {
		name, field, msg string
		edit             func(*Config)
	}{
		{"existing needs sequential", "sequential", "--sequential", func(c *Config) { c.Existing = true }},
		{"existing without topics", "topics", "no existing topic", func(c *Config) { c.Existing, c.Workload = true, nil }},
		{"unnamed topic", "layout", "without a name", func(c *Config) { c.Workload[0].Name = "" }},
		{"twice", "layout", "given twice", func(c *Config) { c.Workload = append(c.Workload, c.Workload[0]) }},
		{"negative rate", "rates", "negative rate", func(c *Config) { c.Workload[0].Rate = -1 }},
		{"no partitions", "layout", "no partitions", func(c *Config) { c.Workload[0].Assignment = nil }},
		{"empty replicas", "layout", "no replicas", func(c *Config) { c.Workload[0].Assignment = [][]int32{{}} }},
		{"too many producers", "partitioner", "more than 255", func(c *Config) {
			for i := range 64 {
				c.Workload = append(c.Workload, WorkloadTopic{Name: fmt.Sprint("t", i), Assignment: [][]int32{{1}}})
			}
		}},
		{"unknown partitioner", "partitioner", "unknown partitioner", func(c *Config) { c.Partitioners = []string{"sqf-sharde"} }},
	} {
		c := base()
		tc.edit(&c)
		err := c.Validate()
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.field, errkind.FieldOf(err), tc.name)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), tc.name)
		assert.Contains(t, err.Error(), tc.msg, tc.name)
	}
	ok := base()
	ok.Partitioners = append(ok.Partitioners, SQFShared)
	require.NoError(t, ok.Validate())
	ok.Existing, ok.Sequential, ok.Workload[0].Assignment = true, true, nil
	require.NoError(t, ok.Validate(), "existing topics take their assignment from the cluster")
}

func TestWorkloadTopicName(t *testing.T) {
	assert.Equal(t, "p-node-A", WorkloadTopicName("p", "node", "A", false, false))
	assert.Equal(t, "p-A", WorkloadTopicName("p", "node", "A", true, false))
	assert.Equal(t, "A", WorkloadTopicName("p", "node", "A", true, true))
}
