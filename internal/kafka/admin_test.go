package kafka

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/topology"
)

func TestAdminSnapshotWaitAndSizes(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(4, "orders"))
	require.NoError(t, err)
	defer c.Close()

	a := NewAdmin(ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: 5 * time.Second}, "test")
	defer a.Close()
	ctx := context.Background()
	require.NoError(t, a.WaitBrokers(ctx, 3))

	cl, err := NewClient(ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ",")}, "test",
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	defer cl.Close()
	payload := strings.Repeat("x", 1000)
	for i := range 40 {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 4), Value: []byte(payload)}
		require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
	}

	snap, err := a.Snapshot(ctx, nil)
	require.NoError(t, err)
	assert.True(t, snap.Live)
	assert.Len(t, snap.Brokers, 3)
	require.Len(t, snap.Partitions, 4)
	for _, p := range snap.Partitions {
		assert.Equal(t, "orders", p.Topic)
		assert.NotEqual(t, topology.NoLeader, p.Leader)
		assert.Contains(t, p.Replicas, p.Leader)
	}

	sizes, err := a.LogDirSizes(ctx, func(s string) bool { return s == "orders" })
	require.NoError(t, err)
	require.Len(t, sizes, 4)
	for k, s := range sizes {
		// Ten 1000-byte values per partition, plus batch overhead.
		assert.GreaterOrEqual(t, s, int64(10*1000), k.String())
	}
	ApplySizes(snap, sizes)
	for _, p := range snap.Partitions {
		assert.Equal(t, sizes[p.Key()], p.SizeBytes)
	}

	id, err := a.ClusterID(ctx)
	require.NoError(t, err)
	assert.Equal(t, "kfake", id)

	// kfake never has a reassignment in progress: the request round-trips.
	ongoing, err := a.AllOngoing(ctx)
	require.NoError(t, err)
	assert.Empty(t, ongoing)

	none, err := a.Snapshot(ctx, func(string) bool { return false })
	require.NoError(t, err)
	assert.Empty(t, none.Partitions)
}

func TestAdminUnreachableIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	a := NewAdmin(ConnOptions{BootstrapServers: addr, Timeout: 1500 * time.Millisecond}, "test")
	defer a.Close()
	// The caller's context has no deadline: only the Admin's own timeout
	// can end the call (a hang fails on go test's -timeout).
	_, err = a.Snapshot(context.Background(), nil)
	require.ErrorIs(t, err, ErrUnreachable)
	assert.ErrorContains(t, err, "no broker at "+addr+" answered within 1.5s")
	_, err = a.LogDirSizes(context.Background(), nil)
	require.ErrorIs(t, err, ErrUnreachable)
}

func TestAdminAuthFailure(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "admin", "right"))
	require.NoError(t, err)
	defer c.Close()

	dir := t.TempDir()
	write := func(name, pass string) string {
		p := filepath.Join(dir, name)
		body := "bootstrap.servers=" + c.ListenAddrs()[0] + "\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="` + pass + "\";\n"
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}

	good := NewAdmin(ConnOptions{CommandConfig: write("good.properties", "right"), Timeout: 5 * time.Second}, "test")
	defer good.Close()
	snap, err := good.Snapshot(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, snap.Brokers, 1)

	bad := NewAdmin(ConnOptions{CommandConfig: write("bad.properties", "wrong"), Timeout: 3 * time.Second}, "test")
	defer bad.Close()
	_, err = bad.Snapshot(context.Background(), nil)
	require.ErrorIs(t, err, ErrAuth)
	assert.NotErrorIs(t, err, ErrUnreachable)
}

func TestClassify(t *testing.T) {
	a := NewAdmin(ConnOptions{BootstrapServers: "k1:9092"}, "test")
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"sasl refused", fmt.Errorf("metadata: %w", kerr.SaslAuthenticationFailed), ErrAuth},
		{"cluster acl", kerr.ClusterAuthorizationFailed, ErrAuth},
		{"unknown ca", x509.UnknownAuthorityError{}, ErrAuth},
		{"closed mid-handshake", fmt.Errorf("metadata: %w", io.EOF), ErrAuth},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ErrUnreachable},
		{"deadline", fmt.Errorf("metadata: %w", context.DeadlineExceeded), ErrUnreachable},
		{"other", kerr.UnknownTopicOrPartition, nil},
		{"scram refused the server", fmt.Errorf("metadata: %w", &saslError{mechanism: "SCRAM-SHA-256", err: errors.New(`server sent authentication error "invalid-proof"`)}), ErrAuth},
		{"tls or sasl missing", &kgo.ErrFirstReadEOF{}, ErrAuth},
		{"group acl", kerr.GroupAuthorizationFailed, ErrAuth},
		// Classified by type, never by text: a message that merely says
		// "SASL" is neither.
		{"text saying SASL", errors.New("SASL handshake: unexpected response"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := a.classify(tt.err)
			require.ErrorIs(t, got, tt.err)
			if tt.want == nil {
				assert.NotErrorIs(t, got, ErrAuth)
				assert.NotErrorIs(t, got, ErrUnreachable)
				return
			}
			require.ErrorIs(t, got, tt.want)
			assert.Contains(t, got.Error(), "k1:9092")
		})
	}
	assert.NoError(t, a.classify(nil))
}

// TestSASLFailuresAreTyped: the mechanisms kplan builds from
// --command-config turn every failure of the exchange into a *saslError,
// which classify reports as an authentication failure.
func TestSASLFailuresAreTyped(t *testing.T) {
	a := NewAdmin(ConnOptions{BootstrapServers: "k1:9092"}, "test")
	for _, tc := range []struct {
		name, mechanism, user string
		// challenge is the server's first message; nil fails at the start.
		challenge []byte
	}{
		{"plain without user", "PLAIN", "", nil},
		{"scram without user", "SCRAM-SHA-512", "", nil},
		{"scram garbled server message", "SCRAM-SHA-256", "admin", []byte("garbage")},
		{"scram wrong nonce", "SCRAM-SHA-256", "admin", []byte("r=other,s=c2FsdA==,i=4096")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Properties{SASLMechanism: tc.mechanism, Username: tc.user, Password: "pw"}.saslMechanism()
			require.NotNil(t, m)
			assert.Equal(t, tc.mechanism, m.Name())
			s, _, err := m.Authenticate(context.Background(), "k1:9092")
			if tc.challenge != nil {
				require.NoError(t, err)
				_, _, err = s.Challenge(tc.challenge)
			}
			var se *saslError
			require.ErrorAs(t, err, &se)
			assert.ErrorContains(t, err, "SASL "+tc.mechanism+": ")
			assert.ErrorIs(t, a.classify(fmt.Errorf("metadata: %w", err)), ErrAuth)
		})
	}
	assert.Nil(t, Properties{}.saslMechanism(), "no SASL, no mechanism")
}

func TestAdminBadCommandConfig(t *testing.T) {
	a := NewAdmin(ConnOptions{CommandConfig: filepath.Join(t.TempDir(), "missing.properties")}, "test")
	_, err := a.Snapshot(context.Background(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.properties")
	a.Close()
}

// TestThrottleConfigs: a throttle SetThrottle writes shows in
// ThrottleConfigs (read back with DescribeConfigs) until ClearThrottle
// removes it.
func TestThrottleConfigs(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"))
	require.NoError(t, err)
	defer c.Close()
	conn := ConnOptions{BootstrapServers: strings.Join(c.ListenAddrs(), ","), Timeout: 5 * time.Second}
	ctx := context.Background()
	cl, err := NewClient(conn, "test", kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	for i := range 6 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: make([]byte, 1000)}).FirstErr())
	}
	cl.Close()
	a := NewAdmin(conn, "test")
	defer a.Close()
	sizes, err := a.LogDirSizes(ctx, nil)
	require.NoError(t, err)
	for p := range int32(2) {
		assert.GreaterOrEqual(t, sizes[topology.Key{Topic: "orders", Partition: p}], int64(3*1000))
	}

	none, err := a.ThrottleConfigs(ctx, []int32{0, 1, 2}, []string{"orders"})
	require.NoError(t, err)
	assert.Empty(t, none)
	require.NoError(t, a.SetThrottle(ctx, topology.Throttle{Rate: 50_000, Brokers: []int32{0, 1, 2},
		Leaders: map[string][]string{"orders": {"0:0"}}, Followers: map[string][]string{"orders": {"0:1"}}}))
	got, err := a.ThrottleConfigs(ctx, []int32{0, 1, 2}, []string{"orders"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"broker 0: leader.replication.throttled.rate=50000", "broker 0: follower.replication.throttled.rate=50000",
		"broker 1: leader.replication.throttled.rate=50000", "broker 1: follower.replication.throttled.rate=50000",
		"broker 2: leader.replication.throttled.rate=50000", "broker 2: follower.replication.throttled.rate=50000",
		"topic orders: leader.replication.throttled.replicas=0:0", "topic orders: follower.replication.throttled.replicas=0:1",
	}, got)
	require.NoError(t, a.ClearThrottle(ctx, []int32{0, 1, 2}, []string{"orders"}))
	none, err = a.ThrottleConfigs(ctx, []int32{0, 1, 2}, []string{"orders"})
	require.NoError(t, err)
	assert.Empty(t, none)
}
