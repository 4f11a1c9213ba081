package chaos

import (
	"context"
	"time"
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
