//go:build integration

package reassign_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestApplyInterruptRemovesThrottle: SIGINT to a kplan process whose
// `reassign apply --throttle` waits on a throttled reassignment of real
// data. kplan prints the partial result, removes the throttle from every
// broker and from the topic (read back with DescribeConfigs), and says
// that the reassignment goes on and how to stop it.
func TestApplyInterruptRemovesThrottle(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Two partitions on brokers 1 and 2, 3 MB each: moving them to broker
	// 3 at 50 kB/s takes a minute, far longer than the test waits.
	topic := fmt.Sprintf("interrupt-%d", time.Now().UnixNano())
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test",
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, kafka.CreateTopic(ctx, cl, topic, [][]int32{{1, 2}, {2, 1}}, nil))
	value := []byte(strings.Repeat("x", 100_000))
	require.Eventually(t, func() bool {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: value}).FirstErr() == nil
	}, 30*time.Second, 200*time.Millisecond, "the new topic never took a record")
	for i := range 60 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: value}).FirstErr())
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(`{"version":1,"partitions":[`+
		`{"topic":"`+topic+`","partition":0,"replicas":[3,2]},{"topic":"`+topic+`","partition":1,"replicas":[3,1]}]}`), 0o644))

	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, self, "reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--throttle", "50kB/s", "--yes", "-o", "json")
	cmd.Env = append(os.Environ(), asKplan+"=1")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderrPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	// Interrupt once apply waits on the accepted, throttled moves.
	var stderr []string
	sc := bufio.NewScanner(stderrPipe)
	interrupted := false
	for sc.Scan() {
		stderr = append(stderr, sc.Text())
		if !interrupted && strings.Contains(sc.Text(), "partitions complete") {
			throttled := dynamicConfigs(t, ctx, cl, topic)
			require.Contains(t, throttled, "broker 3: follower.replication.throttled.rate=50000", "the throttle was never set")
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			interrupted = true
		}
	}
	err = cmd.Wait()
	all := strings.Join(stderr, "\n")
	t.Logf("kplan reassign apply (stderr):\n%s", all)
	require.True(t, interrupted, "apply never reported progress")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())

	// The partial result, on stdout.
	var res struct {
		Outcome    string `json:"outcome"`
		Message    string `json:"message"`
		Partitions []struct {
			Topic string `json:"topic"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout.String()), &res), stdout.String())
	assert.Equal(t, "in-progress", res.Outcome)
	assert.Len(t, res.Partitions, 2)
	assert.Contains(t, res.Message, "in progress: ")

	// What goes on and how to stop it: the last line.
	last := stderr[len(stderr)-1]
	assert.Contains(t, last, "kplan: interrupted (interrupt signal received) with ")
	assert.Contains(t, last, "goes on in the cluster; the throttle was removed, so it runs unthrottled; follow it with kplan reassign apply "+plan+" --verify or stop it with --cancel")

	// No throttle left on any broker or on the topic.
	assert.Empty(t, dynamicConfigs(t, ctx, cl, topic), "throttle configs left behind")

	// Leave the shared lab as it was: the move finishes (unthrottled) or is
	// cancelled.
	code, _, errOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--cancel", "--yes")
	assert.Equal(t, 0, code, errOut)
}

// dynamicConfigs lists the throttle configs set on the lab's brokers and on
// topic, as "broker N: key=value" or "topic T: key=value".
func dynamicConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) []string {
	t.Helper()
	adm := kadm.NewClient(cl)
	var got []string
	brokers, err := adm.DescribeBrokerConfigs(ctx, 1, 2, 3)
	require.NoError(t, err)
	topics, err := adm.DescribeTopicConfigs(ctx, topic)
	require.NoError(t, err)
	for kind, rcs := range map[string]kadm.ResourceConfigs{"broker": brokers, "topic": topics} {
		for _, rc := range rcs {
			require.NoError(t, rc.Err, rc.Name)
			for _, c := range rc.Configs {
				dynamic := c.Source != kmsg.ConfigSourceDefaultConfig && c.Source != kmsg.ConfigSourceStaticBrokerConfig
				if dynamic && strings.Contains(c.Key, "replication.throttled") && c.Value != nil && *c.Value != "" {
					got = append(got, fmt.Sprintf("%s %s: %s=%s", kind, rc.Name, c.Key, *c.Value))
				}
			}
		}
	}
	return got
}
