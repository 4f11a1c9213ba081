package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFault(t *testing.T) {
	tests := []struct {
		in   string
		want Fault
	}{
		{"delay:broker-2:100ms", Fault{Kind: FaultDelay, Target: Target{Kind: TargetBroker, Broker: 2}, Delay: 100 * time.Millisecond}},
		{"delay:broker-2:100ms:20ms", Fault{Kind: FaultDelay, Target: Target{Kind: TargetBroker, Broker: 2}, Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond}},
		{"delay:leader-of:orders/3:1.5s", Fault{Kind: FaultDelay, Target: Target{Kind: TargetLeaderOf, Topic: "orders", Partition: 3}, Delay: 1500 * time.Millisecond}},
		{"delay:leader-of:orders/3:200ms:0s", Fault{Kind: FaultDelay, Target: Target{Kind: TargetLeaderOf, Topic: "orders", Partition: 3}, Delay: 200 * time.Millisecond}},
		{"delay:busiest:30ms:5ms", Fault{Kind: FaultDelay, Target: Target{Kind: TargetBusiest}, Delay: 30 * time.Millisecond, Jitter: 5 * time.Millisecond}},
		{"loss:broker-2:10%", Fault{Kind: FaultLoss, Target: Target{Kind: TargetBroker, Broker: 2}, Loss: 0.1}},
		{"loss:leader-of:a.b/0:0.5%", Fault{Kind: FaultLoss, Target: Target{Kind: TargetLeaderOf, Topic: "a.b", Partition: 0}, Loss: 0.005}},
		{"loss:busiest:100%", Fault{Kind: FaultLoss, Target: Target{Kind: TargetBusiest}, Loss: 1}},
		{"partition:broker-2", Fault{Kind: FaultPartition, Target: Target{Kind: TargetBroker, Broker: 2}}},
		{"partition:leader-of:t/1", Fault{Kind: FaultPartition, Target: Target{Kind: TargetLeaderOf, Topic: "t", Partition: 1}}},
		{"bandwidth:broker-2:2MB/s", Fault{Kind: FaultBandwidth, Target: Target{Kind: TargetBroker, Broker: 2}, Rate: 2_000_000}},
		{"bandwidth:leader-of:a:b/1:1MiB/s", Fault{Kind: FaultBandwidth, Target: Target{Kind: TargetLeaderOf, Topic: "a:b", Partition: 1}, Rate: 1 << 20}},
		{"bandwidth:busiest:10kB/s", Fault{Kind: FaultBandwidth, Target: Target{Kind: TargetBusiest}, Rate: 10_000}},
		{"cpu:broker-2:20%", Fault{Kind: FaultCPU, Target: Target{Kind: TargetBroker, Broker: 2}, CPU: 0.2}},
		{"cpu:leader-of:t/0:250%", Fault{Kind: FaultCPU, Target: Target{Kind: TargetLeaderOf, Topic: "t", Partition: 0}, CPU: 2.5}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseFault(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want.Kind, got.Kind)
			assert.Equal(t, tc.want.Target, got.Target)
			assert.Equal(t, tc.want.Delay, got.Delay)
			assert.Equal(t, tc.want.Jitter, got.Jitter)
			assert.InDelta(t, tc.want.Loss, got.Loss, 1e-12)
			assert.Equal(t, tc.want.Rate, got.Rate)
			assert.InDelta(t, tc.want.CPU, got.CPU, 1e-12)
			back, err := ParseFault(got.String())
			require.NoError(t, err, "String %q parses back", got.String())
			assert.Equal(t, got.String(), back.String())
		})
	}
}

func TestParseFaultErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "want delay:TARGET"},
		{"delay", "want delay:TARGET"},
		{"slow:broker-2:100ms", `unknown fault "slow"`},
		{"delay:broker-2", "want delay:TARGET:DELAY"},
		{"delay:100ms", "want delay:TARGET:DELAY"},
		{"delay:broker-2:fast", `the delay "fast" is not a duration`},
		{"delay:broker-2:0s", "must be positive"},
		{"delay:broker-2:-5ms", "outside 0 to 1m0s"},
		{"delay:broker-2:2m", "outside 0 to 1m0s"},
		{"delay:broker-x:100ms", "want broker-N"},
		{"delay:none:100ms", "not none"},
		{"loss:broker-2", "want loss:TARGET:PERCENT%"},
		{"loss:broker-2:10", "is not a percentage"},
		{"loss:broker-2:0%", "above 0%"},
		{"loss:broker-2:101%", "at most 100%"},
		{"loss:broker-2:NaN%", "is not a percentage"},
		{"partition:", "want delay:TARGET"},
		{"partition:broker-2:10ms", "want broker-N"},
		{"partition:leader-of:t", "leader-of:TOPIC/PARTITION"},
		{"bandwidth:broker-2", "want bandwidth:TARGET:RATE"},
		{"bandwidth:2MB/s", "want bandwidth:TARGET:RATE"},
		{"bandwidth:broker-2:2MB", "has no /s"},
		{"bandwidth:broker-2:9999B/s", "below 10kB/s"},
		{"bandwidth:none:2MB/s", "not none"},
		{"cpu:broker-2", "want cpu:TARGET:PERCENT%"},
		{"cpu:broker-2:0.2", "is not a percentage of one CPU"},
		{"cpu:broker-2:0%", "from 1% to 6400%"},
		{"cpu:none:20%", "not none"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseFault(tc.in)
			require.Error(t, err)
			checkFlagError(t, err, FieldFault)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// FuzzParseFault: a fault parses to a one-line usage error naming the field
// "fault", or to a fault whose String parses back to the same string.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"delay:broker-2:100ms", "delay:broker-2:100ms:20ms", "loss:broker-2:10%", "partition:broker-2",
		"delay:broker-2:200ms", "delay:leader-of:orders/0:30ms:5ms", "loss:busiest:0.5%", "partition:leader-of:t/1", "delay:none:1s", "loss:broker-2:1e2%",
		"bandwidth:broker-2:2MB/s", "bandwidth:busiest:1536kB/s", "bandwidth:broker-1:10001B/s", "cpu:broker-2:20%", "cpu:busiest:1e2%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseFault(s)
		if err != nil {
			checkFlagError(t, err, FieldFault)
			return
		}
		back, err := ParseFault(got.String())
		if err != nil {
			t.Fatalf("%q -> %q does not parse back: %v", s, got.String(), err)
		}
		again, err := ParseFault(back.String())
		if err != nil || again.String() != back.String() || back.Kind != got.Kind || back.Target != got.Target || back.Delay != got.Delay || back.Jitter != got.Jitter || back.Rate != got.Rate {
			t.Fatalf("%q: round trip %q -> %q -> %v (%v)", s, got.String(), back.String(), again, err)
		}
	})
}
