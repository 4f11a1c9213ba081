//go:build integration

package reassign_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
)

// TestApplyResumeAfterSIGKILL: a kplan process applying a throttled plan
// one move at a time into broker 3 (--max-inflight-per-broker 1) is killed
// with SIGKILL once its first move runs; its state file says what it
// submitted, the throttle it set stays. kplan reassign apply --resume,
// without --throttle, submits only the moves the killed one had not
// (counted from its own "accepted" lines), completes the plan as the
// cluster's metadata shows, and removes the first run's throttle.
func TestApplyResumeAfterSIGKILL(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	topic, conn, throttles := filledTopic(t, ctx, lab, "resume", [][]int32{{1, 2}, {1, 2}, {2, 1}, {2, 1}}, 10)
	targets := [][]int32{{3, 2}, {1, 3}, {3, 1}, {2, 3}}
	plan := writePlan(t, topic, "plan.json", targets)

	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, self, "reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--throttle", "200kB/s",
		"--max-inflight-per-broker", "1", "--yes")
	cmd.Env = append(os.Environ(), asKplan+"=1")
	stderrPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var first []string
	sc := bufio.NewScanner(stderrPipe)
	for sc.Scan() {
		first = append(first, sc.Text())
		if strings.Contains(sc.Text(), "partitions complete") {
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			break
		}
	}
	_ = cmd.Wait()
	t.Logf("killed kplan reassign apply (stderr):\n%s", strings.Join(first, "\n"))
	accepted := regexp.MustCompile(`the controller accepted (\d+) (?:partition|more) moves`)
	sum := func(lines []string) int {
		n := 0
		for _, l := range lines {
			if m := accepted.FindStringSubmatch(l); m != nil {
				k, _ := strconv.Atoi(m[1])
				n += k
			}
		}
		return n
	}
	before := sum(first)
	require.Positive(t, before, "the killed apply never submitted a move")
	require.NotEmpty(t, throttles(), "SIGKILL leaves the throttle")
	r, err := os.Open(plan)
	require.NoError(t, err)
	steps, err := apply.ParsePlan(r, plan)
	require.NoError(t, r.Close())
	require.NoError(t, err)
	st, err := apply.LoadState(apply.StatePath(plan), steps)
	require.NoError(t, err)
	require.NotNil(t, st)
	done, submitted := st.Counts()
	assert.Equal(t, before, done+submitted, "the state file records what was submitted")
	require.Less(t, before, 4, "killed before the end")

	code, _, errOut := run("reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--max-inflight-per-broker", "1", "--yes", "--resume")
	t.Logf("kplan reassign apply --resume (stderr):\n%s", errOut)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 4-before, sum(strings.Split(errOut, "\n")), "the resumed apply submitted again what the killed one had")
	cl, err := kafka.NewClient(conn, "test")
	require.NoError(t, err)
	defer cl.Close()
	c, err := kafka.Snapshot(ctx, cl, func(s string) bool { return s == topic })
	require.NoError(t, err)
	for _, p := range c.Partitions {
		assert.True(t, slices.Equal(targets[p.Partition], p.Replicas), "%s: %v", p.Key(), p.Replicas)
	}
	assert.Empty(t, throttles(), "the first run's throttle is removed")
}
