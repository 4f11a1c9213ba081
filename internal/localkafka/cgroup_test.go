package localkafka

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestQuotaUS(t *testing.T) {
	for _, tc := range []struct {
		fraction float64
		want     int64
	}{{0.25, 25_000}, {1, 100_000}, {1.5, 150_000}, {0.001, 1000}} {
		assert.Equal(t, tc.want, quotaUS(tc.fraction), "%g CPU", tc.fraction)
	}
}

// capCPU against fake cgroup trees: the quota files and the process list
// get what the kernel expects, in v1 and in v2 layout.
// The trees live in a temporary directory, so the test runs as any user:
// only the root check is replaced.
func TestCapCPUWritesQuota(t *testing.T) {
	fakeRoot(t, true)
	saved := cgroupRoots
	defer func() { cgroupRoots = saved }()
	for _, v2 := range []bool{false, true} {
		base := fakeCgroups(t, v2)
		s := &State{Dir: "/tmp/some-lab", CPUQuota: 0.25, Nodes: []Node{{ID: 2, Broker: true}}}
		require.NoError(t, s.capCPU(2, 4242))
		dir := s.cgroupDir(base, 2)
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			return string(b)
		}
		assert.Equal(t, "4242", read("cgroup.procs"))
		if v2 {
			assert.Equal(t, "25000 100000", read("cpu.max"))
		} else {
			assert.Equal(t, strconv.Itoa(cfsPeriodUS), read("cpu.cfs_period_us"))
			assert.Equal(t, "25000", read("cpu.cfs_quota_us"))
		}
	}
	cgroupRoots.v1, cgroupRoots.v2 = filepath.Join(t.TempDir(), "none"), filepath.Join(t.TempDir(), "none")
	err := CheckCPUPrivileges()
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, FieldBrokerCPU, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "cgroup cpu controller")
}

// fakeCgroups points cgroupRoots at a fake cpu controller in a temporary
// directory, in v1 or v2 layout, and returns the controller's root (the
// caller restores cgroupRoots).
func fakeCgroups(t *testing.T, v2 bool) string {
	t.Helper()
	root := t.TempDir()
	cgroupRoots.v1, cgroupRoots.v2 = filepath.Join(root, "cpu"), filepath.Join(root, "unified")
	if v2 {
		require.NoError(t, os.MkdirAll(cgroupRoots.v2, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(cgroupRoots.v2, "cgroup.controllers"), []byte("cpuset cpu io memory"), 0o644))
		return cgroupRoots.v2
	}
	require.NoError(t, os.MkdirAll(cgroupRoots.v1, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cgroupRoots.v1, "cpu.cfs_quota_us"), []byte("-1"), 0o644))
	return cgroupRoots.v1
}

// fakeRoot makes the root check answer root for the test.
func fakeRoot(t *testing.T, root bool) {
	t.Helper()
	saved := isRoot
	t.Cleanup(func() { isRoot = saved })
	isRoot = func() bool { return root }
}

// TestPrivilegesNameTheField: without root, the caps are refused as usage
// errors naming their field, whoever runs the test.
func TestPrivilegesNameTheField(t *testing.T) {
	fakeRoot(t, false)
	for _, tc := range []struct {
		check func() error
		field string
	}{{CheckCPUPrivileges, FieldBrokerCPU}, {CheckNetPrivileges, FieldBrokerBandwidth}} {
		err := tc.check()
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.Equal(t, tc.field, errkind.FieldOf(err))
		assert.ErrorContains(t, err, tc.field+": needs root")
	}
}

// TestCapCPUKernelRefusalIsRuntime: a cgroup write the kernel refuses with
// EINVAL ("invalid argument") is a runtime error about broker-cpu, not bad
// usage. A file where the cgroup directory should be makes the write fail
// without root.
func TestCapCPUKernelRefusalIsRuntime(t *testing.T) {
	fakeRoot(t, true)
	saved := cgroupRoots
	defer func() { cgroupRoots = saved }()
	root := t.TempDir()
	cgroupRoots.v1, cgroupRoots.v2 = filepath.Join(root, "cpu"), filepath.Join(root, "unified")
	require.NoError(t, os.MkdirAll(cgroupRoots.v1, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cgroupRoots.v1, "cpu.cfs_quota_us"), []byte("-1"), 0o644))
	s := &State{Dir: "/tmp/some-lab", CPUQuota: 0.25}
	dir := s.cgroupDir(cgroupRoots.v1, 2)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cgroup.procs"), 0o755), "a directory where the file goes")
	err := s.capCPU(2, 4242)
	require.Error(t, err)
	assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
	assert.Equal(t, FieldBrokerCPU, errkind.FieldOf(err))
	assert.ErrorContains(t, err, "cgroup.procs")
}

// TestRunTimeCPUCap: a run-time cap writes the broker's quota, lifting it
// writes "no quota" (or the lab's own), a broker that does not run is
// refused, and an uncap of a broker never capped does nothing.
func TestRunTimeCPUCap(t *testing.T) {
	fakeRoot(t, true)
	saved := cgroupRoots
	defer func() { cgroupRoots = saved }()
	for _, v2 := range []bool{false, true} {
		base := fakeCgroups(t, v2)
		s := &State{Dir: "/tmp/some-lab", Nodes: []Node{{ID: 2, Broker: true, PID: 4242}}}
		require.NoError(t, s.UncapBrokerCPU(2), "never capped")
		_, err := os.Stat(s.cgroupDir(base, 2))
		assert.ErrorIs(t, err, os.ErrNotExist, "an uncap creates nothing")

		err = s.CapBrokerCPU(2, 0.2)
		assert.Equal(t, errkind.Refused, errkind.KindOf(err), "pid 4242 is no lab JVM: %v", err)
		err = s.CapBrokerCPU(2, 0.001)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.Equal(t, FieldBrokerCPU, errkind.FieldOf(err))
		_, err = s.Node(7)
		require.Error(t, err)

		// The writes themselves, as CapBrokerCPU and UncapBrokerCPU make
		// them for a live broker.
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(s.cgroupDir(base, 2), name))
			require.NoError(t, err)
			return string(b)
		}
		require.NoError(t, s.writeCPUCgroup(2, 4242, quotaUS(0.2)))
		require.NoError(t, s.writeCPUCgroup(2, 4242, -1))
		if v2 {
			assert.Equal(t, "max 100000", read("cpu.max"))
		} else {
			assert.Equal(t, "-1", read("cpu.cfs_quota_us"))
		}
		assert.Equal(t, "4242", read("cgroup.procs"))
	}
}
