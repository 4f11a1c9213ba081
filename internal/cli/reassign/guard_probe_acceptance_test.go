//go:build acceptance

package reassign_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// tcpCounters reads RetransSegs and TCPTimeouts inside network namespace ns.
func tcpCounters(t *testing.T, ns string) (retrans, timeouts int64) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/net/snmp", "/proc/net/netstat").CombinedOutput()
	require.NoError(t, err, string(out))
	lines := strings.Split(string(out), "\n")
	for i := 0; i+1 < len(lines); i++ {
		h, v := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(h) == 0 || len(h) != len(v) || h[0] != v[0] {
			continue
		}
		for j := range h {
			n, _ := strconv.ParseInt(v[j], 10, 64)
			switch {
			case h[0] == "Tcp:" && h[j] == "RetransSegs":
				retrans = n
			case h[0] == "TcpExt:" && h[j] == "TCPTimeouts":
				timeouts = n
			}
		}
	}
	return retrans, timeouts
}

// TestProbeGuardLabClusters is the probe behind docs/BENCHMARKS.md's "The
// fixed apply's p99 taken as the rest's": fixed (unthrottled) applies of
// the guard lab's plans, away and home alternating, each broker's median
// window p99 and the TCP retransmits and timeouts in each broker's network
// namespace. Under the away plan (the acceptance's fixed apply) the
// canaries split in two clusters, the source brokers (1 and 2) far above
// the others, so that a median of every broker's windows pooled falls in
// one or the other with the count of windows on each side.
func TestProbeGuardLabClusters(t *testing.T) {
	jars, err := localkafka.FindJars("")
	require.NoError(t, err)
	base, err := labtest.FreeBase(4)
	require.NoError(t, err)
	ctx := context.Background()
	uctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	s, err := localkafka.Up(uctx, localkafka.Config{Brokers: 4, JarsDir: jars, Dir: filepath.Join(t.TempDir(), "guardlab"),
		BasePort: base, FastFailover: true, BandwidthBps: guardLink, HeapMB: 512}, kafka.WaitBrokers)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Down(15*time.Second)) })
	bootstrap := strings.Join(s.Bootstrap(), ",")
	fillBulk(t, ctx, bootstrap, "bulk")
	home, away := bulkPlans(t, "bulk")
	for i := range 6 {
		plan, name := away, "away"
		if i%2 == 1 {
			plan, name = home, "home"
		}
		before := map[string][2]int64{}
		for _, ns := range s.Net.Namespaces {
			r, to := tcpCounters(t, ns)
			before[ns] = [2]int64{r, to}
		}
		fixed := guardedRun(t, bootstrap, plan, "--throttle", "1GB/s", "--latency-objective", "p99=1h",
			"--min-throttle", "1GB/s", "--max-throttle", "1GB/s", "--max-inflight-per-broker", guardInflight)
		var counters []string
		for _, ns := range s.Net.Namespaces {
			r, to := tcpCounters(t, ns)
			counters = append(counters, fmt.Sprintf("%s: retrans %d, timeouts %d", ns, r-before[ns][0], to-before[ns][1]))
		}
		per := map[int32][]float64{}
		for _, w := range fixed.windows {
			if w.Counted {
				per[w.Broker] = append(per[w.Broker], w.P99)
			}
		}
		var pb []string
		for b := int32(1); b <= 4; b++ {
			pb = append(pb, fmt.Sprintf("b%d %.1f", b, median(per[b])))
		}
		t.Logf("apply %d (%s): took %v, all windows' median p99 %.1f ms, worst broker's %.1f ms (%s); %s",
			i+1, name, fixed.took.Round(time.Second), median(fixed.p99s()), fixed.worstMedian(), strings.Join(pb, ", "), strings.Join(counters, "; "))
		if name == "away" {
			for _, src := range []int32{1, 2} {
				for _, dst := range []int32{3, 4} {
					assert.Greater(t, median(per[src]), median(per[dst]), "apply %d: source broker %d's canary above destination %d's", i+1, src, dst)
				}
			}
		}
	}
}
