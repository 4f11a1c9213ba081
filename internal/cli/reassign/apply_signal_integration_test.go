//go:build integration

package reassign_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestApplySecondSignalLeavesThrottle: SIGINT to a kplan process whose
// `reassign apply --throttle` waits on a throttled move of real data, with
// every broker of the lab frozen (SIGSTOP) so that the throttle's removal
// hangs; then SIGTERM, the second signal, cuts the removal short. kplan
// exits 1 naming the configs left on each broker and topic, which
// DescribeConfigs confirms are still set, and the kafka-configs commands
// it prints, run with Kafka's own ConfigCommand, remove them.
func TestApplySecondSignalLeavesThrottle(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	topic, _, throttles := filledTopic(t, ctx, lab, "second-signal", [][]int32{{1, 2}, {2, 1}}, 30)
	plan := writePlan(t, topic, "plan.json", [][]int32{{3, 2}, {3, 1}})

	// Frozen brokers are thawed whatever happens, and the lab must answer
	// again before the next test.
	freeze := func(sig syscall.Signal) {
		for _, n := range lab.State.Nodes {
			if n.PID > 0 && (sig == syscall.SIGCONT || n.Alive()) {
				_ = syscall.Kill(n.PID, sig)
			}
		}
	}
	thawed := false
	thaw := func() {
		if thawed {
			return
		}
		thawed = true
		freeze(syscall.SIGCONT)
		require.NoError(t, kafka.WaitBrokers(ctx, lab.State.ClusterID, lab.State.Bootstrap(), []int32{1, 2, 3}))
	}
	defer thaw()

	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, self, "reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--throttle", "50kB/s", "--yes", "--timeout", "60s", "-o", "json", "--progress", "text")
	cmd.Env = append(os.Environ(), asKplan+"=1")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderrPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	var stderr []string
	sc := bufio.NewScanner(stderrPipe)
	first, second := false, false
	for sc.Scan() {
		line := sc.Text()
		stderr = append(stderr, line)
		switch {
		case !first && strings.Contains(line, "partitions complete"):
			require.Contains(t, throttles(), "broker 3: follower.replication.throttled.rate=50000", "the throttle was never set")
			freeze(syscall.SIGSTOP)
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			first = true
		case first && !second && strings.Contains(line, "interrupted; removing the replication throttle (interrupt again to leave it in place)"):
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			second = true
		}
	}
	err = cmd.Wait()
	thaw()
	all := strings.Join(stderr, "\n")
	t.Logf("kplan reassign apply (stderr):\n%s", all)
	require.True(t, second, "apply never announced the throttle's removal")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())

	var res struct {
		Outcome      string `json:"outcome"`
		ThrottleLeft struct {
			Brokers []int32  `json:"brokers"`
			Topics  []string `json:"topics"`
		} `json:"throttle_left"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout.String()), &res), stdout.String())
	assert.Equal(t, "in-progress", res.Outcome)
	assert.Equal(t, []int32{1, 2, 3}, res.ThrottleLeft.Brokers)
	assert.Equal(t, []string{topic}, res.ThrottleLeft.Topics)

	last := stderr[len(stderr)-1]
	assert.Contains(t, last, "kplan: interrupted (interrupt signal received) with ")
	assert.Contains(t, last, "; removing the throttle was cut short by a second signal, so it may still be set: "+
		"leader.replication.throttled.rate and follower.replication.throttled.rate on brokers 1,2,3 and "+
		"leader.replication.throttled.replicas and follower.replication.throttled.replicas on topic "+topic+"; remove it with: ")

	// The topic's configs are left. The brokers' may be gone: their delete
	// was already sent to the frozen brokers, which apply it once thawed
	// (why the line says "may still be set").
	assert.Contains(t, throttles(), "topic "+topic+": follower.replication.throttled.replicas=0:3,1:3")

	// The commands it gives remove it, run as written with Kafka's tool.
	_, cmds, ok := strings.Cut(last, "; remove it with: ")
	require.True(t, ok)
	cmds, _, ok = strings.Cut(cmds, "; follow it with ")
	require.True(t, ok)
	for _, c := range strings.Split(cmds, " && ") {
		args := strings.Fields(c)
		require.Equal(t, "kafka-configs", args[0], c)
		out, err := kafkaTool(t, ctx, "kafka.admin.ConfigCommand", args[1:]...)
		require.NoError(t, err, "%s: %s", c, out)
	}
	assert.Empty(t, throttles(), "the printed commands left throttle configs")

	// Leave the shared lab as it was.
	code, _, errOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--cancel", "--yes")
	assert.Equal(t, 0, code, errOut)
}
