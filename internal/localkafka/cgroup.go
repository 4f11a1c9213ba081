package localkafka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Per-broker CPU (--broker-cpu): every broker JVM runs in a cgroup of its
// own whose CFS quota allows FRACTION of one CPU per period, so a broker that
// leads more partitions saturates while the others idle, as a busy broker on
// its own machine would. cgroup v1's cpu controller and cgroup v2's cpu.max
// are both supported.

// cgroupRoots are where the cpu controller may be mounted; tests override.
var cgroupRoots = struct{ v1, v2 string }{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup"}

// isRoot reports whether kplan may make cgroups and network namespaces;
// tests that work on fake trees in a temporary directory override it, so
// they run as any user.
var isRoot = func() bool { return os.Geteuid() == 0 }

// cfsPeriodUS is the CFS period of the lab's cgroups.
const cfsPeriodUS = 100_000

// cpuCgroupBase returns the directory under which the lab's cgroups go and
// whether it is cgroup v2, or why there is none.
func cpuCgroupBase() (string, bool, error) {
	if !isRoot() {
		return "", false, errkind.Usagef(FieldBrokerCPU, "needs root (cgroups)")
	}
	if _, err := os.Stat(filepath.Join(cgroupRoots.v1, "cpu.cfs_quota_us")); err == nil {
		return cgroupRoots.v1, false, nil
	}
	if b, err := os.ReadFile(filepath.Join(cgroupRoots.v2, "cgroup.controllers")); err == nil && strings.Contains(" "+string(b)+" ", " cpu ") {
		return cgroupRoots.v2, true, nil
	}
	return "", false, errkind.Usagef(FieldBrokerCPU, "needs a cgroup cpu controller (v1 at %s or v2 with cpu in %s/cgroup.controllers)", cgroupRoots.v1, cgroupRoots.v2)
}

// CheckCPUPrivileges tells why per-broker CPU caps cannot work here.
func CheckCPUPrivileges() error {
	_, _, err := cpuCgroupBase()
	return err
}

// quotaUS is the CFS quota in microseconds per period for fraction CPUs.
func quotaUS(fraction float64) int64 {
	return max(1000, int64(fraction*cfsPeriodUS+0.5))
}

// cgroupDir is node id's cgroup.
func (s *State) cgroupDir(base string, id int32) string {
	return filepath.Join(base, fmt.Sprintf("kplan-lab-%d", subnetFor(s.Dir)), fmt.Sprintf("node-%d", id))
}

// capCPU puts pid into node id's cgroup, creating it with the lab's quota.
func (s *State) capCPU(id int32, pid int) error {
	return s.writeCPUCgroup(id, pid, quotaUS(s.CPUQuota))
}

// writeCPUCgroup creates node id's cgroup (if needed), sets its quota in
// microseconds per period (-1: none) and puts pid into it.
func (s *State) writeCPUCgroup(id int32, pid int, quota int64) error {
	base, v2, err := cpuCgroupBase()
	if err != nil {
		return err
	}
	dir := s.cgroupDir(base, id)
	if v2 {
		parent := filepath.Dir(dir)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return cpuErr("%w", err)
		}
		// Children of a v2 group get controllers the parent delegates.
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+cpu"), 0o644); err != nil {
			return cpuErr("enabling cpu in %s: %w", parent, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cpuErr("%w", err)
	}
	var writes [][2]string
	switch {
	case v2 && quota < 0:
		writes = [][2]string{{"cpu.max", fmt.Sprintf("max %d", cfsPeriodUS)}}
	case v2:
		writes = [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quota, cfsPeriodUS)}}
	default:
		writes = [][2]string{{"cpu.cfs_period_us", strconv.Itoa(cfsPeriodUS)}, {"cpu.cfs_quota_us", strconv.FormatInt(quota, 10)}}
	}
	writes = append(writes, [2]string{"cgroup.procs", strconv.Itoa(pid)})
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0o644); err != nil {
			return cpuErr("writing %s to %s: %w", w[1], filepath.Join(dir, w[0]), err)
		}
	}
	return nil
}

// MinCPUCap is the smallest CPU cap a broker can get at run time (one
// millisecond of CPU per 100 ms period).
const MinCPUCap = 0.01

// CapBrokerCPU caps running broker id at fraction CPUs (0.2: a fifth of
// one CPU) until UncapBrokerCPU: its JVM moves into a cgroup of its own,
// as `kplan lab up --broker-cpu` does for every broker from the start. It
// needs root and a cgroup cpu controller; a lab-wide cap is replaced for
// this broker while the run-time cap holds.
func (s *State) CapBrokerCPU(id int32, fraction float64) error {
	if !(fraction >= MinCPUCap) {
		return errkind.Usagef(FieldBrokerCPU, "%g CPUs, want at least %g", fraction, MinCPUCap)
	}
	n, err := s.Node(id)
	if err != nil {
		return err
	}
	if !n.Alive() {
		return errkind.Refusedf(FieldBrokerCPU, "broker-%d is not running", id)
	}
	return s.writeCPUCgroup(id, n.PID, quotaUS(fraction))
}

// BrokerCPUCgroup is the directory of broker id's cpu cgroup (it exists
// once the broker was capped, from the start or at run time), for tests
// and diagnostics that read its cpu.stat.
func (s *State) BrokerCPUCgroup(id int32) (string, error) {
	base, _, err := cpuCgroupBase()
	if err != nil {
		return "", err
	}
	return s.cgroupDir(base, id), nil
}

// UncapBrokerCPU lifts CapBrokerCPU's cap on broker id: back to the lab's
// own cap (--broker-cpu) if it has one, otherwise none (the broker's JVM,
// if it runs, stays in its cgroup without a quota, which lab down
// removes). Safe to call when the broker was never capped.
func (s *State) UncapBrokerCPU(id int32) error {
	n, err := s.Node(id)
	if err != nil {
		return err
	}
	base, _, err := cpuCgroupBase()
	if err != nil {
		return err
	}
	if _, err := os.Stat(s.cgroupDir(base, id)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	quota := int64(-1)
	if s.CPUQuota > 0 {
		quota = quotaUS(s.CPUQuota)
	}
	if !n.Alive() {
		return nil // a broker that stopped left its group; lab down removes it
	}
	return s.writeCPUCgroup(id, n.PID, quota)
}

// cpuErr is a failure to set up a CPU cap: a runtime error (the kernel
// refused; an EINVAL reads "invalid argument" and is not bad usage) about
// the broker-cpu field.
func cpuErr(format string, a ...any) error {
	return errkind.New(errkind.Runtime, FieldBrokerCPU, format, a...)
}

// removeCgroups removes the lab's cgroups once its processes are gone, and
// returns those it removed.
func (s *State) removeCgroups() ([]string, error) {
	base, _, err := cpuCgroupBase()
	if err != nil {
		if s.CPUQuota <= 0 {
			return nil, nil // no lab-wide cap, and no run-time cap was possible
		}
		return nil, err
	}
	var removed []string
	var errs []error
	dirs := make([]string, 0, len(s.Nodes)+1)
	for _, n := range s.Nodes {
		dirs = append(dirs, s.cgroupDir(base, n.ID))
	}
	for _, dir := range append(dirs, filepath.Dir(s.cgroupDir(base, 0))) {
		gone, err := removeCgroup(dir)
		if err != nil {
			errs = append(errs, err)
		} else if gone {
			removed = append(removed, dir)
		}
	}
	return removed, errors.Join(errs...)
}

// removeCgroup removes an empty cgroup and reports whether there was one.
// A killed JVM leaves its group a moment after it is reaped (its threads
// exit one by one), so a busy group is retried for up to 10 s.
func removeCgroup(dir string) (bool, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil {
			return true, nil
		}
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return false, fmt.Errorf("removing cgroup: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
