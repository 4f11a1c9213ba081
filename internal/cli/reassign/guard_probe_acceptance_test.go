//go:build acceptance

package reassign_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	bootstrap, s := guardLab(t)
	ctx := context.Background()
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
		per := fixed.perBroker()
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

// TestProbeGuardFloor is the probe behind docs/BENCHMARKS.md's "The floor
// at the minimum throttle": the acceptance's two plans, the fixed apply's
// (away) and then the guarded apply's (home), each applied with the
// throttle held at the guarded apply's --min-throttle (1MB/s) the whole
// way, the slowest any guard bounded by it can go. The share of its
// canary windows within an objective is about the most a guard can hold
// there (the canary's p99 rises with the rate), so an objective held in
// under 90% of windows at the minimum is one no guard can meet. Logged
// per plan: each broker's window p99 at the 50th, 90th and 95th
// percentile, and the share of windows within 66, 86, 105, 131 and 160 ms.
func TestProbeGuardFloor(t *testing.T) {
	bootstrap, _ := guardLab(t)
	ctx := context.Background()
	fillBulk(t, ctx, bootstrap, "bulk")
	home, away := bulkPlans(t, "bulk")
	for _, p := range []struct{ name, plan string }{{"away", away}, {"home", home}} {
		slow := guardedRun(t, bootstrap, p.plan, "--throttle", "1MB/s", "--latency-objective", "p99=1h",
			"--min-throttle", "1MB/s", "--max-throttle", "1MB/s", "--max-inflight-per-broker", guardInflight)
		require.Zero(t, slow.lost, "%s: the canary loses nothing", p.name)
		// 256 MB leave each of the two sending brokers at 1MB/s.
		assert.Greater(t, slow.took, 200*time.Second, "%s: the throttle held the move to about 1MB/s per broker", p.name)
		per := slow.perBroker()
		for b := int32(1); b <= 4; b++ {
			t.Logf("%s: broker %d: %d windows, window p99 at the 50th/90th/95th percentile %.1f / %.1f / %.1f ms",
				p.name, b, len(per[b]), quantile(per[b], 0.5), quantile(per[b], 0.9), quantile(per[b], 0.95))
		}
		var shares []string
		for _, x := range []time.Duration{66, 86, 105, 131, 160} {
			shares = append(shares, fmt.Sprintf("%v %.3f", x*time.Millisecond, slow.within(x*time.Millisecond)))
		}
		t.Logf("%s: took %v; windows within: %s", p.name, slow.took.Round(time.Second), strings.Join(shares, ", "))
	}
}
