// Package faulter is the lab's chaos.Faulter: network faults on a broker's
// path with `kplan lab net`'s conditions. It wraps the chaos lab cluster
// (package lab, which package chaos's tests import, so it cannot import
// chaos itself).
package faulter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// Cluster is the running lab (every chaos.Cluster method of lab.Cluster)
// that also degrades a broker's network with `kplan lab net`'s conditions
// on the broker's path: every packet its JVM sends is delayed, dropped at
// random, dropped (a partition) or held to a rate (a bandwidth cap); or
// holds its JVM to a CPU cap (a cgroup of its own). It implements
// chaos.Faulter.
type Cluster struct {
	*lab.Cluster
	// faulted are the paths InjectFault put conditions on; capped the
	// brokers it held to a CPU cap.
	faulted []localkafka.NetPath
	capped  []int32
}

var (
	_ chaos.Faulter = (*Cluster)(nil)
	_ chaos.Cluster = (*Cluster)(nil)
)

// New returns the lab c with network faults.
func New(c *lab.Cluster) *Cluster { return &Cluster{Cluster: c} }

// condition is f as a lab network condition.
func condition(f chaos.Fault) (localkafka.Condition, error) {
	switch f.Kind {
	case chaos.FaultDelay:
		return localkafka.Condition{Delay: f.Delay, Jitter: f.Jitter}, nil
	case chaos.FaultLoss:
		return localkafka.Condition{Loss: f.Loss}, nil
	case chaos.FaultPartition:
		return localkafka.Partition(), nil
	case chaos.FaultBandwidth:
		return localkafka.Condition{Rate: f.Rate}, nil
	}
	return localkafka.Condition{}, errkind.Usagef("fault", "unknown fault kind %q (want delay, loss, partition or bandwidth)", f.Kind)
}

// PlanFault implements chaos.Faulter: the iptables and tc commands that
// would run (a CPU cap: the cgroup writes), reading only.
func (l *Cluster) PlanFault(_ context.Context, id int32, f chaos.Fault) (chaos.KillPlan, error) {
	if f.Kind == chaos.FaultCPU {
		return l.planCPU(id, f)
	}
	c, err := condition(f)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	cmds, mech, err := l.State().PlanNetCondition(localkafka.BrokerPath(id), c)
	if err != nil {
		return chaos.KillPlan{}, faultErr(err)
	}
	return chaos.KillPlan{
		Target: fmt.Sprintf("broker-%d of the lab in %s (every packet its JVM sends)", id, l.State().Dir),
		Steps: []string{
			"move the lab's JVMs into net_cls cgroups of their own (classids for iptables' cgroup match)",
			fmt.Sprintf("put %s on broker-%d's path with %s", c, id, mech),
			"clear: remove the lab's iptables chain, its qdisc on lo, netd and the cgroups",
		},
		Manifest: strings.Join(cmds, "\n") + "\n",
	}, nil
}

// InjectFault implements chaos.Faulter.
func (l *Cluster) InjectFault(ctx context.Context, id int32, f chaos.Fault) error {
	if f.Kind == chaos.FaultCPU {
		if !slices.Contains(l.capped, id) {
			l.capped = append(l.capped, id)
		}
		return faultErr(l.State().CapBrokerCPU(id, f.CPU))
	}
	c, err := condition(f)
	if err != nil {
		return err
	}
	p := localkafka.BrokerPath(id)
	if !slices.Contains(l.faulted, p) {
		l.faulted = append(l.faulted, p)
	}
	if err := l.State().SetNetCondition(ctx, p, c); err != nil {
		return faultErr(err)
	}
	return nil
}

// ClearFault implements chaos.Faulter: it removes the conditions it put on
// brokers' paths (others, set by `kplan lab net`, stay).
func (l *Cluster) ClearFault(ctx context.Context) error {
	var errs []error
	for _, p := range l.faulted {
		if err := l.State().ClearNetCondition(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range l.capped {
		if err := l.State().UncapBrokerCPU(id); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clearing the lab's faults: %w", err)
	}
	l.faulted, l.capped = nil, nil
	return nil
}

// planCPU is the plan of a CPU cap on broker id.
func (l *Cluster) planCPU(id int32, f chaos.Fault) (chaos.KillPlan, error) {
	if err := localkafka.CheckCPUPrivileges(); err != nil {
		return chaos.KillPlan{}, faultErr(err)
	}
	n, err := l.State().Node(id)
	if err != nil {
		return chaos.KillPlan{}, faultErr(err)
	}
	lift := "none (the lab has no --broker-cpu)"
	if q := l.State().CPUQuota; q > 0 {
		lift = fmt.Sprintf("the lab's own %g CPUs", q)
	}
	return chaos.KillPlan{
		Target: fmt.Sprintf("broker-%d of the lab in %s (its JVM, pid %d)", id, l.State().Dir, n.PID),
		Steps: []string{
			fmt.Sprintf("move broker-%d's JVM into a cpu cgroup of its own with a CFS quota of %s per period (%s)", id, strconv.FormatFloat(f.CPU, 'g', 6, 64)+" CPUs", f.Describe(id)),
			"clear: set its quota back to " + lift + "; lab down removes the cgroup",
		},
	}, nil
}

// faultErr names --fault as the field of a lab's refusal.
func faultErr(err error) error {
	if errkind.KindOf(err) == errkind.Usage {
		return errkind.Wrap(errkind.Usage, "fault", err)
	}
	return err
}
