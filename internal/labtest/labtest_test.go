package labtest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePool replaces the lab starter with one that starts nothing and
// counts its calls per options, on an empty pool.
func fakePool(t *testing.T) map[Options]*atomic.Int32 {
	t.Helper()
	calls := map[Options]*atomic.Int32{}
	var cmu sync.Mutex
	savedStart, savedPool, savedOrder := startLab, pool, order
	t.Cleanup(func() { startLab, pool, order = savedStart, savedPool, savedOrder })
	pool, order = map[Options]*entry{}, nil
	startLab = func(o Options) (*Lab, string, error) {
		cmu.Lock()
		if calls[o] == nil {
			calls[o] = &atomic.Int32{}
		}
		calls[o].Add(1)
		cmu.Unlock()
		return &Lab{Bootstrap: fmt.Sprintf("%+v", o)}, "", nil
	}
	return calls
}

func TestPoolKeyedByOptions(t *testing.T) {
	calls := fakePool(t)
	four := Options{Brokers: 4}
	ssl := Options{Security: "ssl"}
	var wg sync.WaitGroup
	labs := make([]*Lab, 20)
	for i := range labs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 2 {
			case 0:
				labs[i] = Start(t, four)
			default:
				labs[i] = Start(t, ssl)
			}
		}()
	}
	wg.Wait()
	for i, l := range labs {
		assert.Same(t, labs[i%2], l, "the same options share one lab")
	}
	assert.NotSame(t, labs[0], labs[1], "other options get a lab of their own")
	assert.Equal(t, int32(1), calls[four].Load(), "started once")
	assert.Equal(t, int32(1), calls[Options{Brokers: Brokers, Security: "ssl"}].Load(), "Brokers 0 means Brokers")

	// Shared: no plaintext 3-broker lab yet (the ssl one does not
	// serve), so it starts one; then it serves every Shared call.
	shared := Shared(t)
	assert.NotSame(t, labs[1], shared)
	assert.Same(t, shared, Shared(t))
	assert.Same(t, shared, Start(t, Options{Brokers: Brokers}))
	assert.Equal(t, int32(1), calls[Options{Brokers: Brokers}].Load())
	assert.ElementsMatch(t, []Options{four, {Brokers: Brokers, Security: "ssl"}, {Brokers: Brokers}}, order)
}

func TestSharedUsesAPlaintextLabOfAnyAddresses(t *testing.T) {
	calls := fakePool(t)
	loop := Start(t, Options{LoopbackPerBroker: true})
	assert.Same(t, loop, Shared(t), "a plaintext 3-broker lab serves Shared, whatever its addresses")
	assert.Nil(t, calls[Options{Brokers: Brokers}])
}

func TestStartFailureFailsEveryTestAsking(t *testing.T) {
	fakePool(t)
	startLab = func(Options) (*Lab, string, error) { return nil, "", fmt.Errorf("no java") }
	for range 2 {
		ft := &fatalT{TB: t}
		func() {
			defer func() { _ = recover() }()
			Start(ft, Options{Brokers: 5})
		}()
		require.Contains(t, ft.msg, "no java")
	}
}

// fatalT records Fatalf and stops the calling function (by panic, which
// the caller recovers) instead of ending the test.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}

func (f *fatalT) Fatalf(format string, a ...any) {
	f.msg = fmt.Sprintf(format, a...)
	panic(f.msg)
}

func TestFreeBaseSkipsARangeAnotherBinaryHolds(t *testing.T) {
	t.Setenv(BasePortEnv, "45092")
	saved := portLocks
	t.Cleanup(func() {
		for _, f := range portLocks[len(saved):] {
			_ = f.Close()
		}
		portLocks = saved
	})
	// Another binary (here a lock taken through another descriptor,
	// which flock treats alike) holds 45092's range.
	other, err := lockBase(45092)
	require.NoError(t, err)
	require.NotNil(t, other)
	t.Cleanup(func() { _ = other.Close() })

	base, err := freeBase(3)
	require.NoError(t, err)
	assert.Greater(t, base, 45092, "the held range is skipped")
	assert.Equal(t, 0, (base-45092)%200, "bases stay on the 200-port grid")
	again, err := lockBase(base)
	require.NoError(t, err)
	assert.Nil(t, again, "the chosen range stays locked while the binary runs")
}

func TestFreeBaseRefusesABadBasePort(t *testing.T) {
	for _, v := range []string{"x", "0", "70000"} {
		t.Setenv(BasePortEnv, v)
		_, err := freeBase(3)
		assert.ErrorContains(t, err, BasePortEnv, v)
	}
}
