//go:build integration

package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

// TestWhatIfMatchesARealKill audits a real 3-broker cluster, predicts the
// loss of broker 2, kills it, and compares the leaders Kafka elected with
// the prediction.
func TestWhatIfMatchesARealKill(t *testing.T) {
	lab := labtest.Shared(t)
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Broker 2 leads p0 and p3; their next replicas are 3 and 1.
	require.NoError(t, kafka.CreateTopic(ctx, cl, "whatif", [][]int32{{2, 3, 1}, {1, 2, 3}, {3, 1, 2}, {2, 1, 3}}, nil))
	require.NoError(t, kafka.CreateTopic(ctx, cl, "whatif-rf1", [][]int32{{2}}, nil))
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, nil)
		if err != nil || len(c.Partitions) != 5 {
			return false
		}
		for _, p := range c.Partitions {
			if len(p.ISR) != len(p.Replicas) || p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond)

	var r struct {
		WhatIf []struct {
			LeadersMoved      int      `json:"leaders_moved"`
			OfflinePartitions []string `json:"offline_partitions"`
			LeadersMax        int      `json:"leaders_max"`
		} `json:"what_if"`
	}
	// Brokers learn new topics' metadata a moment apart: audit until the
	// broker kplan asks lists both topics.
	require.Eventually(t, func() bool {
		code, out, _ := run("", "audit", "--bootstrap-server", lab.Bootstrap, "--topics", "^whatif", "--what-if", "broker-2", "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &r) == nil && len(r.WhatIf) == 1 && r.WhatIf[0].LeadersMoved == 3
	}, 20*time.Second, 250*time.Millisecond, "the audit never saw both topics")
	predicted := r.WhatIf[0]
	assert.Equal(t, 3, predicted.LeadersMoved)
	assert.Equal(t, []string{"whatif-rf1-0"}, predicted.OfflinePartitions)

	require.NoError(t, lab.State.Kill(2))
	defer func() {
		require.NoError(t, lab.State.Restart(ctx, 2, kafka.WaitBrokers))
	}()
	want := map[int32]int32{0: 3, 1: 1, 2: 3, 3: 1} // the first live in-sync replica in assignment order
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return s == "whatif" })
		if err != nil {
			return false
		}
		for _, p := range c.Partitions {
			if p.Leader != want[p.Partition] {
				return false
			}
		}
		return true
	}, 20*time.Second, 200*time.Millisecond, "Kafka's leaders after the kill differ from the prediction")
	c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return s == "whatif-rf1" })
	require.NoError(t, err)
	require.Len(t, c.Partitions, 1)
	assert.Less(t, c.Partitions[0].Leader, int32(0), "the RF 1 partition went offline, as predicted")
	leaders := map[int32]int{}
	c, err = kafka.Snapshot(ctx, cl, func(s string) bool { return s == "whatif" })
	require.NoError(t, err)
	for _, p := range c.Partitions {
		leaders[p.Leader]++
	}
	assert.Equal(t, predicted.LeadersMax, max(leaders[1], leaders[3]))
}

// TestLiveSnapshotAuditsTheSame audits the real lab, saves the snapshot,
// and checks that auditing the file gives the same report: brokers with
// their racks, leaders and ISR survive the round trip.
func TestLiveSnapshotAuditsTheSame(t *testing.T) {
	lab := labtest.Shared(t)
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, kafka.CreateTopic(ctx, cl, "snap", [][]int32{{1, 2}, {2, 3}, {3, 1}, {1, 3}}, nil))
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return s == "snap" })
		return err == nil && len(c.Partitions) == 4 && len(c.Partitions[3].ISR) == 2
	}, 30*time.Second, 200*time.Millisecond)

	snap := t.TempDir() + "/snap.json"
	code, live, errOut := run("", "audit", "--bootstrap-server", lab.Bootstrap, "--topics", "^snap$", "--save-snapshot", snap, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r struct {
		Brokers int `json:"brokers"`
		Load    []struct {
			Broker int32  `json:"broker"`
			Rack   string `json:"rack"`
		} `json:"load"`
	}
	require.NoError(t, json.Unmarshal([]byte(live), &r))
	assert.Equal(t, 3, r.Brokers)
	for _, l := range r.Load {
		assert.NotEmpty(t, l.Rack, "the lab's brokers have racks")
	}
	code, offline, errOut := run("", "audit", "--from", snap, "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, live, offline)
}
