//go:build integration

package reassign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/topology"
)

// jbodTolerance is the band of the JBOD lab test's plans.
const jbodTolerance = 0.15

// TestJBODPlanBalancesLogDirs: a 3-broker lab whose brokers have 2 log dirs
// each; 12 partitions of sizes from 2 MiB down to 0.17 MiB (RF 2) on
// brokers 1 and 2 only, every replica piled into each broker's first dir.
// `kplan reassign --balance bytes` from the live cluster writes log_dirs:
// new replicas on broker 3 spread over its dirs, intra-broker moves on
// brokers 1 and 2. Kafka's own kafka-reassign-partitions executes and
// verifies the plan; DescribeLogDirs then shows every replica with a dir
// in it and each broker's dirs within the tolerance. A second set of
// topics, piled into the second dirs, goes through kplan's own apply and
// --verify with the same checks.
func TestJBODPlanBalancesLogDirs(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 3, LogDirs: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	defer adm.Close()

	for round, tc := range []struct {
		prefix string
		pile   int // the index of the dir every replica is piled into
		kplan  bool
	}{{"jbod1", 0, false}, {"jbod2", 1, true}} {
		topic := tc.prefix + "-a"
		jbodTopic(t, ctx, lab.Bootstrap, adm, topic, tc.pile)
		plan := filepath.Join(t.TempDir(), "plan.json")
		code, out, errOut := run("reassign", "--bootstrap-server", lab.Bootstrap, "--topics", "^"+tc.prefix+"-", "--balance", "bytes",
			"--tolerance", fmt.Sprint(jbodTolerance), "--out", plan, "-o", "json")
		require.Equal(t, 0, code, errOut)
		var sum struct {
			Dirs struct {
				Unit       string            `json:"unit"`
				Within     bool              `json:"within"`
				Placed     int               `json:"placed"`
				IntraMoves []json.RawMessage `json:"intra_moves"`
			} `json:"log_dirs"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
		assert.Equal(t, "bytes", sum.Dirs.Unit)
		assert.True(t, sum.Dirs.Within, "the plan's dirs within the band: %s", out)
		assert.Positive(t, sum.Dirs.Placed, "new replicas on broker 3 get a dir")
		assert.NotEmpty(t, sum.Dirs.IntraMoves, "brokers 1 and 2 hold everything in one dir")
		planned := plannedDirs(t, plan)
		require.NotEmpty(t, planned)
		if round == 0 {
			// Kafka's tool reads the file, executes and verifies it.
			code, text, errOut := run("reassign", "--bootstrap-server", lab.Bootstrap, "--topics", "^"+tc.prefix+"-", "--balance", "bytes",
				"--tolerance", fmt.Sprint(jbodTolerance))
			require.Equal(t, 0, code, errOut)
			t.Logf("kplan reassign --balance bytes (JBOD lab):\n%s", text)
			runReassignment(t, ctx, lab.Bootstrap, plan)
		} else {
			code, out, errOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--yes")
			require.Equal(t, 0, code, "%s\n%s", out, errOut)
			t.Logf("kplan reassign apply:\n%s\n%s", out, errOut)
			code, out, errOut = run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--verify", "-o", "json")
			require.Equal(t, 0, code, "%s\n%s", out, errOut)
			var v struct {
				Outcome string `json:"outcome"`
				Dirs    struct {
					Planned int `json:"planned"`
					InPlace int `json:"in_place"`
				} `json:"log_dirs"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &v), out)
			assert.Equal(t, "complete", v.Outcome)
			assert.Equal(t, len(planned), v.Dirs.Planned)
			assert.Equal(t, v.Dirs.Planned, v.Dirs.InPlace)
		}
		// DescribeLogDirs: every planned replica in its dir, no copy left,
		// each broker's dirs (every topic's bytes) within the band.
		var perDir map[int32]map[string]int64
		require.Eventually(t, func() bool {
			_, reps, err := adm.LogDirReplicas(ctx, func(string) bool { return true })
			if err != nil {
				return false
			}
			perDir = map[int32]map[string]int64{}
			at := map[string]string{}
			for _, r := range reps {
				if r.Future {
					return false
				}
				at[fmt.Sprintf("%s@%d", r.Key, r.Broker)] = r.Dir
				if perDir[r.Broker] == nil {
					perDir[r.Broker] = map[string]int64{}
				}
				perDir[r.Broker][r.Dir] += r.Bytes
			}
			for k, d := range planned {
				if at[k] != d {
					return false
				}
			}
			return true
		}, time.Minute, 500*time.Millisecond, "replicas not in their planned dirs")
		dirs, _, err := adm.LogDirReplicas(ctx, nil)
		require.NoError(t, err)
		for b := int32(1); b <= 3; b++ {
			require.Len(t, dirs[b], 2)
			var total int64
			for _, d := range dirs[b] {
				total += perDir[b][d]
			}
			mean := float64(total) / 2
			for _, d := range dirs[b] {
				// The plan puts dirs at the band's edge by the sizes it
				// read; a copied replica's size on disk differs from its
				// source's by segment and index rounding: 2 points of slack.
				got := float64(perDir[b][d])
				assert.InDelta(t, mean, got, (jbodTolerance+0.02)*mean, "broker %d dir %s: %v", b, d, perDir[b])
			}
			t.Logf("broker %d: %v", b, perDir[b])
		}
	}
	// A dir broker 1 does not have: refused before anything changes.
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"jbod2-a","partition":0,"replicas":[1,2],"log_dirs":["/nonexistent","any"]}]}`), 0o600))
	code, _, errOut := run("reassign", "apply", bad, "--bootstrap-server", lab.Bootstrap, "--yes")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "log_dirs: jbod2-a-0: broker 1 has no log dir /nonexistent")

	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	_, err = kafka.DeleteTopicsAndWait(ctx, cl, "jbod1-a", "jbod2-a")
	require.NoError(t, err)
}

// jbodTopic creates topic with 12 partitions on brokers 1 and 2 (RF 2),
// writes 2 MiB·0.8^i to partition i, moves every replica into the
// broker's dir number pile and waits until none is left elsewhere. It
// returns each partition's bytes written.
func jbodTopic(t *testing.T, ctx context.Context, bootstrap string, adm *kafka.Admin, topic string, pile int) map[int32]int64 {
	t.Helper()
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: bootstrap}, "test")
	require.NoError(t, err)
	defer cl.Close()
	var assign [][]int32
	sizes := map[int32]int64{}
	size := float64(2 << 20)
	for p := range 12 {
		assign = append(assign, [][]int32{{1, 2}, {2, 1}}[p%2])
		sizes[int32(p)] = int64(size) / 4096 * 4096
		size *= 0.8
	}
	require.NoError(t, kafka.CreateTopic(ctx, cl, topic, assign, nil))
	require.Eventually(t, func() bool {
		c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return s == topic })
		return err == nil && len(c.Partitions) == 12 && !slices.ContainsFunc(c.Partitions, func(p topology.Partition) bool { return len(p.ISR) < 2 })
	}, 30*time.Second, 200*time.Millisecond)
	for p, n := range sizes {
		require.NoError(t, kafkatest.FillBytes(ctx, kafka.ConnOptions{BootstrapServers: bootstrap}, topic, []int32{p}, n, 4096))
	}
	dirs, reps, err := adm.LogDirReplicas(ctx, func(s string) bool { return s == topic })
	require.NoError(t, err)
	var moves []kafka.DirMove
	for _, r := range reps {
		if d := dirs[r.Broker][pile]; r.Dir != d {
			moves = append(moves, kafka.DirMove{Key: r.Key, Broker: r.Broker, Dir: d})
		}
	}
	errs, err := adm.AlterReplicaDirs(ctx, moves)
	require.NoError(t, err)
	for i, e := range errs {
		require.NoError(t, e, "%+v", moves[i])
	}
	require.Eventually(t, func() bool {
		_, reps, err := adm.LogDirReplicas(ctx, func(s string) bool { return s == topic })
		if err != nil || len(reps) != 24 {
			return false
		}
		for _, r := range reps {
			if r.Future || r.Dir != dirs[r.Broker][pile] || r.Bytes < sizes[r.Partition]/2 {
				return false
			}
		}
		return true
	}, time.Minute, 500*time.Millisecond, "replicas never piled into dir %d", pile)
	return sizes
}

// plannedDirs reads a plan file's log_dirs: "topic-partition@broker" to
// its dir, "any" left out.
func plannedDirs(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var file struct {
		Partitions []struct {
			Topic     string   `json:"topic"`
			Partition int      `json:"partition"`
			Replicas  []int32  `json:"replicas"`
			LogDirs   []string `json:"log_dirs"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal(data, &file), "%s", data)
	out := map[string]string{}
	for _, p := range file.Partitions {
		if len(p.LogDirs) == 0 {
			continue
		}
		require.Len(t, p.LogDirs, len(p.Replicas), "%s-%d", p.Topic, p.Partition)
		for i, d := range p.LogDirs {
			if d != "any" {
				require.True(t, strings.HasPrefix(d, "/"), "%s-%d: %q", p.Topic, p.Partition, d)
				out[fmt.Sprintf("%s-%d@%d", p.Topic, p.Partition, p.Replicas[i])] = d
			}
		}
	}
	return out
}
