package localkafka

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestPlanCombinedUpToFive(t *testing.T) {
	nodes := plan(Config{Brokers: 5, Dir: "/lab", BasePort: 19092})
	require.Len(t, nodes, 5)
	for i, n := range nodes {
		assert.Equal(t, int32(i+1), n.ID)
		assert.True(t, n.Broker && n.Controller)
		assert.Equal(t, 19092+10*i, n.Port)
	}
	props := properties(Config{Brokers: 5, FastFailover: true}, nodes, nodes[2])
	assert.Contains(t, props, "process.roles=broker,controller\n")
	assert.Contains(t, props, "controller.quorum.voters=1@127.0.0.1:19093,2@127.0.0.1:19103,3@127.0.0.1:19113,4@127.0.0.1:19123,5@127.0.0.1:19133\n")
	assert.Contains(t, props, "broker.rack=rack-c\n")
	assert.Contains(t, props, "broker.session.timeout.ms=3000\n")
	assert.Contains(t, props, "offsets.topic.replication.factor=3\n")
}

func TestPlanRacks(t *testing.T) {
	for _, tc := range []struct {
		racks int
		want  []string
	}{
		{0, []string{"rack-a", "rack-b", "rack-c", "rack-a", "rack-b"}},
		{2, []string{"rack-a", "rack-b", "rack-a", "rack-b", "rack-a"}},
		{1, []string{"rack-a", "rack-a", "rack-a", "rack-a", "rack-a"}},
	} {
		var got []string
		for _, n := range plan(Config{Brokers: 5, Racks: tc.racks, BasePort: 19092}) {
			got = append(got, n.Rack)
		}
		assert.Equal(t, tc.want, got, "racks %d", tc.racks)
	}
}

func TestLogDirsPerBroker(t *testing.T) {
	nodes := plan(Config{Brokers: 6, Dir: "/lab", BasePort: 19092})
	one := properties(Config{Brokers: 6}, nodes, nodes[0])
	assert.Contains(t, one, "log.dirs=/lab/node-1/data\n", "the default: one dir")
	two := properties(Config{Brokers: 6, LogDirs: 2}, nodes, nodes[0])
	assert.Contains(t, two, "log.dirs=/lab/node-1/data-0,/lab/node-1/data-1\n")
	ctl := properties(Config{Brokers: 6, LogDirs: 2}, nodes, nodes[7])
	assert.Contains(t, ctl, "log.dirs="+nodes[7].Dir+"/data\n", "a controller keeps one")
}

func TestPlanDedicatedControllersAboveFive(t *testing.T) {
	nodes := plan(Config{Brokers: 6, Dir: "/lab", BasePort: 19092})
	require.Len(t, nodes, 9)
	assert.False(t, nodes[0].Controller)
	assert.Equal(t, int32(9001), nodes[6].ID)
	assert.False(t, nodes[6].Broker)
	props := properties(Config{Brokers: 6}, nodes, nodes[0])
	assert.Contains(t, props, "process.roles=broker\n")
	assert.Contains(t, props, "controller.quorum.voters=9001@")
	assert.NotContains(t, props, "broker.session.timeout.ms")
	ctl := properties(Config{Brokers: 6}, nodes, nodes[7])
	assert.Contains(t, ctl, "process.roles=controller\n")
	assert.NotContains(t, ctl, "advertised.listeners")
	ports := map[int]bool{}
	for _, n := range nodes {
		for _, p := range []int{n.Port, n.ControllerPort} {
			if p != 0 {
				assert.False(t, ports[p], "port %d used twice", p)
				ports[p] = true
			}
		}
	}
}

// TestPlanLoopbackPerBroker: under Config.Loopback broker N listens on and
// advertises 127.0.0.(1+N); controller listeners stay on 127.0.0.1.
func TestPlanLoopbackPerBroker(t *testing.T) {
	for _, tc := range []struct {
		name      string
		brokers   int
		bootstrap []string
		voters    string
	}{
		{"combined", 3, []string{"127.0.0.2:19092", "127.0.0.3:19102", "127.0.0.4:19112"},
			"controller.quorum.voters=1@127.0.0.1:19093,2@127.0.0.1:19103,3@127.0.0.1:19113\n"},
		{"dedicated controllers", 6, []string{"127.0.0.2:19092", "127.0.0.3:19102", "127.0.0.4:19112", "127.0.0.5:19122", "127.0.0.6:19132", "127.0.0.7:19142"},
			"controller.quorum.voters=9001@127.0.0.1:19153,9002@127.0.0.1:19163,9003@127.0.0.1:19173\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Brokers: tc.brokers, Dir: "/lab", BasePort: 19092, Loopback: true}
			s := &State{Nodes: plan(cfg)}
			assert.Equal(t, tc.bootstrap, s.Bootstrap())
			for _, n := range s.Nodes {
				props := properties(cfg, s.Nodes, n)
				assert.Contains(t, props, tc.voters)
				if n.Broker {
					assert.Equal(t, LoopbackAddr(n.ID), n.Addr)
					assert.Contains(t, props, fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.%d:%d\n", 1+n.ID, n.Port))
				} else {
					assert.Equal(t, "127.0.0.1", n.Addr)
				}
				if n.Controller {
					assert.Contains(t, props, fmt.Sprintf("CONTROLLER://127.0.0.1:%d", n.ControllerPort))
				}
			}
		})
	}
	err := Config{Brokers: 3, Dir: "/lab", BasePort: 19092, Loopback: true, BandwidthBps: 1000}.Validate()
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, FieldLoopback, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "cannot be combined with a broker bandwidth limit")
}

// TestCloseInheritedOnExec: a descriptor inherited without close-on-exec
// (flock's lock, fd 3 of `flock LOCK go test`) is not handed to the JVMs,
// which outlive the test; before, lab JVMs left by a crashed test held the
// tests' lock for good.
func TestCloseInheritedOnExec(t *testing.T) {
	fd, err := syscall.Open(filepath.Join(t.TempDir(), "lock"), syscall.O_CREAT|syscall.O_RDWR, 0o600) // no O_CLOEXEC, as inherited
	require.NoError(t, err)
	defer syscall.Close(fd) //nolint:errcheck // a test file
	flags := func() uintptr {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
		require.Zero(t, errno)
		return r
	}
	require.Zero(t, flags()&syscall.FD_CLOEXEC)
	CloseInheritedOnExec()
	assert.NotZero(t, flags()&syscall.FD_CLOEXEC)
}

func TestParseBrokerAndNode(t *testing.T) {
	id, err := ParseBroker("broker-3")
	require.NoError(t, err)
	assert.Equal(t, int32(3), id)
	_, err = ParseBroker("broker-x")
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.EqualError(t, err, `"broker-x" is not a broker (want broker-N)`)
	s := &State{Nodes: plan(Config{Brokers: 3, Dir: "/lab", BasePort: 19092})}
	_, err = s.Node(9)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.EqualError(t, err, "no broker-9 in this 3-broker lab")
	assert.Equal(t, []string{"127.0.0.1:19092", "127.0.0.1:19102", "127.0.0.1:19112"}, s.Bootstrap())
	assert.False(t, s.AnyAlive())
}

func TestFindJarsAndLoad(t *testing.T) {
	dir := t.TempDir()
	_, err := FindJars(dir)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, FieldKafkaJars, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "make kafka")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kafka_2.13-4.3.1.jar"), nil, 0o644))
	got, err := FindJars(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, got)

	_, err = Load(filepath.Join(dir, "none"))
	assert.ErrorIs(t, err, ErrNoLab)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.ErrorContains(t, err, "no lab in "+filepath.Join(dir, "none"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lab.json"), []byte("{"), 0o644))
	_, err = Load(dir)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), filepath.Join(dir, "lab.json")))
	id, err := newClusterID()
	require.NoError(t, err)
	assert.Len(t, id, 22)
}

// A Uuid whose base64url form starts with '-' (first byte 0xf8-0xfb) is
// skipped: kafka-storage format -t would read it as an option.
func TestClusterIDNeverStartsWithDash(t *testing.T) {
	dash := bytes.Repeat([]byte{0xf8}, 16)
	plain := bytes.Repeat([]byte{0x01}, 16)
	id, err := clusterIDFrom(bytes.NewReader(append(dash, plain...)))
	require.NoError(t, err)
	assert.Equal(t, base64.RawURLEncoding.EncodeToString(plain), id)
	_, err = clusterIDFrom(bytes.NewReader(dash))
	assert.Error(t, err, "a reader that runs dry is an error, not a loop")
}

// TestBrokerDyingWhileStartingShowsItsLog runs Up with a stand-in for java
// that formats fine but whose broker exits at once, as a broker does on a
// bad config: Up must name the node, print its log's tail, and leave
// nothing running.
func TestBrokerDyingWhileStartingShowsItsLog(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-java")
	require.NoError(t, os.WriteFile(fake, []byte(`#!/bin/sh
for a in "$@"; do
  if [ "$a" = kafka.Kafka ]; then echo "ERROR Exiting Kafka due to fatal exception: boom"; exit 1; fi
done
exit 0
`), 0o755))
	jars := fakeJars(t)
	cfg := Config{Brokers: 2, JarsDir: jars, Dir: filepath.Join(dir, "lab"), BasePort: 24092 + os.Getpid()%500*10, Java: fake}
	notReady := func(context.Context, string, []string, []int32) error { return errors.New("not yet") }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Up(ctx, cfg, notReady)
	require.Error(t, err)
	assert.Regexp(t, `node-\d died while starting`, err.Error())
	assert.Contains(t, err.Error(), "boom")
	s, lerr := Load(cfg.Dir)
	require.NoError(t, lerr)
	assert.False(t, s.AnyAlive())
}

func TestUpRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious.txt")
	require.NoError(t, os.WriteFile(precious, []byte("keep"), 0o644))
	_, err := Up(context.Background(), Config{Brokers: 1, JarsDir: fakeJars(t), Dir: dir, BasePort: 25092, Java: "/bin/true"}, nil)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, FieldDir, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "not empty and holds no lab")
	_, err = os.Stat(precious)
	assert.NoError(t, err, "nothing deleted")
}

// fakeJars returns a directory FindJars accepts.
func fakeJars(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kafka_2.13-4.3.1.jar"), nil, 0o644))
	return dir
}

// TestConfigValidate: each bad request is a usage error naming its field,
// and Up refuses it before writing anything.
func TestConfigValidate(t *testing.T) {
	good := Config{Brokers: 3, Dir: "/lab", BasePort: 19092}
	require.NoError(t, good.Validate())
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
		want  string
	}{
		{"no brokers", func(c *Config) { c.Brokers = 0 }, FieldBrokers, "want 1 to 64, got 0"},
		{"too many brokers", func(c *Config) { c.Brokers = 65 }, FieldBrokers, "got 65"},
		{"negative racks", func(c *Config) { c.Racks = -1 }, FieldRacks, "want 1 to 26 racks"},
		{"too many log dirs", func(c *Config) { c.LogDirs = 9 }, FieldLogDirs, "want 1 to 8 log dirs"},
		{"too many racks", func(c *Config) { c.Racks = 27 }, FieldRacks, "got 27"},
		{"low port", func(c *Config) { c.BasePort = 80 }, FieldBasePort, "want 1024 to 65475 for 3 brokers, got 80"},
		{"high port", func(c *Config) { c.BasePort = 65500 }, FieldBasePort, "got 65500"},
		{"ports past 65535 for many brokers", func(c *Config) { c.Brokers, c.BasePort = 64, 65000 }, FieldBasePort, "want 1024 to 64865 for 64 brokers"},
		{"negative cpu", func(c *Config) { c.CPUQuota = -0.5 }, FieldBrokerCPU, "got -0.5"},
		{"too much cpu", func(c *Config) { c.CPUQuota = 65 }, FieldBrokerCPU, "at most 64"},
		{"nan cpu", func(c *Config) { c.CPUQuota = math.NaN() }, FieldBrokerCPU, "got NaN"},
		{"negative bandwidth", func(c *Config) { c.BandwidthBps = -1 }, FieldBrokerBandwidth, "positive rate"},
		{"negative heap", func(c *Config) { c.HeapMB = -1 }, FieldHeapMB, "got -1"},
		{"no dir", func(c *Config) { c.Dir = "" }, FieldDir, "needs a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			cfg.Dir = filepath.Join(t.TempDir(), "lab")
			tc.edit(&cfg)
			err := cfg.Validate()
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.field+": "), "names the field: %v", err)
			assert.ErrorContains(t, err, tc.want)
			_, upErr := Up(context.Background(), cfg, nil)
			assert.Equal(t, err, upErr, "Up validates the same way")
			if cfg.Dir != "" {
				_, statErr := os.Stat(cfg.Dir)
				assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing written")
			}
		})
	}
}

// TestUpChecksTheMachineFirst: missing jars, a missing java and a port in
// use are refused before anything is written, each naming what is wrong.
func TestUpChecksTheMachineFirst(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close() //nolint:errcheck // test listener
	busy := l.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
		want  string
	}{
		{"no jars", Config{Brokers: 1, BasePort: 25092, JarsDir: t.TempDir(), Java: "/bin/true"}, FieldKafkaJars, "holds no kafka_2.13 jar"},
		{"no java", Config{Brokers: 1, BasePort: 25092, JarsDir: fakeJars(t), Java: "/no/such/java"}, "", "/no/such/java not found"},
		{"port in use", Config{Brokers: 1, BasePort: busy, JarsDir: fakeJars(t), Java: "/bin/true"}, FieldBasePort, fmt.Sprintf("port %d on 127.0.0.1 is in use", busy)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.BasePort < 1024 {
				t.Skipf("the kernel gave a privileged port %d", tc.cfg.BasePort)
			}
			tc.cfg.Dir = filepath.Join(t.TempDir(), "lab")
			_, err := Up(context.Background(), tc.cfg, nil)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
			assert.ErrorContains(t, err, tc.want)
			_, statErr := os.Stat(tc.cfg.Dir)
			assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing written")
		})
	}
}

// TestAliveThroughExec: a node started through a chain of execs (as `ip
// netns exec ... java` is) counts as alive at every instant; the kernel
// shows an empty cmdline inside execve, which once made a healthy broker
// look "died while starting".
func TestAliveThroughExec(t *testing.T) {
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Fatalf("this test needs /usr/bin/env: %v", err)
	}
	config := filepath.Join(t.TempDir(), "node-1", "server.properties")
	for range 20 {
		cmd := exec.Command("/usr/bin/env", "env", "env", "/bin/sh", "-c", "sleep 5; true", config)
		require.NoError(t, cmd.Start())
		n := Node{ID: 1, PID: cmd.Process.Pid, Config: config}
		deadline := time.Now().Add(50 * time.Millisecond)
		for time.Now().Before(deadline) {
			if !assert.True(t, n.Alive(), "a starting node looked dead") {
				break
			}
		}
		require.NoError(t, cmd.Process.Kill())
		for i := 0; i < 100 && !zombie(n.PID); i++ {
			time.Sleep(5 * time.Millisecond)
		}
		assert.False(t, n.Alive(), "a killed, unreaped node (a zombie) looks alive")
		_ = cmd.Wait()
		assert.False(t, n.Alive(), "a killed and reaped node looks alive")
	}
	assert.False(t, Node{PID: os.Getpid(), Config: config}.Alive(), "another process is not the node")
}
