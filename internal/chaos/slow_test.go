package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSlow(t *testing.T) {
	tests := []struct {
		in   string
		want Fault
		back string // SlowString of the result
	}{
		{"broker-2:bandwidth=2MB/s", Fault{Kind: FaultBandwidth, Target: Target{Kind: TargetBroker, Broker: 2}, Rate: 2_000_000}, "broker-2:bandwidth=2MB/s"},
		{"broker-4:bandwidth=512KiB/s", Fault{Kind: FaultBandwidth, Target: Target{Kind: TargetBroker, Broker: 4}, Rate: 512 << 10}, "broker-4:bandwidth=512KiB/s"},
		{"broker-2:delay=50ms", Fault{Kind: FaultDelay, Target: Target{Kind: TargetBroker, Broker: 2}, Delay: 50 * time.Millisecond}, "broker-2:delay=50ms"},
		{"busiest:delay=1.5s", Fault{Kind: FaultDelay, Target: Target{Kind: TargetBusiest}, Delay: 1500 * time.Millisecond}, "busiest:delay=1.5s"},
		{"leader-of:orders/3:bandwidth=1MB/s", Fault{Kind: FaultBandwidth, Target: Target{Kind: TargetLeaderOf, Topic: "orders", Partition: 3}, Rate: 1_000_000}, "leader-of:orders/3:bandwidth=1MB/s"},
		{"broker-2:cpu=20%", Fault{Kind: FaultCPU, Target: Target{Kind: TargetBroker, Broker: 2}, CPU: 0.2}, "broker-2:cpu=20%"},
		{"busiest:cpu=150%", Fault{Kind: FaultCPU, Target: Target{Kind: TargetBusiest}, CPU: 1.5}, "busiest:cpu=150%"},
		{"broker-1:cpu=2.5%", Fault{Kind: FaultCPU, Target: Target{Kind: TargetBroker, Broker: 1}, CPU: 0.025}, "broker-1:cpu=2.5%"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSlow(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.back, SlowString(got))
			again, err := ParseSlow(SlowString(got))
			require.NoError(t, err)
			assert.Equal(t, got, again, "SlowString parses back")
			f, err := ParseFault(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, f, "a --slow is the fault it spells")
		})
	}
}

func TestParseSlowErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "want broker-N:bandwidth=RATE"},
		{"broker-2", "want broker-N:bandwidth=RATE"},
		{":bandwidth=2MB/s", "want broker-N:bandwidth=RATE"},
		{"broker-2:bandwidth", "want bandwidth=RATE, delay=DURATION or cpu=PERCENT% after the broker"},
		{"broker-2:bandwidth=", "want bandwidth=RATE, delay=DURATION or cpu=PERCENT% after the broker"},
		{"broker-2:cpu=0.2", `the CPU cap "0.2" is not a percentage of one CPU`},
		{"broker-2:cpu=0.5%", "from 1% to 6400%"},
		{"broker-2:cpu=7000%", "from 1% to 6400%"},
		{"broker-2:cpu=NaN%", "from 1% to 6400%"},
		{"broker-2:disk=1MB/s", `unknown slowness "disk"`},
		{"broker-2:bandwidth=2MB", "has no /s"},
		{"broker-2:bandwidth=1kB/s", "below 10kB/s"},
		{"broker-2:delay=soon", `the delay "soon" is not a duration`},
		{"broker-2:delay=0s", "not above 0"},
		{"broker-2:delay=2m", "at most 1m0s"},
		{"broker-x:delay=5ms", "want broker-N"},
		{"none:delay=5ms", "not none"},
		{"each:bandwidth=2MB/s", "not each"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseSlow(tc.in)
			require.Error(t, err)
			checkFlagError(t, err, FieldSlow)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestValidateSlow: a slow-broker experiment is a bandwidth cap or a delay
// without a kill.
func TestValidateSlow(t *testing.T) {
	slow := func(f *Fault, target Target) Config {
		c := Defaults()
		c.Fault, c.Slow, c.Target = f, true, target
		return c
	}
	bw := &Fault{Kind: FaultBandwidth, Target: Target{Kind: TargetBroker, Broker: 2}, Rate: 2_000_000}
	none := Target{Kind: TargetNone}
	ok := slow(bw, none)
	require.NoError(t, ok.Validate())
	for name, c := range map[string]Config{
		"no fault": slow(nil, none),
		"a loss":   slow(&Fault{Kind: FaultLoss, Target: bw.Target, Loss: 0.1}, none),
		"a kill":   slow(bw, Target{Kind: TargetBroker, Broker: 3}),
	} {
		t.Run(name, func(t *testing.T) {
			checkFlagError(t, c.Validate(), FieldSlow)
		})
	}
}

// FuzzParseSlow: a --slow parses to a one-line usage error naming the field
// "slow", or to a bandwidth cap, a delay or a CPU cap that SlowString spells back to
// the same fault.
func FuzzParseSlow(f *testing.F) {
	for _, s := range []string{"broker-2:bandwidth=2MB/s", "broker-2:delay=50ms", "broker-2:cpu=20%", "busiest:delay=1s",
		"leader-of:t/0:bandwidth=1MiB/s", "broker-2:bandwidth=10000B/s", "none:delay=1ms", "broker-2:delay=50ms:5ms", ":="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSlow(s)
		if err != nil {
			checkFlagError(t, err, FieldSlow)
			return
		}
		if got.Kind != FaultBandwidth && got.Kind != FaultDelay && got.Kind != FaultCPU {
			t.Fatalf("%q: kind %q", s, got.Kind)
		}
		back, err := ParseSlow(SlowString(got))
		if err != nil || back != got {
			t.Fatalf("%q -> %q -> %+v (%v), want %+v", s, SlowString(got), back, err, got)
		}
	})
}
