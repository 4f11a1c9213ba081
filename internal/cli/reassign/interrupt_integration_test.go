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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
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
	topic, _, throttles := filledTopic(t, ctx, lab, "interrupt", [][]int32{{1, 2}, {2, 1}}, 30)
	plan := writePlan(t, topic, "plan.json", [][]int32{{3, 2}, {3, 1}})

	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, self, "reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--throttle", "50kB/s", "--yes", "-o", "json", "--progress", "text")
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
			require.Contains(t, throttles(), "broker 3: follower.replication.throttled.rate=50000", "the throttle was never set")
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
	assert.Empty(t, throttles(), "throttle configs left behind")

	// Leave the shared lab as it was: the move finishes (unthrottled) or is
	// cancelled. Unthrottled, 6 MB may finish between the cancel's read and
	// its request (Kafka then answers NO_REASSIGNMENT_IN_PROGRESS); then
	// the plan must verify as complete.
	code, _, errOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--cancel", "--yes")
	if code != 0 {
		vcode, _, verrOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--verify")
		assert.Equal(t, 0, vcode, "the cancel failed (%s) and the plan is not complete either: %s", errOut, verrOut)
	}
}

// filledTopic creates a topic named prefix plus a unique suffix on the lab
// with assignment, fills each partition with records of 100 kB, and
// returns it with the lab's connection and a reader of the throttle
// configs set on brokers 1-3 and the topic: the start of every apply test
// that needs moves slow enough to interrupt.
func filledTopic(t *testing.T, ctx context.Context, lab *labtest.Lab, prefix string, assignment [][]int32, records int) (string, kafka.ConnOptions, func() []string) {
	t.Helper()
	topic := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	conn := kafka.ConnOptions{BootstrapServers: lab.Bootstrap}
	cl, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, kafka.CreateTopic(ctx, cl, topic, assignment, nil))
	parts := make([]int32, len(assignment))
	for i := range parts {
		parts[i] = int32(i)
	}
	require.NoError(t, kafkatest.FillPartitions(ctx, conn, topic, parts, records, 100_000))
	adm := kafka.NewAdmin(conn, "test")
	t.Cleanup(adm.Close)
	return topic, conn, func() []string {
		got, err := adm.ThrottleConfigs(ctx, []int32{1, 2, 3}, []string{topic})
		require.NoError(t, err)
		return got
	}
}

// writePlan writes a plan moving partition p of topic to targets[p], in a
// temporary directory, and returns its path.
func writePlan(t *testing.T, topic, name string, targets [][]int32) string {
	t.Helper()
	var parts []string
	for p, r := range targets {
		ids := make([]string, len(r))
		for i, b := range r {
			ids[i] = strconv.Itoa(int(b))
		}
		parts = append(parts, fmt.Sprintf(`{"topic":%q,"partition":%d,"replicas":[%s]}`, topic, p, strings.Join(ids, ",")))
	}
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(`{"version":1,"partitions":[`+strings.Join(parts, ",")+`]}`), 0o644))
	return path
}
