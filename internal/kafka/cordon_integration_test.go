//go:build integration

package kafka_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// configTool runs Kafka 4.3.1's own kafka-configs (ConfigCommand) on the
// lab's jars.
func configTool(t *testing.T, ctx context.Context, args ...string) {
	t.Helper()
	jars, err := localkafka.FindJars("")
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, "java", append([]string{"-cp", filepath.Join(jars, "*"), "kafka.admin.ConfigCommand"}, args...)...).CombinedOutput()
	require.NoError(t, err, "kafka-configs %v:\n%s", args, out)
}

// TestCordonsOnRealBrokers cordons every log directory of broker 2 with
// Kafka's own kafka-configs (KIP-1066, cordoned.log.dirs=*), and checks
// that Admin.Cordons reads it back, that Kafka itself then places a new
// topic's replicas on the other brokers only, and that removing the config
// uncordons the broker.
func TestCordonsOnRealBrokers(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	defer a.Close()
	require.NoError(t, a.WaitBrokers(ctx, labtest.Brokers))

	before, err := a.Cordons(ctx)
	require.NoError(t, err)
	require.Len(t, before, labtest.Brokers)
	for _, c := range before {
		assert.False(t, c.Unknown, "Kafka 4.3.1 answers DescribeLogDirs v5")
		assert.NotEmpty(t, c.Dirs, "broker %d", c.Broker)
		assert.Empty(t, c.Cordoned, "broker %d", c.Broker)
	}

	const broker = "2"
	uncordon := func(ctx context.Context) {
		configTool(t, ctx, "--bootstrap-server", lab.Bootstrap, "--alter", "--entity-type", "brokers", "--entity-name", broker, "--delete-config", kafka.CordonKey)
	}
	configTool(t, ctx, "--bootstrap-server", lab.Bootstrap, "--alter", "--entity-type", "brokers", "--entity-name", broker, "--add-config", kafka.CordonKey+"=*")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		uncordon(ctx)
	})

	// The broker applies the dynamic config, then reports it.
	var got []kafka.BrokerCordon
	require.Eventually(t, func() bool {
		got, err = a.Cordons(ctx)
		return err == nil && slices.Equal(kafka.CordonedBrokers(got), []int32{2})
	}, time.Minute, 200*time.Millisecond, "broker 2 reported cordoned: %+v (%v)", got, err)

	// Kafka's own placement agrees: a new topic's replicas avoid broker 2
	// (the controller learns the cordon from the broker's heartbeat).
	cl, err := a.Client()
	require.NoError(t, err)
	adm := kadm.NewClient(cl)
	var placed []int32
	require.Eventually(t, func() bool {
		topic := "cordon-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		_, err := adm.CreateTopic(ctx, 6, 1, nil, topic)
		require.NoError(t, err)
		defer func() { _, _ = adm.DeleteTopics(ctx, topic) }()
		var td kadm.TopicDetails
		require.Eventually(t, func() bool {
			td, err = adm.ListTopics(ctx, topic)
			return err == nil && len(td[topic].Partitions) == 6
		}, 30*time.Second, 100*time.Millisecond)
		placed = placed[:0]
		for _, p := range td[topic].Partitions {
			placed = append(placed, p.Replicas...)
		}
		return !slices.Contains(placed, 2)
	}, time.Minute, time.Second, "Kafka placed replicas on the cordoned broker 2: %v", placed)

	uncordon(ctx)
	require.Eventually(t, func() bool {
		got, err = a.Cordons(ctx)
		return err == nil && len(kafka.CordonedBrokers(got)) == 0
	}, time.Minute, 200*time.Millisecond, "broker 2 uncordoned: %+v (%v)", got, err)
}
