package remote

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// fakeKiller kills and restarts brokers of an embedded cluster and
// records what it was asked.
type fakeKiller struct {
	e       *embedded.Embedded
	refuse  error
	at      time.Time
	mu      sync.Mutex
	calls   []string
	cleaned int
}

func (f *fakeKiller) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (*fakeKiller) Name() string { return "fake" }
func (f *fakeKiller) Plan(_ context.Context, b chaos.Broker) (chaos.KillPlan, error) {
	f.record("plan " + b.Host)
	if f.refuse != nil {
		return chaos.KillPlan{}, f.refuse
	}
	return chaos.KillPlan{Target: "fake"}, nil
}
func (f *fakeKiller) Kill(_ context.Context, b chaos.Broker) (time.Time, error) {
	f.record("kill")
	return f.at, f.e.Kill(b.ID)
}
func (f *fakeKiller) Restore(_ context.Context, b chaos.Broker) error {
	f.record("restore")
	return f.e.Restart(b.ID)
}
func (f *fakeKiller) Cleanup(context.Context) error { f.cleaned++; return nil }
func (f *fakeKiller) Log() []string                 { return []string{"fake log"} }

func newCluster(t *testing.T) (*embedded.Embedded, *fakeKiller, *Cluster) {
	t.Helper()
	e, err := embedded.New(3, "test")
	require.NoError(t, err)
	t.Cleanup(e.Close)
	k := &fakeKiller{e: e, at: time.Now()}
	c, err := New(context.Background(), Options{Conn: kafka.ConnOptions{BootstrapServers: strings.Join(e.Addrs(), ",")}, Version: "test", Killer: k, Poll: 10 * time.Millisecond, LeaveTimeout: 10 * time.Second, RejoinTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return e, k, c
}

func TestKillAndRestart(t *testing.T) {
	e, k, c := newCluster(t)
	ctx := context.Background()
	assert.True(t, c.Real())
	assert.Equal(t, strings.Join(e.Addrs(), ","), c.Kind())
	assert.Contains(t, c.Label(), "brokers killed by fake")
	ids, err := c.Brokers(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 3}, ids)
	b, err := c.Broker(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, e.Addr(3), net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), "the broker as Kafka advertises it")

	require.NoError(t, e.CreateTopic(ctx, "exp", [][]int32{{3, 1}, {1, 2}}))
	layout, ok, err := c.Layout(ctx, "exp")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, [][]int32{{3, 1}, {1, 2}}, layout)

	require.NoError(t, c.Kill(ctx, 3))
	assert.Equal(t, []string{"plan " + b.Host, "kill"}, k.calls, "the killer checks its target before it kills")
	assert.Equal(t, k.at, c.KillTime())
	assert.Equal(t, []string{"fake log"}, c.KillerLog())
	assert.Empty(t, c.KillerLog(), "each call returns the lines since the previous one")
	live, err := c.liveBrokers(ctx)
	require.NoError(t, err)
	assert.Len(t, live, 2, "Kill returns once Kafka no longer lists the broker")
	ids, err = c.Brokers(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 3}, ids, "a killed broker is still one of the cluster's")

	require.NoError(t, c.Restart(ctx, 3))
	// kfake reports its own replica order, so which leader is preferred
	// is its to say: the real lab's integration test checks the leaders.
	require.NoError(t, c.ElectPreferred(ctx))
	assert.Equal(t, []string{"plan " + b.Host, "kill", "restore"}, k.calls)
}

func TestKillRefused(t *testing.T) {
	_, k, c := newCluster(t)
	k.refuse = errkind.Refusedf("container-template", "container kafka-3 is not broker 3")
	err := c.Kill(context.Background(), 3)
	require.Error(t, err)
	assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	assert.NotContains(t, k.calls, "kill", "a refused plan kills nothing")
	assert.True(t, c.KillTime().IsZero())

	err = c.Kill(context.Background(), 9)
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.ErrorContains(t, err, "broker-9: no such broker")
}

// A broker that does not leave (the killer's command did nothing) is an
// error once LeaveTimeout passed.
func TestKillBrokerStays(t *testing.T) {
	e, err := embedded.New(3, "test")
	require.NoError(t, err)
	defer e.Close()
	k := &noopKiller{}
	c, err := New(context.Background(), Options{Conn: kafka.ConnOptions{BootstrapServers: strings.Join(e.Addrs(), ",")}, Version: "test", Killer: k, Poll: 10 * time.Millisecond, LeaveTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	err = c.Kill(context.Background(), 2)
	require.Error(t, err)
	assert.ErrorContains(t, err, "broker 2 did not leave the cluster")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

type noopKiller struct{ fakeKiller }

func (*noopKiller) Plan(context.Context, chaos.Broker) (chaos.KillPlan, error) {
	return chaos.KillPlan{}, nil
}
func (*noopKiller) Kill(context.Context, chaos.Broker) (time.Time, error) { return time.Now(), nil }

func TestCreateAndCleanup(t *testing.T) {
	_, k, c := newCluster(t)
	ctx := context.Background()
	require.NoError(t, c.CreateTopic(ctx, "kplan-chaos-node", [][]int32{{1, 2}, {2, 3}, {3, 1}}))
	assert.Equal(t, []string{"kplan-chaos-node"}, c.Created())
	layout, ok, err := c.Layout(ctx, "kplan-chaos-node")
	require.NoError(t, err)
	require.True(t, ok)
	// kfake places the replicas of a created topic its own way (the real
	// lab's integration test checks the assignment).
	assert.Len(t, layout, 3)

	deleted, err := c.Cleanup(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"kplan-chaos-node"}, deleted)
	assert.Equal(t, 1, k.cleaned, "the killer cleans up too")
	assert.Empty(t, c.Created())
	require.Eventually(t, func() bool {
		_, ok, err := c.Layout(ctx, "kplan-chaos-node")
		return err == nil && !ok
	}, 5*time.Second, 10*time.Millisecond)
	deleted, err = c.Cleanup(ctx)
	require.NoError(t, err, "Cleanup may run twice")
	assert.Empty(t, deleted)
}

func TestKeepTopics(t *testing.T) {
	e, err := embedded.New(3, "test")
	require.NoError(t, err)
	defer e.Close()
	c, err := New(context.Background(), Options{Conn: kafka.ConnOptions{BootstrapServers: strings.Join(e.Addrs(), ",")}, Version: "test", Killer: &fakeKiller{e: e}, KeepTopics: true})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.CreateTopic(context.Background(), "kept", [][]int32{{1, 2}}))
	deleted, err := c.Cleanup(context.Background())
	require.NoError(t, err)
	assert.Empty(t, deleted)
	_, ok, err := c.Layout(context.Background(), "kept")
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestNewBadInput(t *testing.T) {
	_, err := New(context.Background(), Options{Killer: &fakeKiller{}})
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, "bootstrap-server", errkind.FieldOf(err))
	_, err = New(context.Background(), Options{Conn: kafka.ConnOptions{BootstrapServers: "x:1"}})
	require.Error(t, err)
	assert.Equal(t, "killer", errkind.FieldOf(err))
	_, err = New(context.Background(), Options{Conn: kafka.ConnOptions{BootstrapServers: "127.0.0.1:1", Timeout: 200 * time.Millisecond}, Killer: &fakeKiller{}})
	require.Error(t, err, "an unreachable cluster")
	assert.False(t, errors.Is(err, context.Canceled))
}

// TestRunReportsTheKiller runs an experiment through the adapter: the
// killer's kill time and log reach the result, and the experiment topics
// it created go at Cleanup.
func TestRunReportsTheKiller(t *testing.T) {
	_, k, c := newCluster(t)
	k.at = time.Now().Add(time.Hour) // a platform clock ahead: clamped into the kill call
	cfg := chaos.Defaults()
	cfg.Topic = "remote"
	// kfake's controller is its last broker for good: keep it, the topics'
	// deletion needs it.
	cfg.Target = chaos.Target{Kind: chaos.TargetBroker, Broker: 2}
	cfg.Partitioners = []string{"roundrobin", "node"}
	cfg.Warmup, cfg.Phase = 200*time.Millisecond, 500*time.Millisecond
	cfg.Rate = 20_000
	cfg.Version = "test"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := chaos.Run(ctx, c, cfg)
	require.NoError(t, err)
	assert.Equal(t, int32(2), res.KilledBroker)
	assert.Equal(t, []string{"fake log"}, res.KillerLog)
	require.NotNil(t, res.FailoverMS, "a real cluster's failover is timed")
	assert.GreaterOrEqual(t, *res.FailoverMS, 0.0)
	require.NotNil(t, res.KillEffectMS, "the killer reported a kill time")
	assert.GreaterOrEqual(t, *res.KillEffectMS, 0.0)
	assert.ElementsMatch(t, []string{"remote-roundrobin", "remote-node"}, c.Created())
	deleted, err := c.Cleanup(context.Background())
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"remote-roundrobin", "remote-node"}, deleted)
}
