//go:build integration

package reassign_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestCordonedBrokerTakesNoReplica: broker 3 of the lab cordoned with
// Kafka 4.3.1's own kafka-configs (cordoned.log.dirs=*); on topics whose
// balance needs replicas on brokers 2 and 3, `kplan reassign` from the live
// cluster reads the cordon, names broker 3 in its summary and on standard
// error, and plans no new replica there; Kafka's own
// kafka-reassign-partitions executes the plan.
func TestCordonedBrokerTakesNoReplica(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	original, _ := skewedTopics(t, ctx, lab.Bootstrap, "cordon")

	const configTool = "kafka.admin.ConfigCommand"
	cordon := func(ctx context.Context, args ...string) {
		out, err := kafkaTool(t, ctx, configTool, append([]string{"--bootstrap-server", lab.Bootstrap, "--alter", "--entity-type", "brokers", "--entity-name", "3"}, args...)...)
		require.NoError(t, err, out)
	}
	cordon(ctx, "--add-config", kafka.CordonKey+"=*")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cordon(ctx, "--delete-config", kafka.CordonKey)
	})
	adm := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	defer adm.Close()
	require.Eventually(t, func() bool {
		cs, err := adm.Cordons(ctx)
		return err == nil && slices.Equal(kafka.CordonedBrokers(cs), []int32{3})
	}, time.Minute, 200*time.Millisecond, "broker 3 never reported cordoned")

	plan := filepath.Join(t.TempDir(), "plan.json")
	code, out, errOut := run("reassign", "--bootstrap-server", lab.Bootstrap, "--topics", "^cordon-", "--out", plan, "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "broker 3 is cordoned on the cluster (cordoned.log.dirs): no new replica there")
	var sum struct {
		Cordoned      []int32 `json:"cordoned_brokers"`
		ReplicasMoved int     `json:"replicas_moved"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	assert.Equal(t, []int32{3}, sum.Cordoned)
	require.Positive(t, sum.ReplicasMoved, "broker 1 holds half the replicas: the plan moves some")

	data, err := os.ReadFile(plan)
	require.NoError(t, err)
	var file struct {
		Partitions []struct {
			Topic     string  `json:"topic"`
			Partition int     `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal(data, &file), "%s", data)
	require.NotEmpty(t, file.Partitions)
	for _, p := range file.Partitions {
		before := original[p.Topic][p.Partition]
		for _, r := range p.Replicas {
			if r == 3 {
				assert.Contains(t, before, r, "%s-%d: a new replica on the cordoned broker 3: %v -> %v", p.Topic, p.Partition, before, p.Replicas)
			}
		}
	}
	runReassignment(t, ctx, lab.Bootstrap, plan)
}
