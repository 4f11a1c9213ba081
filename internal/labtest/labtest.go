// Package labtest keeps a pool of real Kafka labs per test binary, keyed by
// their options, and shares each across that binary's integration tests:
// a lab of a given shape starts on first use and serves every later test
// asking for the same shape, and one binary can use several shapes. A
// missing Java or missing jars fail the test with one clear line; nothing
// is skipped.
//
// Use it from a test binary's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }
//
// and call labtest.Shared(t) in each test that needs brokers, or
// labtest.Start(t, labtest.Options{...}) for a lab of another shape. Labs
// run until Main stops them all at the end of the binary.
package labtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// Lab is the shared cluster.
type Lab struct {
	State     *localkafka.State
	Bootstrap string
	// ClientConfig is a secured lab's client.properties (SCRAM-SHA-512
	// user, or the client certificate under "ssl"); "" for plaintext.
	ClientConfig string
}

// Options shape the binary's lab.
type Options struct {
	// Brokers is the number of brokers; 0 means Brokers.
	Brokers int
	// LoopbackPerBroker gives broker N the address 127.0.0.(1+N)
	// (localkafka.Config.Loopback).
	LoopbackPerBroker bool
	// Racks is localkafka.Config.Racks: the brokers spread over this many
	// racks round robin (0: localkafka.DefaultRacks).
	Racks int
	// Security is localkafka.Config.Security: "" (plaintext), "sasl_ssl",
	// "ssl" or "sasl_plaintext".
	Security string
	// LogDirs is localkafka.Config.LogDirs: log dirs per broker (JBOD;
	// 0: one).
	LogDirs int
}

// entry is one lab of the pool, started once.
type entry struct {
	once sync.Once
	lab  *Lab
	err  error
	dir  string
}

var (
	mu   sync.Mutex
	pool = map[Options]*entry{}
	// order is the pool's keys in the order their labs were asked for.
	order []Options
)

// Brokers is the size of the default lab.
const Brokers = 3

// Shared returns a Brokers-broker plaintext lab, starting one on first use.
// A plaintext Brokers-broker lab that Start began serves too, whatever its
// addresses.
func Shared(t testing.TB) *Lab {
	t.Helper()
	mu.Lock()
	for _, o := range order {
		if o.Brokers == Brokers && o.Security == "" && o.LogDirs <= 1 {
			mu.Unlock()
			return Start(t, o)
		}
	}
	mu.Unlock()
	return Start(t, Options{Brokers: Brokers})
}

// Start returns the binary's lab of options o, starting it on first use.
// Tests asking for the same options share one lab; other options get a lab
// of their own, on ports of their own.
func Start(t testing.TB, o Options) *Lab {
	t.Helper()
	if o.Brokers == 0 {
		o.Brokers = Brokers
	}
	mu.Lock()
	e, ok := pool[o]
	if !ok {
		e = &entry{}
		pool[o] = e
		order = append(order, o)
	}
	mu.Unlock()
	// Labs start one at a time: freeBase's ports are only known to be
	// free once the previous lab holds its own.
	startMu.Lock()
	e.once.Do(func() { e.lab, e.dir, e.err = startLab(o) })
	startMu.Unlock()
	if e.err != nil {
		t.Fatalf("labtest: cannot start a real Kafka lab %+v: %v", o, e.err)
	}
	return e.lab
}

var startMu sync.Mutex

// startLab starts a lab; tests of the pool replace it.
var startLab = start

func start(o Options) (*Lab, string, error) {
	jars, ferr := localkafka.FindJars("")
	if ferr != nil {
		return nil, "", ferr
	}
	// d holds the owner file and the lab's own directory (localkafka.Up
	// wants that one empty).
	d, derr := os.MkdirTemp("", dirPattern)
	if derr != nil {
		return nil, "", derr
	}
	if oerr := writeOwner(d); oerr != nil {
		return nil, d, oerr
	}
	labDir := filepath.Join(d, labSubdir)
	base, perr := freeBase(o.Brokers)
	if perr != nil {
		return nil, d, perr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := localkafka.Config{Brokers: o.Brokers, JarsDir: jars, Dir: labDir, BasePort: base, FastFailover: true, Loopback: o.LoopbackPerBroker, Racks: o.Racks, Security: o.Security, LogDirs: o.LogDirs}
	clientConfig := ""
	if localkafka.Secured(o.Security) {
		clientConfig = localkafka.ClientConfigPath(labDir)
	}
	s, uerr := localkafka.Up(ctx, cfg, kafka.BrokersReady(clientConfig))
	if uerr != nil {
		return nil, d, uerr
	}
	l := &Lab{State: s, ClientConfig: s.ClientConfig()}
	for i, b := range s.Bootstrap() {
		if i > 0 {
			l.Bootstrap += ","
		}
		l.Bootstrap += b
	}
	return l, d, nil
}

// BasePortEnv names the environment variable that sets where freeBase
// starts looking (default 21092 plus 200 per pid modulo 50): `make
// integration` gives the packages it runs beside the others a range of
// their own, away from the fixed and pid-derived ports of the labs that
// tests start without the pool.
const BasePortEnv = "KPLAN_LABTEST_BASE_PORT"

// portLocks holds the lock of every base this process took, for its
// lifetime (the descriptors are close-on-exec: the JVMs do not hold them).
var portLocks []*os.File

// freeBase finds a base port whose lab ports are all free and that no
// other test binary is taking: each base of the 200-port grid has a lock
// file in os.TempDir(), held while the binary runs, so that two binaries
// starting labs at the same moment never pick the same ports.
func freeBase(n int) (int, error) {
	start := 21092 + (os.Getpid()%50)*200
	if v := os.Getenv(BasePortEnv); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p >= 60000 {
			return 0, fmt.Errorf("$%s=%q: want a port below 60000", BasePortEnv, v)
		}
		start = p
	}
	for base := start; base < 60000; base += 200 {
		lock, lerr := lockBase(base)
		if lerr != nil {
			return 0, lerr
		}
		if lock == nil {
			continue // another binary's
		}
		ok := true
		for i := 0; i < (n+3)*10 && ok; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
			if err != nil {
				ok = false
				continue
			}
			_ = l.Close()
		}
		if ok {
			portLocks = append(portLocks, lock)
			return base, nil
		}
		_ = lock.Close()
	}
	return 0, fmt.Errorf("no free port range for a %d-broker lab", n)
}

// FreeBase returns a base port for a lab of n brokers that a test starts
// without the pool (localkafka.Config.BasePort): free now, on the pool's
// grid (which starts below the ephemeral ports, where a client
// connection's local port can take a broker's: a fixed base up there
// failed TestBrokerCPU once), and locked against every other binary's
// labtest labs while this binary runs.
func FreeBase(n int) (int, error) { return freeBase(n) }

// lockBase takes base's lock file without waiting: nil when another
// process holds it.
func lockBase(base int) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("kplan-labports-%d.lock", base)), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("locking port range %d: %w", base, err)
	}
	return f, nil
}

// Main runs the tests and then stops every lab of the pool, even when
// tests failed, and fails the run if any lab JVM is left.
//
// A binary killed before its Main returns (a timeout's SIGQUIT, a
// developer's Ctrl-C on go test, SIGKILL) leaves its labs running: each
// lab directory names the binary that owns it, and Main first stops the
// labs whose owner is gone (reap), so the next integration run reaps them
// before it starts labs of its own.
//
// With k8stest in the same binary, stop the control plane too:
//
//	func TestMain(m *testing.M) { os.Exit(k8stest.Stop(labtest.Main(m))) }
//
// When the binary is re-executed as a lab's delay process (`kplan lab net`
// re-executes os.Executable(), here the test binary), it serves as netd
// instead and never returns (localkafka.MaybeNetd).
func Main(m *testing.M) int {
	localkafka.MaybeNetd()
	reaped, rerr := reap(os.TempDir())
	for _, r := range reaped {
		fmt.Fprintf(os.Stderr, "labtest: stopped the lab %s of test binary %d, which is gone (pids %v)\n", r.Dir, r.Owner, r.Stopped)
	}
	if rerr != nil {
		fmt.Fprintf(os.Stderr, "labtest: stopping the labs of test binaries that are gone: %v\n", rerr)
		return 1
	}
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	for _, o := range order {
		e := pool[o]
		if e.lab == nil {
			continue
		}
		if derr := e.lab.State.Down(15 * time.Second); derr != nil {
			fmt.Fprintf(os.Stderr, "labtest: stopping the lab %+v: %v\n", o, derr)
			code = 1
		}
		if e.lab.State.AnyAlive() {
			fmt.Fprintf(os.Stderr, "labtest: JVMs of the lab %+v are still running after down\n", o)
			code = 1
		}
	}
	if code == 0 {
		for _, o := range order {
			if e := pool[o]; e.dir != "" {
				_ = os.RemoveAll(e.dir)
			}
		}
	}
	return code
}
