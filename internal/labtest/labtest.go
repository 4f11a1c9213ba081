// Package labtest starts one real Kafka lab per test binary and shares it
// across that binary's integration tests. A missing Java or missing jars
// fail the test with one clear line; nothing is skipped.
//
// Use it from a test binary's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }
//
// and call labtest.Shared(t) in each test that needs brokers, or
// labtest.Start(t, labtest.Options{...}) for a lab of another shape (one lab
// per binary all the same: every call must ask for the same options).
package labtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
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
}

var (
	mu      sync.Mutex
	started bool
	opts    Options
	shared  *Lab
	err     error
	dir     string
)

// Brokers is the size of the shared lab.
const Brokers = 3

// Shared returns the binary's lab, starting a Brokers-broker one on first
// use. A lab that Start began with Brokers brokers serves too, whatever its
// addresses.
func Shared(t testing.TB) *Lab {
	t.Helper()
	mu.Lock()
	if started && opts.Brokers == Brokers {
		mu.Unlock()
		return get(t)
	}
	mu.Unlock()
	return Start(t, Options{Brokers: Brokers})
}

// Start returns the binary's lab, starting it with o on first use; a later
// call asking for other options fails the test (there is one lab per test
// binary).
func Start(t testing.TB, o Options) *Lab {
	t.Helper()
	if o.Brokers == 0 {
		o.Brokers = Brokers
	}
	mu.Lock()
	if !started {
		started, opts = true, o
		shared, err = start(o)
	}
	mu.Unlock()
	if opts != o {
		t.Fatalf("labtest: this test binary's lab was started with %+v; cannot also have %+v (one lab per binary)", opts, o)
	}
	return get(t)
}

func get(t testing.TB) *Lab {
	t.Helper()
	if err != nil {
		t.Fatalf("labtest: cannot start a real Kafka lab: %v", err)
	}
	return shared
}

func start(o Options) (*Lab, error) {
	jars, ferr := localkafka.FindJars("")
	if ferr != nil {
		return nil, ferr
	}
	d, derr := os.MkdirTemp("", "kplan-labtest-")
	if derr != nil {
		return nil, derr
	}
	dir = d
	base, perr := freeBase(o.Brokers)
	if perr != nil {
		return nil, perr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := localkafka.Config{Brokers: o.Brokers, JarsDir: jars, Dir: d, BasePort: base, FastFailover: true, Loopback: o.LoopbackPerBroker, Racks: o.Racks, Security: o.Security}
	clientConfig := ""
	if localkafka.Secured(o.Security) {
		clientConfig = localkafka.ClientConfigPath(d)
	}
	s, uerr := localkafka.Up(ctx, cfg, kafka.BrokersReady(clientConfig))
	if uerr != nil {
		return nil, uerr
	}
	l := &Lab{State: s, ClientConfig: s.ClientConfig()}
	for i, b := range s.Bootstrap() {
		if i > 0 {
			l.Bootstrap += ","
		}
		l.Bootstrap += b
	}
	return l, nil
}

// freeBase finds a base port whose lab ports are all free.
func freeBase(n int) (int, error) {
	for base := 21092 + (os.Getpid()%50)*200; base < 60000; base += 200 {
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
			return base, nil
		}
	}
	return 0, fmt.Errorf("no free port range for a %d-broker lab", n)
}

// Main runs the tests and then stops the lab, even when tests failed, and
// fails the run if any lab JVM is left.
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
	code := m.Run()
	if shared != nil {
		if derr := shared.State.Down(15 * time.Second); derr != nil {
			fmt.Fprintf(os.Stderr, "labtest: stopping the lab: %v\n", derr)
			code = 1
		}
		if shared.State.AnyAlive() {
			fmt.Fprintln(os.Stderr, "labtest: lab JVMs are still running after down")
			code = 1
		}
		if code == 0 {
			_ = os.RemoveAll(dir)
		}
	}
	return code
}
