//go:build integration

package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/topology"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

// labClient is the shared lab, a client of it made by newClient
// (kafka.NewClient) and a context bounded by timeout, all closed when the
// test ends.
func labClient[C interface{ Close() }, O any](t *testing.T, timeout time.Duration, newClient func(kafka.ConnOptions, string, ...O) (C, error)) (*labtest.Lab, C, context.Context) {
	lab := labtest.Shared(t)
	cl, err := newClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return lab, cl, ctx
}

// TestWhatIfMatchesARealKill audits a real 3-broker cluster, predicts the
// loss of broker 2, kills it, and compares the leader Kafka elected for
// each partition with the what-if's elections, partition by partition;
// then audits the cluster with broker 2 down, live and from a saved
// snapshot, where rf-above-brokers must fire for the RF 3 partitions.
func TestWhatIfMatchesARealKill(t *testing.T) {
	lab, cl, ctx := labClient(t, 2*time.Minute, kafka.NewClient)
	// Broker 2 leads whatif-0, whatif-3 and whatif-rf1-0; the first two
	// elect their next replicas, 3 and 1, the last goes offline.
	require.NoError(t, kafka.CreateTopic(ctx, cl, "whatif", [][]int32{{2, 3, 1}, {1, 2, 3}, {3, 1, 2}, {2, 1, 3}}, nil))
	require.NoError(t, kafka.CreateTopic(ctx, cl, "whatif-rf1", [][]int32{{2}}, nil))
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return strings.HasPrefix(s, "whatif") })
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

	type election struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		NewLeader int32  `json:"new_leader"`
	}
	var r struct {
		WhatIf []struct {
			LeadersMoved      int        `json:"leaders_moved"`
			OfflineCount      int        `json:"offline_count"`
			OfflinePartitions []string   `json:"offline_partitions"`
			LeadersMax        int        `json:"leaders_max"`
			Elections         []election `json:"elections"`
		} `json:"what_if"`
	}
	// Brokers learn new topics' metadata a moment apart: audit until the
	// broker kplan asks lists both topics.
	require.Eventually(t, func() bool {
		code, out, _ := run("", "audit", "--bootstrap-server", lab.Bootstrap, "--topics", "^whatif", "--what-if", "broker-2", "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &r) == nil && len(r.WhatIf) == 1 && len(r.WhatIf[0].Elections) == 3
	}, 20*time.Second, 250*time.Millisecond, "the audit never saw both topics")
	predicted := r.WhatIf[0]
	assert.Equal(t, 2, predicted.LeadersMoved, "whatif-0 and whatif-3 move")
	assert.Equal(t, 1, predicted.OfflineCount, "whatif-rf1-0 goes offline, not counted as moved")
	assert.Equal(t, []string{"whatif-rf1-0"}, predicted.OfflinePartitions)

	require.NoError(t, lab.State.Kill(2))
	defer func() {
		require.NoError(t, lab.State.Restart(ctx, 2, kafka.WaitBrokers))
	}()
	// Kafka's leaders after the kill, partition by partition, against the
	// prediction: every partition broker 2 led, and no other moved.
	var real []election
	var after *topology.Cluster
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return strings.HasPrefix(s, "whatif") })
		if err != nil || len(c.Partitions) != 5 {
			return false
		}
		real = real[:0]
		for _, p := range c.Partitions {
			if p.Leader == 2 {
				return false // not yet moved
			}
			if p.Leader != p.Replicas[0] || p.Replicas[0] == 2 {
				real = append(real, election{Topic: p.Topic, Partition: p.Partition, NewLeader: max(p.Leader, -1)})
			}
		}
		after = c
		return len(real) == len(predicted.Elections)
	}, 20*time.Second, 200*time.Millisecond, "Kafka never moved broker 2's leaders")
	assert.Equal(t, predicted.Elections, real, "the what-if's elections are Kafka's")
	leaders := map[int32]int{}
	for _, p := range after.Partitions {
		if p.Topic == "whatif" {
			leaders[p.Leader]++
		}
	}
	assert.Equal(t, predicted.LeadersMax, max(leaders[1], leaders[3]))

	// With broker 2 down, 2 brokers are up: RF 3 is above them, live and
	// from the snapshot saved then.
	snap := t.TempDir() + "/down.json"
	var live, saved struct {
		Findings []struct{ Rule, Subject string } `json:"findings"`
	}
	code, out, errOut := run("", "audit", "--bootstrap-server", lab.Bootstrap, "--topics", "^whatif$", "--save-snapshot", snap, "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &live))
	code, out, errOut = run("", "audit", "--from", snap, "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &saved))
	for name, findings := range map[string][]struct{ Rule, Subject string }{"live": live.Findings, "saved": saved.Findings} {
		var rf []string
		for _, f := range findings {
			if f.Rule == "rf-above-brokers" {
				rf = append(rf, f.Subject)
			}
		}
		assert.Equal(t, []string{"whatif-0", "whatif-1", "whatif-2", "whatif-3"}, rf, name)
	}
}

// TestLiveSnapshotAuditsTheSame audits the real lab, saves the snapshot,
// and checks that auditing the file gives the same report: brokers with
// their racks, leaders and ISR survive the round trip.
func TestLiveSnapshotAuditsTheSame(t *testing.T) {
	lab, cl, ctx := labClient(t, time.Minute, kafka.NewClient)
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

// TestLiveAuditReadsMinInsync: on a real cluster the worst pair of broker
// losses judges each topic by its own min.insync.replicas, read from the
// cluster: with 3 brokers and RF 3, any pair leaves one replica, under the
// minimum of a topic at 2 and not of a topic at Kafka's default, 1.
// --min-insync overrides the cluster for every topic.
func TestLiveAuditReadsMinInsync(t *testing.T) {
	lab, cl, ctx := labClient(t, 2*time.Minute, kafka.NewClient)
	two := "2"
	require.NoError(t, kafka.CreateTopic(ctx, cl, "misr-two", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, map[string]*string{"min.insync.replicas": &two}))
	require.NoError(t, kafka.CreateTopic(ctx, cl, "misr-one", [][]int32{{1, 2, 3}, {2, 3, 1}}, nil))
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer dcancel()
		_, err := kafka.DeleteTopicsAndWait(dctx, cl, "misr-two", "misr-one")
		assert.NoError(t, err)
	}()

	type pair struct {
		MinInsync   int    `json:"min_insync"`
		From        string `json:"min_insync_from"`
		UnderMinISR int    `json:"under_min_isr"`
		Unavoidable []struct {
			RF         int `json:"rf"`
			MinInsync  int `json:"min_insync"`
			Partitions int `json:"partitions"`
		} `json:"unavoidable"`
	}
	audit := func(args ...string) pair {
		var r struct {
			Partitions int `json:"partitions"`
			Failover   struct {
				Pair *pair `json:"pair"`
			} `json:"failover"`
		}
		// Brokers learn new topics' metadata a moment apart.
		require.Eventually(t, func() bool {
			code, out, _ := run("", append([]string{"audit", "--bootstrap-server", lab.Bootstrap, "--topics", "^misr-", "-o", "json"}, args...)...)
			return code == 0 && json.Unmarshal([]byte(out), &r) == nil && r.Partitions == 5 && r.Failover.Pair != nil
		}, 20*time.Second, 250*time.Millisecond, "the audit never saw both topics")
		return *r.Failover.Pair
	}
	got := audit()
	assert.Equal(t, "cluster", got.From)
	assert.Equal(t, 3, got.UnderMinISR, "the 3 partitions of misr-two, none of misr-one")
	require.Len(t, got.Unavoidable, 1)
	assert.Equal(t, 2, got.Unavoidable[0].MinInsync)
	assert.Equal(t, 3, got.Unavoidable[0].Partitions)

	got = audit("--min-insync", "1")
	assert.Equal(t, "flag", got.From)
	assert.Equal(t, 0, got.UnderMinISR)
	got = audit("--min-insync", "2")
	assert.Equal(t, 5, got.UnderMinISR, "every partition judged at 2")
}
