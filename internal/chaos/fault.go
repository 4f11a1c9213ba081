package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// FaultKind is what a network fault does to a broker's traffic.
type FaultKind string

// The network faults `kplan chaos --fault` injects.
const (
	// FaultDelay delays every packet the broker sends and receives.
	FaultDelay FaultKind = "delay"
	// FaultLoss drops a share of the broker's packets at random.
	FaultLoss FaultKind = "loss"
	// FaultPartition cuts the broker off from clients and other brokers.
	FaultPartition FaultKind = "partition"
)

// Fault is one network fault on one broker, as --fault spells it:
// delay:broker-2:100ms[:JITTER], loss:broker-2:10%, partition:broker-2.
// Target takes the same forms as --kill (broker-N, busiest, leader-of:T/P).
type Fault struct {
	Kind   FaultKind
	Target Target
	// Delay and Jitter apply to FaultDelay.
	Delay  time.Duration
	Jitter time.Duration
	// Loss is the share of packets dropped, 0 < Loss <= 1, for FaultLoss.
	Loss float64
}

// Faulter is implemented by clusters that can degrade a broker's network
// (the lab through its network conditions, Kubernetes through Chaos Mesh's
// NetworkChaos). Run injects the fault where it would otherwise kill, and
// clears it where it would restore.
type Faulter interface {
	// PlanFault checks, reading only, that the fault can be injected on
	// broker id and says how (shown before it acts, alone under --dry-run).
	PlanFault(ctx context.Context, id int32, f Fault) (KillPlan, error)
	// InjectFault applies f to broker id and returns when it is in force.
	InjectFault(ctx context.Context, id int32, f Fault) error
	// ClearFault removes every fault this cluster injected. It is safe to
	// call more than once, also after a failed InjectFault, and is called
	// with a context that Ctrl-C does not cancel.
	ClearFault(ctx context.Context) error
}

// FieldFault is the field --fault errors name.
const FieldFault = "fault"

// MaxFaultDelay bounds a fault's delay and jitter: beyond it every client
// times out and the experiment measures nothing but timeouts.
const MaxFaultDelay = time.Minute

// ParseFault parses a fault as --fault spells it: delay:TARGET:DELAY[:JITTER]
// (delay:broker-2:100ms, delay:broker-2:100ms:20ms), loss:TARGET:PERCENT%
// (loss:broker-2:10%) or partition:TARGET (partition:broker-2), with TARGET
// as --kill takes it (broker-N, busiest, leader-of:TOPIC/P; not none). Its
// errors are usage errors naming the field "fault".
func ParseFault(s string) (Fault, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return Fault{}, errkind.Usagef(FieldFault, "%q: want delay:TARGET:DELAY[:JITTER], loss:TARGET:PERCENT%% or partition:TARGET", s)
	}
	f := Fault{Kind: FaultKind(kind)}
	var target string
	switch f.Kind {
	case FaultPartition:
		target = rest
	case FaultDelay:
		// The target may hold ':' (leader-of:T/P): the durations are the
		// last one or two fields.
		fields := strings.Split(rest, ":")
		if len(fields) < 2 {
			return Fault{}, errkind.Usagef(FieldFault, "%q: want delay:TARGET:DELAY[:JITTER], e.g. delay:broker-2:100ms", s)
		}
		n := len(fields)
		last, err := parseFaultDuration(s, "delay", fields[n-1])
		if err != nil {
			return Fault{}, err
		}
		f.Delay = last
		target = strings.Join(fields[:n-1], ":")
		if n >= 3 {
			if _, err := time.ParseDuration(fields[n-2]); err == nil {
				if f.Delay, err = parseFaultDuration(s, "delay", fields[n-2]); err != nil {
					return Fault{}, err
				}
				f.Jitter = last
				target = strings.Join(fields[:n-2], ":")
			}
		}
		if f.Delay <= 0 {
			return Fault{}, errkind.Usagef(FieldFault, "%q: the delay must be positive", s)
		}
	case FaultLoss:
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return Fault{}, errkind.Usagef(FieldFault, "%q: want loss:TARGET:PERCENT%%, e.g. loss:broker-2:10%%", s)
		}
		target = rest[:i]
		pct, found := strings.CutSuffix(rest[i+1:], "%")
		if !found {
			return Fault{}, errkind.Usagef(FieldFault, "%q: the loss %q is not a percentage (want e.g. 10%%)", s, rest[i+1:])
		}
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || math.IsNaN(p) || p <= 0 || p > 100 {
			return Fault{}, errkind.Usagef(FieldFault, "%q: the loss %q is not a percentage above 0%% and at most 100%%", s, rest[i+1:])
		}
		f.Loss = p / 100
	default:
		return Fault{}, errkind.Usagef(FieldFault, "%q: unknown fault %q (want delay, loss or partition)", s, kind)
	}
	t, err := ParseTarget(target)
	if err != nil {
		return Fault{}, errkind.Wrap(errkind.Usage, FieldFault, fmt.Errorf("%q: %w", s, errors.Unwrap(err)))
	}
	if t.Kind == TargetNone {
		return Fault{}, errkind.Usagef(FieldFault, "%q: a fault needs a broker, not none", s)
	}
	f.Target = t
	return f, nil
}

// parseFaultDuration parses a delay or jitter of a fault.
func parseFaultDuration(s, what, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errkind.Usagef(FieldFault, "%q: the %s %q is not a duration (want e.g. 100ms)", s, what, v)
	}
	if d < 0 || d > MaxFaultDelay {
		return 0, errkind.Usagef(FieldFault, "%q: the %s %v is outside 0 to %v", s, what, d, MaxFaultDelay)
	}
	return d, nil
}

// String returns the fault as --fault takes it; ParseFault reads it back.
func (f Fault) String() string {
	switch f.Kind {
	case FaultDelay:
		s := fmt.Sprintf("delay:%s:%s", f.Target, f.Delay)
		if f.Jitter > 0 {
			s += ":" + f.Jitter.String()
		}
		return s
	case FaultLoss:
		return fmt.Sprintf("loss:%s:%s%%", f.Target, strconv.FormatFloat(f.Loss*100, 'g', 6, 64))
	case FaultPartition:
		return fmt.Sprintf("partition:%s", f.Target)
	}
	return string(f.Kind)
}

// Describe says in words what the fault does to broker id, for plans and
// reports.
func (f Fault) Describe(id int32) string {
	switch f.Kind {
	case FaultDelay:
		if f.Jitter > 0 {
			return fmt.Sprintf("delay broker %d's packets by %v ± %v", id, f.Delay, f.Jitter)
		}
		return fmt.Sprintf("delay broker %d's packets by %v", id, f.Delay)
	case FaultLoss:
		return fmt.Sprintf("drop %s%% of broker %d's packets", strconv.FormatFloat(f.Loss*100, 'g', 6, 64), id)
	case FaultPartition:
		return fmt.Sprintf("cut broker %d off the network", id)
	}
	return string(f.Kind)
}
