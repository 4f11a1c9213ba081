// Package localkafka runs a real Apache Kafka KRaft cluster on this machine
// from Kafka's own jars: it writes node configs, formats storage, starts one
// JVM per node on loopback, and keeps the lab's state (pids, ports, dirs,
// cluster id) in a JSON file in the lab directory so later processes can
// inspect, kill, restart and stop it. It talks to no broker itself: callers
// pass a readiness check (internal/kafka holds the client).
package localkafka

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// MaxCombined is the largest lab whose nodes are all broker+controller;
// bigger labs get three dedicated controllers.
const MaxCombined = 5

// MaxBrokers is the largest lab.
const MaxBrokers = 64

// MaxCPUQuota is the largest per-broker CPU cap, in CPUs.
const MaxCPUQuota = 64

// DefaultHeapMB is each JVM's heap when Config.HeapMB is 0.
const DefaultHeapMB = 384

// controllerIDBase numbers dedicated controllers (9001..9003) so that
// broker ids stay 1..N everywhere.
const controllerIDBase = 9000

// The fields of a Config that errors name; the CLI spells each as its flag.
const (
	FieldBrokers         = "brokers"
	FieldBasePort        = "base-port"
	FieldBrokerCPU       = "broker-cpu"
	FieldBrokerBandwidth = "broker-bandwidth"
	FieldHeapMB          = "heap-mb"
	FieldDir             = "dir"
	FieldKafkaJars       = "kafka-jars"
	FieldLoopback        = "loopback-per-broker"
	FieldRacks           = "racks"
	FieldLogDirs         = "log-dirs"
)

// Config describes a lab to start.
type Config struct {
	Brokers int
	// JarsDir is the directory of Kafka's jars; empty means FindJars("").
	JarsDir      string
	Dir          string
	BasePort     int
	FastFailover bool
	// HeapMB is each JVM's heap; 0 means DefaultHeapMB.
	HeapMB int
	// Java is the java binary; empty means "java" on PATH.
	Java string
	// BandwidthBps, when positive, runs every node in its own network
	// namespace with a tbf limit of this many bytes/s on each broker's link.
	BandwidthBps int64
	// CPUQuota, when positive, caps each broker JVM at this fraction of one
	// CPU through a cgroup CFS quota (controllers are not capped); 0: no cap.
	CPUQuota float64
	// Loopback gives every broker a loopback address of its own: broker N
	// listens on and advertises 127.0.0.(1+N), so that each broker has a
	// distinct host in Kafka's metadata (as pods have distinct IPs).
	// Controller listeners stay on 127.0.0.1. Not with BandwidthBps, whose
	// namespaces give every node an address already.
	Loopback bool
	// Racks is how many racks the brokers are spread over, round robin:
	// broker N gets broker.rack rack-a, rack-b, ... ((N-1) mod Racks); 0
	// means DefaultRacks.
	Racks int
	// Security is the client listener's mode: "" or SecurityPlaintext,
	// SecuritySASLSSL, SecuritySSL (mTLS) or SecuritySASLPlaintext. A
	// secured lab gets a CA and node certificates, SCRAM users and a
	// client.properties (State.Security).
	Security string
	// LogDirs is how many log dirs (JBOD) each broker has: data-0,
	// data-1, ... in its node directory; 0 or 1 means one, data (the
	// default: only tests of log_dirs need more). A controller-only node
	// keeps one.
	LogDirs int
	// Progress, when set, hears each phase of Up as it begins (the CLI
	// prints them, and tests interrupt Up at a chosen phase by them).
	Progress func(Phase)
}

// Phase is a step of Up that takes time.
type Phase string

// The phases of Up, in order.
const (
	// PhaseFormat: Kafka's StorageTool formats every node's storage (one
	// short-lived JVM per node).
	PhaseFormat Phase = "formatting storage"
	// PhaseStart: the nodes' JVMs are being launched.
	PhaseStart Phase = "starting the JVMs"
	// PhaseReady: the JVMs run; Up waits until every broker answers.
	PhaseReady Phase = "waiting for the brokers to answer"
)

func (c Config) progress(p Phase) {
	if c.Progress != nil {
		c.Progress(p)
	}
}

// LoopbackAddr is broker id's address under Config.Loopback: 127.0.0.(1+id).
func LoopbackAddr(id int32) string { return fmt.Sprintf("127.0.0.%d", 1+id) }

// Validate checks the request alone, before the machine is looked at. Its
// errors are usage errors naming the field (see the Field constants).
func (c Config) Validate() error {
	if c.Brokers < 1 || c.Brokers > MaxBrokers {
		return errkind.Usagef(FieldBrokers, "want 1 to %d, got %d", MaxBrokers, c.Brokers)
	}
	if hi := 65535 - (c.Brokers+3)*10; c.BasePort < 1024 || c.BasePort > hi {
		return errkind.Usagef(FieldBasePort, "want 1024 to %d for %d brokers, got %d", hi, c.Brokers, c.BasePort)
	}
	if !(c.CPUQuota >= 0 && c.CPUQuota <= MaxCPUQuota) { // also refuses NaN
		return errkind.Usagef(FieldBrokerCPU, "want a fraction of one CPU (e.g. 0.25), at most %d, or 0 for no cap; got %g", MaxCPUQuota, c.CPUQuota)
	}
	if c.Racks < 0 || c.Racks > MaxRacks {
		return errkind.Usagef(FieldRacks, "want 1 to %d racks (0: %d), got %d", MaxRacks, DefaultRacks, c.Racks)
	}
	if c.LogDirs < 0 || c.LogDirs > MaxLogDirs {
		return errkind.Usagef(FieldLogDirs, "want 1 to %d log dirs per broker (0: 1), got %d", MaxLogDirs, c.LogDirs)
	}
	if c.BandwidthBps < 0 {
		return errkind.Usagef(FieldBrokerBandwidth, "want a positive rate, got %d bytes/s", c.BandwidthBps)
	}
	if c.HeapMB < 0 {
		return errkind.Usagef(FieldHeapMB, "want a heap in MiB (0 for %d), got %d", DefaultHeapMB, c.HeapMB)
	}
	if c.Dir == "" {
		return errkind.Usagef(FieldDir, "empty: the lab needs a directory")
	}
	if _, err := normalizeSecurity(c.Security); err != nil {
		return err
	}
	if c.Loopback && c.BandwidthBps > 0 {
		return errkind.Usagef(FieldLoopback, "cannot be combined with a broker bandwidth limit (each broker already has its namespace's address)")
	}
	return nil
}

// Node is one JVM of the lab.
type Node struct {
	ID             int32  `json:"id"`
	Broker         bool   `json:"broker"`
	Controller     bool   `json:"controller"`
	Rack           string `json:"rack,omitempty"`
	Port           int    `json:"port,omitempty"`
	ControllerPort int    `json:"controller_port,omitempty"`
	Dir            string `json:"dir"`
	Config         string `json:"config"`
	Log            string `json:"log"`
	PID            int    `json:"pid"`
	// Addr is the node's IP: 127.0.0.1, its namespace's address, or its
	// own loopback address (Config.Loopback; brokers only).
	Addr string `json:"addr"`
	// ControllerAddr is the controller listener's IP when it differs from
	// Addr (a combined node under Config.Loopback keeps it on 127.0.0.1).
	ControllerAddr string `json:"controller_addr,omitempty"`
	// Netns is the network namespace it runs in, when bandwidth is limited.
	Netns string `json:"netns,omitempty"`
}

// State is what lab.json holds.
type State struct {
	Version   int       `json:"version"`
	ClusterID string    `json:"cluster_id"`
	Dir       string    `json:"dir"`
	JarsDir   string    `json:"jars_dir"`
	Java      string    `json:"java"`
	HeapMB    int       `json:"heap_mb"`
	Started   time.Time `json:"started"`
	Nodes     []Node    `json:"nodes"`
	Net       *Net      `json:"net,omitempty"`
	// CPUQuota is each broker's CPU cap in CPUs (0: none).
	CPUQuota float64 `json:"cpu_quota,omitempty"`
	// Security describes a secured lab's client listener and files; nil
	// for a plaintext lab.
	Security *Security `json:"security,omitempty"`
	// NetCond is what `kplan lab net` put in force (netcond.go); nil: none.
	NetCond *NetConds `json:"net_conditions,omitempty"`

	// secrets are the SCRAM passwords while Up writes files and formats
	// storage; never saved in lab.json.
	secrets *labSecrets
}

// ErrNoLab is what a NoLabError is (errors.Is): the directory holds no lab.
var ErrNoLab = errors.New("no lab")

// NoLabError says that a directory holds no lab; it is a usage error.
type NoLabError struct {
	Dir string
}

func (e *NoLabError) Error() string {
	return fmt.Sprintf("no lab in %s (start one with `kplan lab up --dir %s`)", e.Dir, e.Dir)
}

// ErrorKind makes a missing lab a usage error.
func (e *NoLabError) ErrorKind() errkind.Kind { return errkind.Usage }

// Is reports whether target is ErrNoLab.
func (e *NoLabError) Is(target error) bool { return target == ErrNoLab }

// DefaultDir is the lab directory when --dir is omitted.
func DefaultDir() string {
	if d := os.Getenv("KPLAN_LAB_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("kplan-lab-%d", os.Getuid()))
}

// FindJars returns the jars directory: explicit, else $KPLAN_KAFKA_JARS,
// else ./.cache/kafka-*/libs. It checks the broker's main class is there.
func FindJars(explicit string) (string, error) {
	cands := []string{explicit}
	if explicit == "" {
		cands = []string{os.Getenv("KPLAN_KAFKA_JARS")}
		if m, _ := filepath.Glob(filepath.Join(".cache", "kafka-*", "libs")); len(m) > 0 {
			slices.Sort(m)
			cands = append(cands, m[len(m)-1])
		}
	}
	for _, d := range cands {
		if d == "" {
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(d, "kafka_2.13-*.jar")); len(m) > 0 {
			return filepath.Abs(d)
		}
		if explicit != "" {
			return "", errkind.Usagef(FieldKafkaJars, "%s holds no kafka_2.13 jar (run `make kafka`)", d)
		}
	}
	return "", errkind.Usagef(FieldKafkaJars, "Kafka's jars not found (run `make kafka`, or set KPLAN_KAFKA_JARS)")
}

// newClusterID returns a random Kafka Uuid in its base64url form, from
// crypto/rand.
func newClusterID() (string, error) { return clusterIDFrom(rand.Reader) }

// clusterIDFrom draws Uuids from r until one does not start with '-', as
// Kafka's Uuid.randomUuid does: kafka-storage's argument parser reads
// "-t -abc..." as a missing value (about one id in 64 began with '-' and
// failed the lab's start).
func clusterIDFrom(r io.Reader) (string, error) {
	for {
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id, nil
		}
	}
}

func statePath(dir string) string { return filepath.Join(dir, "lab.json") }

// Load reads the lab state in dir.
func Load(dir string) (*State, error) {
	b, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, &NoLabError{Dir: dir}
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(dir), err)
	}
	return &s, nil
}

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(s.Dir) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(s.Dir))
}

// Brokers returns the broker nodes in id order.
func (s *State) Brokers() []Node {
	var out []Node
	for _, n := range s.Nodes {
		if n.Broker {
			out = append(out, n)
		}
	}
	return out
}

// Bootstrap returns the brokers' client addresses.
func (s *State) Bootstrap() []string {
	var out []string
	for _, n := range s.Brokers() {
		out = append(out, net.JoinHostPort(n.Addr, strconv.Itoa(n.Port)))
	}
	return out
}

// Alive reports whether the node's JVM runs (the pid exists and is still
// this node's java, not a reused pid).
func (n Node) Alive() bool {
	if n.PID <= 0 {
		return false
	}
	if syscall.Kill(n.PID, 0) != nil {
		return false
	}
	cmd, err := readCmdline(n.PID)
	if err != nil || zombie(n.PID) {
		return false // a zombie waiting for its parent is dead
	}
	return strings.Contains(string(cmd), n.Config)
}

// readCmdline reads a process's argv. While a process is inside execve
// (`ip netns exec` and the java launcher exec again right after start) the
// kernel shows an empty cmdline, so an empty answer is retried for up to a
// second before it counts; kernel threads, whose cmdline stays empty, are
// then reported as such.
func readCmdline(pid int) ([]byte, error) {
	path := fmt.Sprintf("/proc/%d/cmdline", pid)
	for range 100 {
		b, err := os.ReadFile(path)
		if err != nil || len(b) > 0 || zombie(pid) {
			return b, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, nil
}

// zombie reports whether pid has exited and waits for its parent.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may hold spaces.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
		f := strings.Fields(string(stat[i+1:]))
		return len(f) > 0 && f[0] == "Z"
	}
	return false
}

// AnyAlive reports whether any node of the lab runs.
func (s *State) AnyAlive() bool {
	for _, n := range s.Nodes {
		if n.Alive() {
			return true
		}
	}
	return false
}

// Node returns the broker with id.
func (s *State) Node(id int32) (*Node, error) {
	for i := range s.Nodes {
		if s.Nodes[i].ID == id && s.Nodes[i].Broker {
			return &s.Nodes[i], nil
		}
	}
	return nil, errkind.Usagef("", "no broker-%d in this %d-broker lab", id, len(s.Brokers()))
}

// ParseBroker parses "broker-3" (or "3").
func ParseBroker(s string) (int32, error) {
	t := strings.TrimPrefix(s, "broker-")
	id, err := strconv.ParseInt(t, 10, 32)
	if err != nil || id < 0 {
		return 0, errkind.Usagef("", "%q is not a broker (want broker-N)", s)
	}
	return int32(id), nil
}

// DefaultRacks is the racks of a lab that does not say (Config.Racks 0);
// MaxRacks the most it may have (rack-a to rack-z).
const (
	DefaultRacks = 3
	MaxRacks     = 26
)

// plan lays out the nodes of cfg.
func plan(cfg Config) []Node {
	var nodes []Node
	nr := cfg.Racks
	if nr <= 0 {
		nr = DefaultRacks
	}
	racks := make([]string, nr)
	for i := range racks {
		racks[i] = "rack-" + string(rune('a'+i))
	}
	combined := cfg.Brokers <= MaxCombined
	for i := 1; i <= cfg.Brokers; i++ {
		n := Node{ID: int32(i), Broker: true, Controller: combined, Rack: racks[(i-1)%len(racks)], Port: cfg.BasePort + (i-1)*10}
		if combined {
			n.ControllerPort = n.Port + 1
		}
		nodes = append(nodes, n)
	}
	if !combined {
		for i := 1; i <= 3; i++ {
			nodes = append(nodes, Node{ID: int32(controllerIDBase + i), Controller: true, ControllerPort: cfg.BasePort + (cfg.Brokers+i-1)*10 + 1})
		}
	}
	for i := range nodes {
		nodes[i].Addr = "127.0.0.1"
		switch {
		case cfg.BandwidthBps > 0:
			nodes[i].Addr = fmt.Sprintf("10.213.%d.%d", subnetFor(cfg.Dir), 10+i)
		case cfg.Loopback && nodes[i].Broker:
			nodes[i].Addr = LoopbackAddr(nodes[i].ID)
			if nodes[i].Controller {
				nodes[i].ControllerAddr = "127.0.0.1"
			}
		}
		nodes[i].Dir = filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", nodes[i].ID))
		nodes[i].Config = filepath.Join(nodes[i].Dir, "server.properties")
		nodes[i].Log = filepath.Join(nodes[i].Dir, "server.log")
	}
	return nodes
}

func properties(cfg Config, nodes []Node, n Node) string {
	var voters []string
	for _, v := range nodes {
		if v.Controller {
			voters = append(voters, fmt.Sprintf("%d@%s:%d", v.ID, v.controllerAddr(), v.ControllerPort))
		}
	}
	var roles, listeners []string
	if n.Broker {
		roles = append(roles, "broker")
		listeners = append(listeners, fmt.Sprintf("%s://%s:%d", listenerName(cfg.Security), n.Addr, n.Port))
	}
	if n.Controller {
		roles = append(roles, "controller")
		listeners = append(listeners, fmt.Sprintf("CONTROLLER://%s:%d", n.controllerAddr(), n.ControllerPort))
	}
	rf := min(3, cfg.Brokers)
	lines := []string{
		"# written by kplan lab",
		"process.roles=" + strings.Join(roles, ","),
		fmt.Sprintf("node.id=%d", n.ID),
		"controller.quorum.voters=" + strings.Join(voters, ","),
		"listeners=" + strings.Join(listeners, ","),
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=" + protocolMap(cfg.Security),
		"log.dirs=" + strings.Join(logDirs(cfg, n), ","),
		"num.partitions=1",
		fmt.Sprintf("offsets.topic.replication.factor=%d", rf),
		fmt.Sprintf("transaction.state.log.replication.factor=%d", rf),
		fmt.Sprintf("transaction.state.log.min.isr=%d", min(2, rf)),
		"group.initial.rebalance.delay.ms=0",
		"auto.create.topics.enable=false",
		"log.segment.bytes=16777216",
		"num.network.threads=2",
		"num.io.threads=2",
		"background.threads=2",
	}
	if n.Broker {
		lines = append(lines,
			"inter.broker.listener.name="+listenerName(cfg.Security),
			fmt.Sprintf("advertised.listeners=%s://%s:%d", listenerName(cfg.Security), n.Addr, n.Port),
			"broker.rack="+n.Rack)
	}
	if cfg.FastFailover {
		lines = append(lines, "broker.heartbeat.interval.ms=500", "broker.session.timeout.ms=3000")
	}
	return strings.Join(lines, "\n") + "\n"
}

// MaxLogDirs is the most log dirs per broker Config.LogDirs takes.
const MaxLogDirs = 8

// logDirs are node n's log dirs: Config.LogDirs of them on a broker.
func logDirs(cfg Config, n Node) []string {
	if !n.Broker || cfg.LogDirs <= 1 {
		return []string{filepath.Join(n.Dir, "data")}
	}
	out := make([]string, cfg.LogDirs)
	for i := range out {
		out[i] = filepath.Join(n.Dir, fmt.Sprintf("data-%d", i))
	}
	return out
}

// controllerAddr is the address of n's controller listener.
func (n Node) controllerAddr() string {
	if n.ControllerAddr != "" {
		return n.ControllerAddr
	}
	return n.Addr
}

const log4j2 = `# written by kplan lab: Kafka logs to stdout, which the lab sends to server.log
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
`

// Ready checks that brokers answer and belong to the cluster clusterID (the
// id the lab formatted its storage with; "" checks no id): a broker of
// another cluster answering on the lab's ports (another lab starting on the
// same ports) is not this lab's. Up and Restart call it until it returns
// nil or ctx ends; an error that says so through a method ForeignCluster()
// bool returning true ends the wait at once.
type Ready func(ctx context.Context, clusterID string, bootstrap []string, brokers []int32) error

// Up writes configs, formats storage and starts every node, then waits for
// ready. Bad requests and a machine that cannot run the lab are refused
// before anything is written. On a later failure, ctx's end (an interrupt,
// the timeout) included, Up stops every JVM it started (the formatting
// ones too), removes the network namespaces, bridge and cgroups it made,
// and returns an *UpError saying in which phase and what it removed. The
// lab.json it leaves then claims nothing running: `kplan lab down` there
// has nothing to do and the next Up reuses the directory. Should the
// cleanup itself fail, lab.json keeps what is left so that Down finds it.
func Up(ctx context.Context, cfg Config, ready Ready) (*State, error) {
	cfg, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	s, err := newState(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.writeFiles(cfg); err != nil {
		return nil, err
	}
	if err := s.launch(ctx, cfg, ready); err != nil {
		return nil, err
	}
	return s, nil
}

// UpError is an Up that failed once it had begun to change the machine:
// the failure, the phase it happened in, and what Up removed again.
type UpError struct {
	// Phase is the phase Up was in ("" before formatting: the network
	// namespaces).
	Phase Phase
	// Err is the failure (ctx's error when Up was interrupted).
	Err error
	// Cleaned is what Up stopped and removed after the failure.
	Cleaned Cleanup
	// CleanupErr is why something could not be removed (nil: nothing of
	// the lab is left but its files).
	CleanupErr error
	// Dir is the lab directory.
	Dir string
}

func (e *UpError) Error() string {
	if e.CleanupErr != nil {
		return fmt.Sprintf("%v; cleaning up the failed lab in %s: %v (kplan lab down --dir %s)", e.Err, e.Dir, e.CleanupErr, e.Dir)
	}
	return e.Err.Error()
}

// Unwrap returns the failure and the cleanup's failure, so that errors.Is,
// errors.As and errkind see both.
func (e *UpError) Unwrap() []error {
	if e.CleanupErr == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.CleanupErr}
}

// Cleanup is what stopping a lab stopped and removed.
type Cleanup struct {
	// Stopped are the nodes whose JVM was running and was stopped.
	Stopped []int32 `json:"stopped"`
	// Namespaces and Bridge are the network namespaces (each with its veth
	// pair) and the bridge removed.
	Namespaces []string `json:"namespaces,omitempty"`
	Bridge     string   `json:"bridge,omitempty"`
	// Cgroups are the cgroup directories removed.
	Cgroups []string `json:"cgroups,omitempty"`
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// String says in a few words what was stopped and removed.
func (c Cleanup) String() string {
	var parts []string
	if len(c.Stopped) > 0 {
		ids := make([]string, len(c.Stopped))
		for i, id := range c.Stopped {
			ids[i] = fmt.Sprintf("node-%d", id)
		}
		parts = append(parts, fmt.Sprintf("stopped %s (%s)", plural(len(c.Stopped), "JVM"), strings.Join(ids, ", ")))
	}
	if len(c.Namespaces) > 0 {
		parts = append(parts, fmt.Sprintf("removed %s (%s) with their veth pairs and bridge %s", plural(len(c.Namespaces), "network namespace"), strings.Join(c.Namespaces, ", "), c.Bridge))
	}
	if len(c.Cgroups) > 0 {
		parts = append(parts, "removed "+plural(len(c.Cgroups), "cgroup"))
	}
	if len(parts) == 0 {
		return "no broker JVM had started"
	}
	return strings.Join(parts, ", ")
}

// prepare validates cfg, fills its defaults and checks that this machine can
// run it: java, the jars, the privileges the caps need, a directory free of
// running labs and of other files, free ports.
func prepare(cfg Config) (Config, error) {
	err := cfg.Validate()
	if err != nil {
		return cfg, err
	}
	if cfg.HeapMB == 0 {
		cfg.HeapMB = DefaultHeapMB
	}
	if cfg.Java == "" {
		cfg.Java = "java"
	}
	if cfg.Security, err = normalizeSecurity(cfg.Security); err != nil {
		return cfg, err
	}
	jars, err := FindJars(cfg.JarsDir)
	if err != nil {
		return cfg, err
	}
	cfg.JarsDir = jars
	if _, err := exec.LookPath(cfg.Java); err != nil {
		return cfg, errkind.Usagef("", "%s not found: the lab needs Java 17 or later on PATH", cfg.Java)
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return cfg, err
	}
	if cfg.BandwidthBps > 0 {
		if err := CheckNetPrivileges(); err != nil {
			return cfg, err
		}
	}
	if cfg.CPUQuota > 0 {
		if err := CheckCPUPrivileges(); err != nil {
			return cfg, err
		}
	}
	if err := checkDir(cfg.Dir); err != nil {
		return cfg, err
	}
	if err := checkPorts(cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkPorts checks that every port the lab's nodes will listen on (broker
// and controller) is free, naming the first that is not and what holds it.
// A lab with bandwidth caps runs in fresh network namespaces, where every
// port is free.
func checkPorts(cfg Config) error {
	if cfg.BandwidthBps > 0 {
		return nil
	}
	for _, n := range plan(cfg) {
		if n.Port != 0 {
			if err := portFree(n.Addr, n.Port, cfg.BasePort); err != nil {
				return err
			}
		}
		if n.ControllerPort != 0 {
			if err := portFree(n.controllerAddr(), n.ControllerPort, cfg.BasePort); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDir refuses a directory where a lab runs, and one that holds files
// but no lab: Up clears the directory, and never one kplan did not make.
func checkDir(dir string) error {
	if old, err := Load(dir); err == nil && (old.AnyAlive() || old.Net != nil) {
		return errkind.Usagef("", "a lab is already up in %s (kplan lab down --dir %s)", dir, dir)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		if _, err := os.Stat(statePath(dir)); err != nil {
			return errkind.Usagef(FieldDir, "%s is not empty and holds no lab: refusing to use it", dir)
		}
	}
	return nil
}

// portFree checks that port on addr can be bound, and otherwise names the
// port and, when this machine can tell (Linux's /proc), what holds it.
func portFree(addr string, port, base int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		held := ""
		if h := PortHolder(port); h != "" {
			held = ", held by " + h
		}
		return errkind.Usagef(FieldBasePort, "port %d on %s is in use%s (the lab's ports start at %d; pick another)", port, addr, held, base)
	}
	return l.Close()
}

// newState lays out a new lab of cfg with a fresh cluster id.
func newState(cfg Config) (*State, error) {
	id, err := newClusterID()
	if err != nil {
		return nil, err
	}
	s := &State{Version: 1, ClusterID: id, Dir: cfg.Dir, JarsDir: cfg.JarsDir, Java: cfg.Java, HeapMB: cfg.HeapMB,
		Started: time.Now().UTC(), Nodes: plan(cfg), CPUQuota: cfg.CPUQuota}
	if sasl(cfg.Security) {
		if s.secrets, err = newSecrets(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// writeFiles clears the lab directory (a previous lab's files) and writes
// the logging config and every node's server.properties.
func (s *State) writeFiles(cfg Config) error {
	if err := os.RemoveAll(s.Dir); err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "log4j2.properties"), []byte(log4j2), 0o644); err != nil {
		return err
	}
	if err := s.writeSecurity(cfg.Security, s.secrets, s.Started); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if secured(cfg.Security) {
		perm = 0o600 // the broker's own SCRAM password
	}
	for _, n := range s.Nodes {
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return err
		}
		lines := properties(cfg, s.Nodes, n) + strings.Join(securityLines(cfg.Security, s.Dir, n, s.secrets), "\n")
		if err := os.WriteFile(n.Config, []byte(strings.TrimRight(lines, "\n")+"\n"), perm); err != nil {
			return err
		}
	}
	return nil
}

// launch makes the namespaces (with bandwidth limits), formats storage,
// starts every node and waits until the brokers answer; on failure it
// undoes what it made (see Up). lab.json is saved before anything runs, so
// that `kplan lab down` finds whatever a crash of this process leaves.
func (s *State) launch(ctx context.Context, cfg Config, ready Ready) error {
	if cfg.BandwidthBps > 0 {
		if err := s.setupNet(cfg.BandwidthBps); err != nil {
			return err // setupNet removed what it made
		}
	}
	if err := s.save(); err != nil {
		return s.abort("", err)
	}
	cfg.progress(PhaseFormat)
	if err := s.format(ctx); err != nil {
		return s.abort(PhaseFormat, err)
	}
	cfg.progress(PhaseStart)
	// Again right before the JVMs start: formatting took seconds, in which
	// another lab may have taken the ports prepare found free.
	if err := checkPorts(cfg); err != nil {
		return s.abort(PhaseStart, err)
	}
	for i := range s.Nodes {
		if err := ctx.Err(); err != nil {
			return s.abort(PhaseStart, err)
		}
		if err := s.start(&s.Nodes[i]); err != nil {
			return s.abort(PhaseStart, err)
		}
	}
	if err := s.save(); err != nil {
		return s.abort(PhaseStart, err)
	}
	cfg.progress(PhaseReady)
	if err := s.waitReady(ctx, ready, nil); err != nil {
		return s.abort(PhaseReady, err)
	}
	return nil
}

// abort stops what a failed Up started and returns an *UpError for cause,
// which says what was removed and, should the cleanup fail, why, so that
// a leftover process or namespace is never silent.
func (s *State) abort(phase Phase, cause error) error {
	cleaned, err := s.down(5 * time.Second)
	return &UpError{Phase: phase, Err: cause, Cleaned: cleaned, CleanupErr: err, Dir: s.Dir}
}

func (s *State) jvmArgs(extra ...string) []string {
	args := []string{
		fmt.Sprintf("-Xms%dm", s.HeapMB), fmt.Sprintf("-Xmx%dm", s.HeapMB),
		"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(s.Dir, "log4j2.properties"),
		"-cp", filepath.Join(s.JarsDir, "*"),
	}
	return append(args, extra...)
}

// format runs Kafka's StorageTool for every node, in parallel.
func (s *State) format(ctx context.Context) error {
	errs := make(chan error, len(s.Nodes))
	for _, n := range s.Nodes {
		go func() {
			args := append([]string{"kafka.tools.StorageTool", "format", "-t", s.ClusterID, "-c", n.Config}, scramArgs(s.mode(), s.secrets)...)
			cmd := exec.CommandContext(ctx, s.Java, s.jvmArgs(args...)...)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				// Killed by the interrupt or the timeout: that is the cause.
				errs <- fmt.Errorf("formatting node-%d storage: %w", n.ID, context.Cause(ctx))
				return
			}
			if err != nil {
				errs <- fmt.Errorf("formatting node-%d storage: %w: %s", n.ID, err, lastLines(string(out), 3))
				return
			}
			errs <- nil
		}()
	}
	var first error
	for range s.Nodes {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// start launches a node's JVM in its own session, so it outlives this
// process (later `kplan lab` calls manage it) and a terminal's Ctrl-C does
// not reach it; Up and the test helper stop it on failure.
func (s *State) start(n *Node) error {
	logf, err := os.OpenFile(n.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() //nolint:errcheck // the child holds its own descriptor
	args := append([]string{s.Java}, s.jvmArgs("-Dkafka.logs.dir="+n.Dir, "kafka.Kafka", n.Config)...)
	if n.Netns != "" {
		// ip netns exec execs java in place, so the pid is the JVM's.
		args = append([]string{"ip", "netns", "exec", n.Netns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	CloseInheritedOnExec()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting node-%d: %w", n.ID, err)
	}
	n.PID = cmd.Process.Pid
	if s.CPUQuota > 0 && n.Broker {
		if err := s.capCPU(n.ID, n.PID); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return err
		}
	}
	// Reap the child when it exits so a killed broker does not linger as a
	// zombie of a long-lived process (the test binary).
	go cmd.Wait() //nolint:errcheck // exit status is read from the log
	return nil
}

// CloseInheritedOnExec marks every descriptor this process inherited
// (beyond stdin, stdout and stderr) close-on-exec, so that the JVMs, which
// outlive it, do not hold them: a `flock LOCK go test` hands its lock down
// as fd 3, and JVMs left by a crashed test held that lock for good. Go
// opens its own descriptors close-on-exec already.
func CloseInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

func (s *State) waitReady(ctx context.Context, ready Ready, want []int32) error {
	if want == nil {
		for _, b := range s.Brokers() {
			want = append(want, b.ID)
		}
	}
	for {
		for _, n := range s.Nodes {
			if !n.Alive() {
				return fmt.Errorf("node-%d died while starting; the end of %s:\n%s", n.ID, n.Log, tail(n.Log, 15))
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := ready(rctx, s.ClusterID, s.Bootstrap(), want)
		cancel()
		if err == nil {
			return nil
		}
		var foreign interface{ ForeignCluster() bool }
		if errors.As(err, &foreign) && foreign.ForeignCluster() {
			return fmt.Errorf("brokers not ready: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("brokers not ready: %w (last check: %w)", ctx.Err(), err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL to broker id's JVM.
func (s *State) Kill(id int32) error {
	n, err := s.Node(id)
	if err != nil {
		return err
	}
	if !n.Alive() {
		return errkind.Usagef("", "broker-%d is already dead", id)
	}
	if err := syscall.Kill(n.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing broker-%d (pid %d): %w", id, n.PID, err)
	}
	for i := 0; i < 100 && n.Alive(); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Restart starts broker id again and waits until it answers.
func (s *State) Restart(ctx context.Context, id int32, ready Ready) error {
	n, err := s.Node(id)
	if err != nil {
		return err
	}
	if n.Alive() {
		return errkind.Usagef("", "broker-%d is running (kill it first)", id)
	}
	if err := s.start(n); err != nil {
		return err
	}
	if err := s.save(); err != nil {
		return err
	}
	return s.waitReady(ctx, ready, nil)
}

// Down stops every node: SIGTERM, then SIGKILL after grace, and removes
// the lab's cgroups and network namespaces. The lab directory stays for
// post-mortems; the next Up clears it.
func (s *State) Down(grace time.Duration) error {
	_, err := s.down(grace)
	return err
}

// down is Down, and says what it stopped and removed.
func (s *State) down(grace time.Duration) (Cleanup, error) {
	var c Cleanup
	var alive []Node
	for _, n := range s.Nodes {
		if n.Alive() {
			_ = syscall.Kill(n.PID, syscall.SIGTERM)
			alive = append(alive, n)
			c.Stopped = append(c.Stopped, n.ID)
		}
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		left := 0
		for _, n := range alive {
			if n.Alive() {
				left++
			}
		}
		if left == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	errs := []error{s.ClearNetConditions(context.Background())}
	for _, n := range alive {
		if n.Alive() {
			if err := syscall.Kill(n.PID, syscall.SIGKILL); err != nil {
				errs = append(errs, fmt.Errorf("killing node-%d: %w", n.ID, err))
			}
		}
	}
	for i := 0; i < 100; i++ {
		if !s.AnyAlive() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s.AnyAlive() {
		errs = append(errs, errors.New("some lab JVMs are still running"))
		return c, errors.Join(errs...)
	}
	cgroups, err := s.removeCgroups()
	c.Cgroups = cgroups
	if err != nil {
		return c, errors.Join(append(errs, err)...)
	}
	if s.Net != nil {
		net := *s.Net
		if err := s.teardownNet(); err != nil {
			return c, errors.Join(append(errs, err)...)
		}
		c.Namespaces, c.Bridge = net.Namespaces, net.Bridge
		s.Net = nil
		if _, err := os.Stat(statePath(s.Dir)); err == nil {
			if err := s.save(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return c, errors.Join(errs...)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return lastLines(string(b), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ProcessesOf returns the pids of the running processes (zombies aside)
// whose argv mentions dir: a lab's JVMs, the formatting ones included,
// name their config files under it. Tests use it to prove that nothing of
// a lab is left.
func ProcessesOf(dir string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || zombie(pid) {
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if arg == dir || strings.HasPrefix(arg, dir+"/") || strings.Contains(arg, "="+dir+"/") {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}

// Leftovers lists what of the lab in dir is still on this machine: the
// processes whose argv mention dir (ProcessesOf), and the network
// namespaces, links (veth ends, bridge) and cgroups named after dir, found
// by their names rather than from lab.json. After a clean Down, or an Up
// that failed or was interrupted and cleaned up, it is empty.
func Leftovers(dir string) ([]string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	pids, err := ProcessesOf(dir)
	if err != nil {
		return nil, err
	}
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("process %d (%s)", pid, lastLines(strings.ReplaceAll(string(cmd), "\x00", " "), 1)))
	}
	x := subnetFor(dir)
	for _, pattern := range []string{
		fmt.Sprintf("/run/netns/kplan-%d-*", x),
		fmt.Sprintf("/sys/class/net/kpl%dbr", x),
		fmt.Sprintf("/sys/class/net/kpl%dh*", x),
		fmt.Sprintf("/sys/class/net/kpl%dn*", x),
		filepath.Join(cgroupRoots.v1, fmt.Sprintf("kplan-lab-%d", x)),
		filepath.Join(cgroupRoots.v2, fmt.Sprintf("kplan-lab-%d", x)),
	} {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	return out, nil
}
