package localkafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestListeningInodes(t *testing.T) {
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:5214 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:5215 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 100 0 0 10 0
   2: 0100007F:5214 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 20 4 30 10 -1
`
	assert.Equal(t, []string{"1111"}, listeningInodes(strings.NewReader(tcp), 0x5214), "only the listening socket, not the connection")
	assert.Equal(t, []string{"2222"}, listeningInodes(strings.NewReader(tcp), 0x5215))
	assert.Empty(t, listeningInodes(strings.NewReader(tcp), 9092))
	assert.Empty(t, listeningInodes(strings.NewReader("garbage\n1: x y 0A\n"), 9092))
}

// bound listens on a free port of 127.0.0.1 and returns it.
func bound(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func TestPortFreeNamesPortAndHolder(t *testing.T) {
	port := bound(t)
	err := portFree("127.0.0.1", port, port-10)
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err), "a usage error: pick another --base-port")
	msg := err.Error()
	assert.Contains(t, msg, fmt.Sprintf("port %d on 127.0.0.1 is in use", port))
	assert.Contains(t, msg, fmt.Sprintf("start at %d", port-10))
	assert.NotContains(t, msg, "\n", "one line")
	if runtime.GOOS == "linux" {
		assert.Contains(t, msg, fmt.Sprintf("held by pid %d (", os.Getpid()), "this test process holds it")
	}
	assert.Equal(t, "", PortHolder(1), "no listener: nothing to name")
}

func TestCheckPortsEveryNodePort(t *testing.T) {
	// A base with every port of a 3-broker lab free, then each of its
	// ports taken in turn: broker ports and controller ports alike.
	var base int
	for b := 30000 + os.Getpid()%1000*20; ; b += 20 {
		if checkPorts(Config{Brokers: 3, BasePort: b, Dir: t.TempDir()}) == nil {
			base = b
			break
		}
	}
	cfg := Config{Brokers: 3, BasePort: base, Dir: t.TempDir()}
	var ports []int
	for _, n := range plan(cfg) {
		ports = append(ports, n.Port, n.ControllerPort)
	}
	require.Equal(t, []int{base, base + 1, base + 10, base + 11, base + 20, base + 21}, ports)
	for _, p := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		require.NoError(t, err)
		err = checkPorts(cfg)
		_ = l.Close()
		require.Error(t, err, "port %d taken", p)
		assert.Contains(t, err.Error(), fmt.Sprintf("port %d on 127.0.0.1 is in use", p))
	}
	assert.NoError(t, checkPorts(cfg))
	cfg.BandwidthBps = 5e6
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base))
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	assert.NoError(t, checkPorts(cfg), "a lab in fresh network namespaces has every port free")
}

type foreignErr struct{}

func (foreignErr) Error() string        { return "broker 1 belongs to cluster X" }
func (foreignErr) ForeignCluster() bool { return true }

func TestWaitReadyForeignClusterEndsAtOnce(t *testing.T) {
	s := &State{ClusterID: "lab-id", Nodes: nil}
	var calls int
	var gotID string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.waitReady(ctx, func(_ context.Context, id string, _ []string, _ []int32) error {
		calls++
		gotID = id
		return fmt.Errorf("check: %w", foreignErr{})
	}, []int32{1})
	require.Error(t, err)
	assert.Equal(t, 1, calls, "waiting longer cannot make another cluster's broker this lab's")
	assert.Equal(t, "lab-id", gotID, "the check is told the id the lab formatted")
	assert.Contains(t, err.Error(), "belongs to cluster X")
	assert.NoError(t, ctx.Err())

	calls = 0
	err = s.waitReady(ctx, func(context.Context, string, []string, []int32) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}, []int32{1})
	require.NoError(t, err)
	assert.Equal(t, 3, calls, "any other failure is waited out")
}
