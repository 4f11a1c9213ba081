package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/units"
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
	// FaultBandwidth caps the bytes per second the broker sends (to its
	// clients and to the followers fetching from it): a broker behind a
	// slower link (--slow broker-N:bandwidth=RATE).
	FaultBandwidth FaultKind = "bandwidth"
	// FaultCPU caps the CPU time the broker's process gets: a broker on a
	// slower or busier machine (--slow broker-N:cpu=20%). The lab only
	// (a cgroup of its own for the broker's JVM).
	FaultCPU FaultKind = "cpu"
)

// MaxFaultCPU is the largest CPU cap a fault takes, in CPUs; the smallest
// is localkafka.MinCPUCap (1% of one CPU).
const MaxFaultCPU = 64

// Fault is one fault on one broker, as --fault spells it:
// delay:broker-2:100ms[:JITTER], loss:broker-2:10%, partition:broker-2,
// bandwidth:broker-2:2MB/s, cpu:broker-2:20%. Target takes the same forms as --kill
// (broker-N, busiest, leader-of:T/P).
type Fault struct {
	Kind   FaultKind
	Target Target
	// Delay and Jitter apply to FaultDelay.
	Delay  time.Duration
	Jitter time.Duration
	// Loss is the share of packets dropped, 0 < Loss <= 1, for FaultLoss.
	Loss float64
	// Rate is the cap in bytes per second, at least MinFaultRate, for
	// FaultBandwidth.
	Rate int64
	// CPU is the cap in CPUs (0.2: a fifth of one CPU) for FaultCPU.
	CPU float64
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

// MinFaultRate is the smallest bandwidth cap: below it a broker cannot
// answer its controller's heartbeats in time and the experiment measures
// a broker fenced out of the cluster, not a slow one.
const MinFaultRate = 10_000

// MaxFaultDelay bounds a fault's delay and jitter: beyond it every client
// times out and the experiment measures nothing but timeouts.
const MaxFaultDelay = time.Minute

// ParseFault parses a fault as --fault spells it: delay:TARGET:DELAY[:JITTER]
// (delay:broker-2:100ms, delay:broker-2:100ms:20ms), loss:TARGET:PERCENT%
// (loss:broker-2:10%), partition:TARGET (partition:broker-2) or
// bandwidth:TARGET:RATE (bandwidth:broker-2:2MB/s) or cpu:TARGET:PERCENT%
// (cpu:broker-2:20%: a fifth of one CPU; the lab only), with TARGET
// as --kill takes it (broker-N, busiest, leader-of:TOPIC/P; not none). Its
// errors are usage errors naming the field "fault".
func ParseFault(s string) (Fault, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return Fault{}, errkind.Usagef(FieldFault, "%q: want delay:TARGET:DELAY[:JITTER], loss:TARGET:PERCENT%%, partition:TARGET, bandwidth:TARGET:RATE or cpu:TARGET:PERCENT%%", s)
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
	case FaultBandwidth:
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return Fault{}, errkind.Usagef(FieldFault, "%q: want bandwidth:TARGET:RATE, e.g. bandwidth:broker-2:2MB/s", s)
		}
		target = rest[:i]
		r, err := parseFaultRate(rest[i+1:])
		if err != nil {
			return Fault{}, errkind.Usagef(FieldFault, "%q: %w", s, err)
		}
		f.Rate = r
	case FaultCPU:
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return Fault{}, errkind.Usagef(FieldFault, "%q: want cpu:TARGET:PERCENT%%, e.g. cpu:broker-2:20%%", s)
		}
		target = rest[:i]
		c, err := parseFaultCPU(rest[i+1:])
		if err != nil {
			return Fault{}, errkind.Usagef(FieldFault, "%q: %w", s, err)
		}
		f.CPU = c
	default:
		return Fault{}, errkind.Usagef(FieldFault, "%q: unknown fault %q (want delay, loss, partition, bandwidth or cpu)", s, kind)
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

// parseFaultCPU parses a CPU cap in percent of one CPU (20%: a fifth of
// one CPU; 150%: one and a half).
func parseFaultCPU(v string) (float64, error) {
	pct, found := strings.CutSuffix(v, "%")
	if !found {
		return 0, fmt.Errorf("the CPU cap %q is not a percentage of one CPU (want e.g. 20%%)", v)
	}
	p, err := strconv.ParseFloat(pct, 64)
	if err != nil || math.IsNaN(p) || p < 1 || p > MaxFaultCPU*100 {
		return 0, fmt.Errorf("the CPU cap %q is not a percentage of one CPU from 1%% to %d%%", v, MaxFaultCPU*100)
	}
	return p / 100, nil
}

// parseFaultRate parses a bandwidth cap (2MB/s, 500kB/s), at least
// MinFaultRate.
func parseFaultRate(v string) (int64, error) {
	r, err := units.ParseRate(v)
	if err != nil {
		return 0, err
	}
	if r < MinFaultRate {
		return 0, fmt.Errorf("the rate %q is below %s (a broker that slow is fenced out of the cluster)", v, units.FormatRate(MinFaultRate))
	}
	return r, nil
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
	case FaultBandwidth:
		return fmt.Sprintf("bandwidth:%s:%s", f.Target, units.FormatRate(f.Rate))
	case FaultCPU:
		return fmt.Sprintf("cpu:%s:%s", f.Target, cpuPercent(f.CPU))
	}
	return string(f.Kind)
}

// cpuPercent spells a CPU cap as a percentage of one CPU.
func cpuPercent(c float64) string { return strconv.FormatFloat(c*100, 'g', 6, 64) + "%" }

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
	case FaultBandwidth:
		return fmt.Sprintf("cap what broker %d sends at %s", id, units.FormatRate(f.Rate))
	case FaultCPU:
		return fmt.Sprintf("cap broker %d's process at %s of one CPU", id, cpuPercent(f.CPU))
	}
	return string(f.Kind)
}

// legFault is one leg's network fault as it ran.
type legFault struct {
	injected bool
	broker   int32
	// askAt is when kplan asked for the fault, inForceAt when InjectFault
	// returned (the fault in force), clearedAt when ClearFault returned
	// (0: not cleared during the leg), all since the run's epoch.
	askAt, inForceAt, clearedAt time.Duration
}

// checkFault checks, before anything is created, that the cluster can
// inject the fault and that a broker target exists.
func (r *runner) checkFault(brokers []int32) error {
	f := r.cfg.Fault
	if f == nil {
		return nil
	}
	if _, ok := r.c.(Faulter); !ok {
		return errkind.Usagef(FieldFault, "the %s cluster cannot degrade a broker's network (kplan's lab and Chaos Mesh's NetworkChaos can)", r.c.Kind())
	}
	if f.Target.Kind == TargetBroker && !slices.Contains(brokers, f.Target.Broker) {
		return errkind.Usagef(FieldFault, "%s: no such broker (brokers %v)", f.Target, brokers)
	}
	if f.Kind == FaultPartition && f.Target.Kind == TargetBroker {
		return r.faultErr(r.checkReplicas(f.Target.Broker))
	}
	return nil
}

// faultErr makes an error about the kill's target one about the fault's.
func (r *runner) faultErr(err error) error {
	if err == nil || errkind.FieldOf(err) != "kill" {
		return err
	}
	return errkind.Wrap(errkind.KindOf(err), FieldFault, errors.Unwrap(err))
}

// faultPhase injects the leg's fault, when there is one, and measures the
// fault phase: it begins when kplan asks for the fault (the records sent
// while it is being injected are the fault's) and lasts a phase from then.
// A partition is a kill as far as Kafka can tell, so the kill's checks
// apply to it.
func (r *runner) faultPhase(ctx context.Context, l *leg) error {
	f := r.cfg.Fault
	if f == nil {
		return nil
	}
	fl := r.c.(Faulter) // checkFault made sure
	victim, err := r.resolveTarget(ctx, l, f.Target)
	if err != nil {
		return r.faultErr(err)
	}
	if f.Kind == FaultPartition {
		if err := r.checkReplicas(victim); err != nil {
			return r.faultErr(err)
		}
		if err := r.safety(ctx, victim); err != nil {
			return err
		}
	}
	if _, err := fl.PlanFault(ctx, victim, *f); err != nil {
		return err
	}
	r.begin(ctx, l, PhaseFault)
	l.fault = legFault{broker: victim, askAt: r.since()}
	r.faultTried = true
	if err := fl.InjectFault(ctx, victim, *f); err != nil {
		r.end(ctx, l, PhaseFault)
		return fmt.Errorf("inject %s: %w", f, err)
	}
	r.faulted = victim
	l.fault.injected, l.fault.inForceAt = true, r.since()
	l.underFault[PhaseFault] = true
	defer r.end(ctx, l, PhaseFault)
	return r.wait(ctx, l, PhaseFault)
}

// clearFault clears the fault in force, if any, during a leg.
func (r *runner) clearFault(ctx context.Context, l *leg) error {
	if r.faulted < 0 {
		return nil
	}
	if err := r.c.(Faulter).ClearFault(ctx); err != nil {
		return fmt.Errorf("clear %s: %w", r.cfg.Fault, err)
	}
	r.faulted, r.faultTried = -1, false
	l.fault.clearedAt = r.since()
	return nil
}

// endFaultLeg ends a leg with a fault and no kill: with Restore the fault
// is cleared in the restore phase and a recovered phase measured; between
// sequential legs it is cleared once this leg's producers stopped.
func (r *runner) endFaultLeg(ctx context.Context, l *leg, last bool) error {
	if r.faulted < 0 {
		return nil
	}
	if !r.cfg.Restore {
		if !r.cfg.Sequential || last {
			return nil // cleared at cleanup
		}
		r.stopLeg(ctx, l)
		return r.clearFault(ctx, l)
	}
	r.begin(ctx, l, PhaseRestore)
	t0 := r.since()
	err := r.clearFault(ctx, l)
	r.end(ctx, l, PhaseRestore)
	if err != nil {
		return err
	}
	l.restore = r.since() - t0
	return r.measured(ctx, l, PhaseRecovered)
}

// cleanupFault clears the fault at the end of the run, on success, error
// and Ctrl-C: a fault never outlives the run, unless a second Ctrl-C cut
// the cleanup short, which the notes then say.
func (r *runner) cleanupFault(ctx context.Context) {
	if !r.faultTried {
		return
	}
	what := r.cfg.Fault.String()
	if r.aborted() {
		r.notes = append(r.notes, fmt.Sprintf("cleanup cut short: the fault %s may still be in force; clear it by hand (kplan lab net --clear, kplan chaos cleanup)", what))
		return
	}
	fl := r.c.(Faulter)
	if err := fl.ClearFault(ctx); err != nil {
		r.notes = append(r.notes, fmt.Sprintf("clearing the fault %s failed, it may still be in force: %v", what, err))
		return
	}
	if r.faulted >= 0 {
		r.notes = append(r.notes, fmt.Sprintf("fault %s cleared at the end of the run", what))
	}
	r.faulted, r.faultTried = -1, false
}

// validate checks a fault built without ParseFault; nil is valid.
func (f *Fault) validate() error {
	if f == nil {
		return nil
	}
	if f.Target.Kind == TargetNone {
		return errkind.Usagef(FieldFault, "%s: a fault needs a broker, not none", f)
	}
	switch f.Kind {
	case FaultDelay:
		if f.Delay <= 0 || f.Delay > MaxFaultDelay || f.Jitter < 0 || f.Jitter > MaxFaultDelay {
			return errkind.Usagef(FieldFault, "%s: want a delay above 0 and a jitter of at least 0, both at most %v", f, MaxFaultDelay)
		}
	case FaultLoss:
		if !(f.Loss > 0 && f.Loss <= 1) {
			return errkind.Usagef(FieldFault, "%s: want a loss above 0%% and at most 100%%", f)
		}
	case FaultPartition:
	case FaultBandwidth:
		if f.Rate < MinFaultRate {
			return errkind.Usagef(FieldFault, "%s: want a rate of at least %s", f, units.FormatRate(MinFaultRate))
		}
	case FaultCPU:
		if !(f.CPU >= 0.01 && f.CPU <= MaxFaultCPU) {
			return errkind.Usagef(FieldFault, "%s: want a CPU cap from 1%% to %d%% of one CPU", f, MaxFaultCPU*100)
		}
	default:
		return errkind.Usagef(FieldFault, "unknown fault %q (want delay, loss, partition, bandwidth or cpu)", f.Kind)
	}
	return nil
}

// faultResult is the run's fault for the result: the first leg that
// injected it.
func (r *runner) faultResult() *FaultResult {
	f := r.cfg.Fault
	if f == nil {
		return nil
	}
	fr := &FaultResult{Fault: f.String(), Kind: f.Kind, Broker: -1, Description: f.String() + ": not injected", Phases: []string{}}
	for _, l := range r.legs {
		if !l.fault.injected {
			continue
		}
		fr.Broker = l.fault.broker
		fr.Description = f.Describe(l.fault.broker)
		fr.InjectedAtS = l.fault.askAt.Seconds()
		fr.InForceMS = ms(l.fault.inForceAt - l.fault.askAt)
		if l.fault.clearedAt > 0 {
			fr.ClearedAtS = ptr(l.fault.clearedAt.Seconds())
		}
		for _, ph := range MeasuredPhases {
			if l.windows[ph].ran && l.underFault[ph] {
				fr.Phases = append(fr.Phases, ph.String())
			}
		}
		break
	}
	return fr
}
