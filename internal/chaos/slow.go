package chaos

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/units"
)

// FieldSlow is the field --slow errors name.
const FieldSlow = "slow"

// The phases of a slow-broker experiment, as its report names them: the
// before phase is the cost at rest (nothing slow), the fault phase the
// broker slow.
const (
	SlowPhaseAtRest = "at rest"
	SlowPhaseSlow   = "slow"
)

// ParseSlow parses a slow broker as --slow spells it: TARGET:bandwidth=RATE
// (broker-2:bandwidth=2MB/s, what the broker sends capped) or
// TARGET:delay=DURATION (broker-2:delay=50ms, every packet it sends
// delayed) or TARGET:cpu=PERCENT% (broker-2:cpu=20%, its process held to
// a fifth of one CPU; the lab only, through a cgroup of its own), with
// TARGET as --kill takes it (broker-N, busiest, leader-of:TOPIC/P). It is a
// thin spelling of a fault (bandwidth:broker-2:2MB/s, delay:broker-2:50ms,
// cpu:broker-2:20%): the experiment injects it after the before phase (at
// rest) and measures a fault phase (slow). Its errors are usage errors
// naming the field "slow".
func ParseSlow(s string) (Fault, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return Fault{}, errkind.Usagef(FieldSlow, "%q: want broker-N:bandwidth=RATE, broker-N:delay=DURATION or broker-N:cpu=PERCENT%%, e.g. broker-2:bandwidth=2MB/s", s)
	}
	target, spec := s[:i], s[i+1:]
	key, val, ok := strings.Cut(spec, "=")
	if !ok || val == "" {
		return Fault{}, errkind.Usagef(FieldSlow, "%q: want bandwidth=RATE, delay=DURATION or cpu=PERCENT%% after the broker, got %q", s, spec)
	}
	f := Fault{}
	switch key {
	case "bandwidth":
		r, err := parseFaultRate(val)
		if err != nil {
			return Fault{}, errkind.Usagef(FieldSlow, "%q: %w", s, err)
		}
		f.Kind, f.Rate = FaultBandwidth, r
	case "delay":
		d, err := time.ParseDuration(val)
		if err != nil {
			return Fault{}, errkind.Usagef(FieldSlow, "%q: the delay %q is not a duration (want e.g. 50ms)", s, val)
		}
		if d <= 0 || d > MaxFaultDelay {
			return Fault{}, errkind.Usagef(FieldSlow, "%q: the delay %v is not above 0 and at most %v", s, d, MaxFaultDelay)
		}
		f.Kind, f.Delay = FaultDelay, d
	case "cpu":
		c, err := parseFaultCPU(val)
		if err != nil {
			return Fault{}, errkind.Usagef(FieldSlow, "%q: %w", s, err)
		}
		f.Kind, f.CPU = FaultCPU, c
	default:
		return Fault{}, errkind.Usagef(FieldSlow, "%q: unknown slowness %q (want bandwidth=RATE, delay=DURATION or cpu=PERCENT%%)", s, key)
	}
	t, err := ParseTarget(target)
	if err != nil {
		return Fault{}, errkind.Wrap(errkind.Usage, FieldSlow, fmt.Errorf("%q: %w", s, errors.Unwrap(err)))
	}
	if t.Kind == TargetNone || t.Kind == TargetEach {
		return Fault{}, errkind.Usagef(FieldSlow, "%q: a slow broker needs a broker (broker-N, busiest, leader-of:TOPIC/P), not %s", s, t)
	}
	f.Target = t
	return f, nil
}

// SlowString spells f as --slow takes it; ParseSlow reads it back. It is
// "" for a fault --slow cannot spell (a loss, a partition, a jittered
// delay).
func SlowString(f Fault) string {
	switch {
	case f.Kind == FaultBandwidth:
		return fmt.Sprintf("%s:bandwidth=%s", f.Target, units.FormatRate(f.Rate))
	case f.Kind == FaultDelay && f.Jitter == 0:
		return fmt.Sprintf("%s:delay=%s", f.Target, f.Delay)
	case f.Kind == FaultCPU:
		return fmt.Sprintf("%s:cpu=%s", f.Target, cpuPercent(f.CPU))
	}
	return ""
}

// validateSlow checks a slow-broker experiment: a bandwidth cap or a delay
// on one broker, and no kill.
func (c *Config) validateSlow() error {
	if !c.Slow {
		return nil
	}
	if c.Fault == nil || c.Fault.Kind != FaultBandwidth && c.Fault.Kind != FaultDelay && c.Fault.Kind != FaultCPU {
		return errkind.Usagef(FieldSlow, "a slow broker is a bandwidth cap, a delay or a CPU cap on one broker")
	}
	if c.Target.Kind != TargetNone {
		return errkind.Usagef(FieldSlow, "a slow-broker experiment kills nothing (drop --kill %s, or use --fault with --kill)", c.Target)
	}
	return nil
}
