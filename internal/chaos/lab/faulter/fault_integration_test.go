//go:build integration

package faulter_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/chaos"
	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/chaos/lab/faulter"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// leftChain and leftNetd are the lab's iptables chain and netd, checked
// after the lab is down.
var (
	leftChain string
	leftNetd  int
)

// TestMain runs netd when this binary is re-executed as the lab's delay
// process, and after the tests checks that `lab down` left no chain, no
// netd and no cgroup of the network conditions behind.
func TestMain(m *testing.M) {
	localkafka.MaybeNetd()
	code := labtest.Main(m)
	if leftChain != "" && exec.Command("iptables", "-w", "-n", "-L", leftChain).Run() == nil {
		fmt.Fprintf(os.Stderr, "lab down left iptables chain %s\n", leftChain)
		code = 1
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", leftNetd)); leftNetd > 0 && err == nil {
		fmt.Fprintf(os.Stderr, "lab down left netd (pid %d) running\n", leftNetd)
		code = 1
	}
	os.Exit(code)
}

// produceRTTs times n synchronous produces of one small record (acks=all).
func produceRTTs(t *testing.T, cl *kgo.Client, topic string, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr()
		cancel()
		require.NoError(t, err)
		out = append(out, time.Since(start))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// noLeftovers asserts that nothing of the network conditions remains.
func noLeftovers(t *testing.T, s *localkafka.State, chain string, netd int) {
	t.Helper()
	assert.Nil(t, s.NetConditions())
	assert.Error(t, exec.Command("iptables", "-w", "-n", "-L", chain).Run(), "chain %s removed", chain)
	assert.Error(t, exec.Command("iptables", "-w", "-t", "mangle", "-n", "-L", chain).Run(), "mangle chain %s removed", chain)
	if netd > 0 {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", netd))
		assert.True(t, os.IsNotExist(err), "netd %d ended", netd)
	}
	again, err := localkafka.Load(s.Dir)
	require.NoError(t, err)
	assert.Nil(t, again.NetConditions(), "lab.json holds no conditions")
}

// clientsDelay measures produce round trips (sorted) on the shared lab
// without a condition, with 50ms on the clients' path, and after clearing
// it; it checks that the condition's rules and netd are in place while it
// holds and that nothing of them is left after the clear.
func clientsDelay(t *testing.T, lab *labtest.Lab, topic string) (base, delayed, after []time.Duration) {
	t.Helper()
	s := lab.State
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test", kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, kafka.CreateTopic(ctx, cl, topic, [][]int32{{1, 2, 3}}, nil))

	produceRTTs(t, cl, topic, 5) // warm: metadata, connections
	base = produceRTTs(t, cl, topic, 31)

	require.NoError(t, s.SetNetCondition(ctx, localkafka.ClientsPath(), localkafka.Condition{Delay: 50 * time.Millisecond}))
	nc := s.NetConditions()
	require.NotNil(t, nc)
	chain, netd := nc.Chain, nc.NetdPID
	t.Cleanup(func() { _ = s.ClearNetConditions(context.Background()) })
	if nc.Mechanism == localkafka.MechNFQueue {
		require.True(t, s.NetdAlive(), "netd serves the delay queue")
	}
	delayed = produceRTTs(t, cl, topic, 31)
	require.NoError(t, s.ClearNetConditions(ctx))
	noLeftovers(t, s, chain, netd)
	after = produceRTTs(t, cl, topic, 31)
	t.Logf("produce round trip min/p50: %v/%v without, %v/%v with 50ms on the clients' path (%s), %v/%v after clear",
		base[0], base[15], delayed[0], delayed[15], nc.Mechanism, after[0], after[15])
	return base, delayed, after
}

// TestLabNetClientsDelay: 50ms on the clients' path is applied (the
// fastest delayed produce is slower than the fastest one without it) and
// leaves nothing behind once cleared. How close the added delay comes to
// 50ms is an acceptance figure: TestAcceptLabNetClientsDelay.
func TestLabNetClientsDelay(t *testing.T) {
	base, delayed, _ := clientsDelay(t, labtest.Shared(t), "netdelay")
	assert.Greater(t, delayed[0], base[0], "the delay is applied")
}

// isr returns partition 0's ISR of topic, read through cl.
func isr(ctx context.Context, cl *kgo.Client, topic string) ([]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil || len(t.Partitions) == 0 {
		return nil, fmt.Errorf("no metadata for %s", topic)
	}
	return t.Partitions[0].ISR, nil
}

// waitISR polls until ok(ISR) or the deadline.
func waitISR(t *testing.T, cl *kgo.Client, topic string, within time.Duration, ok func([]int32) bool) []int32 {
	t.Helper()
	deadline := time.Now().Add(within)
	var last []int32
	for time.Now().Before(deadline) {
		if got, err := isr(context.Background(), cl, topic); err == nil {
			last = got
			if ok(got) {
				return got
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("ISR of %s still %v after %s", topic, last, within)
	return nil
}

// TestLabFaultPartitionLeavesISR: the chaos adapter's partition of broker 3
// (every packet its JVM sends dropped) takes it out of the ISR; clearing
// the fault brings it back and leaves nothing behind.
func TestLabFaultPartitionLeavesISR(t *testing.T) {
	lab := labtest.Shared(t)
	lc, err := chaoslab.Open(lab.State, kafka.ConnOptions{}, "test")
	require.NoError(t, err)
	defer lc.Close()
	c := faulter.New(lc)
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap, Timeout: 3 * time.Second}, "test", kgo.MetadataMinAge(100*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, kafka.CreateTopic(ctx, cl, "netpartition", [][]int32{{1, 2, 3}}, nil))
	waitISR(t, cl, "netpartition", 30*time.Second, func(isr []int32) bool { return len(isr) == 3 })

	f := chaos.Fault{Kind: chaos.FaultPartition, Target: chaos.Target{Kind: chaos.TargetBroker, Broker: 3}}
	plan, err := c.PlanFault(ctx, 3, f)
	require.NoError(t, err)
	assert.Contains(t, plan.Manifest, "-j DROP")
	assert.Nil(t, lab.State.NetConditions(), "planning changes nothing")

	t.Cleanup(func() { _ = c.ClearFault(context.Background()) })
	require.NoError(t, c.InjectFault(ctx, 3, f))
	chain := lab.State.NetConditions().Chain
	got := waitISR(t, cl, "netpartition", 60*time.Second, func(isr []int32) bool { return !slices.Contains(isr, 3) })
	t.Logf("ISR with broker 3 partitioned: %v", got)

	require.NoError(t, c.ClearFault(context.WithoutCancel(ctx)))
	require.NoError(t, c.ClearFault(context.WithoutCancel(ctx)), "clearing twice is fine")
	noLeftovers(t, lab.State, chain, 0)
	waitISR(t, cl, "netpartition", 90*time.Second, func(isr []int32) bool { return len(isr) == 3 })
}

// TestLabNetLeftForDown leaves a condition in force: TestMain checks that
// `lab down` (labtest.Main's Down) removes it.
func TestLabNetLeftForDown(t *testing.T) {
	lab := labtest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, lab.State.SetNetCondition(ctx, localkafka.BrokerPath(2), localkafka.Condition{Delay: 5 * time.Millisecond, Loss: 0.01}))
	leftChain, leftNetd = lab.State.NetConditions().Chain, lab.State.NetConditions().NetdPID
}
