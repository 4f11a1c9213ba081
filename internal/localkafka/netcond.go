package localkafka

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Network conditions (`kplan lab net`): delay, jitter, loss, partition and
// rate on one broker's traffic or on the clients' path to the brokers, for a
// lab on loopback (not one with --broker-bandwidth, whose nodes live in
// namespaces of their own).
//
// Every lab JVM is moved into a net_cls cgroup of its own (cgroup v1,
// mounted at /sys/fs/cgroup/net_cls when it is not), whose classid tags
// every socket the JVM owns, existing ones included. iptables rules in
// chains of the lab's own (KPLAN-<hash>, hooked from OUTPUT in the filter
// table and POSTROUTING in mangle) then select:
//
//   - broker N: every packet broker N's JVM sends (to clients, to other
//     brokers, to the controllers): `-m cgroup --cgroup CLASSID`;
//   - clients: every packet to a broker's client port sent by a process that
//     is not a lab JVM (kplan's producers and consumers, Kafka's tools): the
//     broker-bound direction only.
//
// Mechanisms: where the kernel has tc netem (checked once per call), delay,
// jitter and loss are a netem qdisc under an HTB class of the lab's on lo,
// the packets classified into it by iptables' CLASSIFY. Without netem (a
// kernel built without CONFIG_NET_SCH_NETEM), loss is iptables' statistic
// match (`-m statistic --mode random --probability P -j DROP`), and delay
// and jitter an NFQUEUE rule whose queue a small kplan process (`kplan lab
// netd`) holds each packet for delay±jitter before accepting it. A
// partition is a DROP rule and a rate an HTB class on lo, in both.

// Mechanisms a lab's network conditions use.
const (
	MechNetem    = "tc netem"
	MechNFQueue  = "iptables + NFQUEUE (kplan lab netd)"
	netcondField = ""
)

// The fields the errors of network conditions name; the CLI spells each as
// its flag.
const (
	FieldNetBroker = "broker"
	FieldDelay     = "delay"
	FieldJitter    = "jitter"
	FieldLoss      = "loss"
	FieldRate      = "rate"
)

// MaxNetDelay bounds --delay and --jitter: a packet is held at most this long.
const MaxNetDelay = 10 * time.Second

// PathClients names the clients' path to the brokers.
const PathClients = "clients"

// NetPath is where a condition applies: broker N's traffic (Broker > 0) or
// the clients' path (Broker == 0).
type NetPath struct {
	Broker int32
}

// BrokerPath is broker id's path.
func BrokerPath(id int32) NetPath { return NetPath{Broker: id} }

// ClientsPath is the clients' path to the brokers.
func ClientsPath() NetPath { return NetPath{} }

func (p NetPath) String() string {
	if p.Broker > 0 {
		return fmt.Sprintf("broker-%d", p.Broker)
	}
	return PathClients
}

// ParseNetPath parses "broker-N", "N" or "clients".
func ParseNetPath(s string) (NetPath, error) {
	if s == PathClients {
		return ClientsPath(), nil
	}
	id, err := ParseBroker(s)
	if err != nil || id < 1 {
		return NetPath{}, errkind.Usagef(FieldNetBroker, "%q is not a path (want broker-N or clients)", s)
	}
	return BrokerPath(id), nil
}

// Condition is what a path suffers. The zero Condition is no condition.
type Condition struct {
	Delay  time.Duration `json:"delay_ns,omitempty"`
	Jitter time.Duration `json:"jitter_ns,omitempty"`
	// Loss is the share of packets dropped, 0..1; 1 is a partition.
	Loss float64 `json:"loss,omitempty"`
	// Rate is a limit in bytes per second (0: none).
	Rate int64 `json:"rate_bytes_per_sec,omitempty"`
}

// Partition is the condition that cuts a path off.
func Partition() Condition { return Condition{Loss: 1} }

// Zero reports whether c does nothing.
func (c Condition) Zero() bool { return c == Condition{} }

// Validate checks c's values; errors name the field.
func (c Condition) Validate() error {
	switch {
	case c.Delay < 0 || c.Delay > MaxNetDelay:
		return errkind.Usagef(FieldDelay, "want 0 to %s, got %s", MaxNetDelay, c.Delay)
	case c.Jitter < 0 || c.Jitter > MaxNetDelay:
		return errkind.Usagef(FieldJitter, "want 0 to %s, got %s", MaxNetDelay, c.Jitter)
	case c.Jitter > 0 && c.Delay == 0:
		return errkind.Usagef(FieldJitter, "needs a delay (--delay) to vary around")
	case c.Jitter > c.Delay:
		return errkind.Usagef(FieldJitter, "%s is more than the delay %s", c.Jitter, c.Delay)
	case !(c.Loss >= 0 && c.Loss <= 1):
		return errkind.Usagef(FieldLoss, "want 0%% to 100%%, got %g", c.Loss)
	case c.Rate < 0:
		return errkind.Usagef(FieldRate, "want a positive rate, got %d bytes/s", c.Rate)
	case c.Zero():
		return errkind.Usagef(FieldDelay, "no condition: give --delay, --loss or --rate (or --clear)")
	}
	return nil
}

func (c Condition) String() string {
	var parts []string
	if c.Delay > 0 {
		d := "delay " + c.Delay.String()
		if c.Jitter > 0 {
			d += "±" + c.Jitter.String()
		}
		parts = append(parts, d)
	}
	switch {
	case c.Loss >= 1:
		parts = append(parts, "partition (100% loss)")
	case c.Loss > 0:
		parts = append(parts, "loss "+FormatLoss(c.Loss))
	}
	if c.Rate > 0 {
		parts = append(parts, fmt.Sprintf("rate %dB/s", c.Rate))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ParseLoss parses a loss share: "5%", "0.5%", "100%" or a fraction "0.05".
func ParseLoss(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSpace(strings.TrimSuffix(t, "%"))
	if t == "" || strings.ContainsAny(t, "eEnNiIxX_") {
		return 0, fmt.Errorf("loss %q: want a percentage such as 5%%", s)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("loss %q: want a percentage such as 5%%", s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v > 1 {
		return 0, fmt.Errorf("loss %q: want 0%% to 100%%", s)
	}
	return v, nil
}

// FormatLoss formats a share as a percentage, e.g. 0.05 -> "5%".
func FormatLoss(v float64) string {
	return strconv.FormatFloat(v*100, 'f', -1, 64) + "%"
}

// NetCond is one path's condition in force.
type NetCond struct {
	Path      string    `json:"path"`
	Condition Condition `json:"condition"`
	// Queue is the NFQUEUE number netd serves for the delay (0: none).
	Queue uint16 `json:"queue,omitempty"`
}

// NetConds is what `kplan lab net` set up, saved in lab.json so that any
// later process (`kplan lab net --clear`, `kplan lab down`) removes exactly
// that.
type NetConds struct {
	Mechanism string    `json:"mechanism"`
	Chain     string    `json:"chain"`
	Conds     []NetCond `json:"conditions"`
	// Cgroups are the net_cls cgroups kplan made, by node id.
	Cgroups map[int32]string `json:"cgroups,omitempty"`
	// NetdPID is the delay process (`kplan lab netd`), 0 when none runs.
	NetdPID int `json:"netd_pid,omitempty"`
	// QDisc is the handle of the HTB root qdisc kplan put on lo ("" none).
	QDisc string `json:"qdisc,omitempty"`
}

// netClsRoot is where the net_cls controller is (or gets) mounted.
var netClsRoot = "/sys/fs/cgroup/net_cls"

// labHash is a lab's short id from its directory, for names and numbers.
func labHash(dir string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dir))
	return h.Sum32()
}

// chainName is the lab's iptables chain (at most 28 characters).
func chainName(dir string) string { return fmt.Sprintf("KPLAN-%08x", labHash(dir)) }

// classid is node index i's net_cls classid: major from the lab, minor i+1.
func classid(dir string, i int) uint32 {
	major := 0x1000 + labHash(dir)%0xe000
	return major<<16 | uint32(i+1)
}

// htbHandle is the lab's HTB root qdisc handle major on lo.
func htbHandle(dir string) uint32 { return 0x100 + labHash(dir)%0xe00 }

// queueBase is the first NFQUEUE number of the lab (one per path).
func queueBase(dir string) uint16 { return uint16(1000 + (labHash(dir)%4000)*16) }

// NetConditions returns the conditions in force (nil when none).
func (s *State) NetConditions() *NetConds { return s.NetCond }

// checkNetCond tells why network conditions cannot work on s here.
func (s *State) checkNetCond() error {
	if s.Net != nil {
		return errkind.Usagef(netcondField, "not available on a lab with --broker-bandwidth (its nodes run in network namespaces); start the lab without it")
	}
	if !isRoot() {
		return errkind.Usagef(netcondField, "needs root (iptables, tc and cgroups)")
	}
	for _, tool := range []string{"iptables", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return errkind.Usagef(netcondField, "needs %s on PATH (Debian: apt-get install iptables iproute2)", tool)
		}
	}
	return nil
}

// netemAvailable reports whether the kernel has tc netem: it adds a netem
// qdisc to lo of a scratch network namespace.
var netemAvailable = func() bool {
	ns := fmt.Sprintf("kplan-netem-%d", os.Getpid())
	if run("ip", "netns", "add", ns) != nil {
		return false
	}
	defer run("ip", "netns", "del", ns) //nolint:errcheck // a scratch namespace
	return run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms") == nil
}

// SetNetCondition puts c on path p (replacing what p had) and returns once
// it is in force. On failure, and when ctx ends, every rule kplan added is
// removed again.
func (s *State) SetNetCondition(ctx context.Context, p NetPath, c Condition) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if p.Broker > 0 {
		if _, err := s.Node(p.Broker); err != nil {
			return errkind.Wrap(errkind.Usage, FieldNetBroker, err)
		}
	}
	if err := s.checkNetCond(); err != nil {
		return err
	}
	nc := s.NetCond
	if nc == nil {
		mech := MechNFQueue
		if netemAvailable() {
			mech = MechNetem
		}
		nc = &NetConds{Mechanism: mech, Chain: chainName(s.Dir)}
	}
	conds := slices.DeleteFunc(slices.Clone(nc.Conds), func(x NetCond) bool { return x.Path == p.String() })
	conds = append(conds, NetCond{Path: p.String(), Condition: c})
	slices.SortFunc(conds, func(a, b NetCond) int { return strings.Compare(a.Path, b.Path) })
	return s.applyNet(ctx, nc, conds)
}

// ClearNetCondition removes path p's condition, leaving the others.
func (s *State) ClearNetCondition(ctx context.Context, p NetPath) error {
	if s.NetCond == nil {
		return nil
	}
	conds := slices.DeleteFunc(slices.Clone(s.NetCond.Conds), func(x NetCond) bool { return x.Path == p.String() })
	if len(conds) == 0 {
		return s.ClearNetConditions(ctx)
	}
	if err := s.checkNetCond(); err != nil {
		return err
	}
	return s.applyNet(ctx, s.NetCond, conds)
}

// ClearNetConditions removes every rule, qdisc, cgroup and process kplan
// added for network conditions. It is safe to call more than once.
func (s *State) ClearNetConditions(context.Context) error {
	nc := s.NetCond
	if nc == nil {
		return nil
	}
	errs := []error{s.teardownRules(nc)}
	errs = append(errs, s.removeNetCgroups(nc))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clearing the lab's network conditions: %w", err)
	}
	s.NetCond = nil
	return s.save()
}

// applyNet replaces the rules in force by those of conds: it saves the
// intent first (so `lab down` finds what to remove), removes the old rules,
// adds the new ones and starts netd for the delays. On failure or
// cancellation it clears everything.
func (s *State) applyNet(ctx context.Context, nc *NetConds, conds []NetCond) (err error) {
	defer func() {
		if err != nil {
			if cerr := s.ClearNetConditions(context.WithoutCancel(ctx)); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	s.NetCond = nc
	if err := s.ensureNetCgroups(nc); err != nil {
		return err
	}
	if err := s.save(); err != nil {
		return err
	}
	if err := s.teardownRules(nc); err != nil {
		return err
	}
	base := queueBase(s.Dir)
	for i := range conds {
		conds[i].Queue = 0
		if nc.Mechanism == MechNFQueue && conds[i].Condition.Delay > 0 {
			conds[i].Queue = base + uint16(i)
		}
	}
	nc.Conds = conds
	if needsHTB(nc) {
		nc.QDisc = fmt.Sprintf("%x:", htbHandle(s.Dir))
	}
	if err := s.save(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if slices.ContainsFunc(conds, func(c NetCond) bool { return c.Queue != 0 }) {
		pid, err := startNetd(ctx, s.Dir)
		if err != nil {
			return err
		}
		nc.NetdPID = pid
		if err := s.save(); err != nil {
			return err
		}
	}
	for _, c := range s.netRules(nc) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := run(c...); err != nil {
			return err
		}
	}
	return nil
}

// needsHTB reports whether a condition needs the lab's HTB qdisc on lo.
func needsHTB(nc *NetConds) bool {
	for _, c := range nc.Conds {
		if c.Condition.Rate > 0 || nc.Mechanism == MechNetem && (c.Condition.Delay > 0 || c.Condition.Loss > 0 && c.Condition.Loss < 1) {
			return true
		}
	}
	return false
}

// match is the iptables match of path p's packets.
func (s *State) match(nc *NetConds, p string) [][]string {
	if p != PathClients {
		id, _ := ParseBroker(strings.TrimPrefix(p, "broker-"))
		for i, n := range s.Nodes {
			if n.ID == id && n.Broker {
				return [][]string{{"-m", "cgroup", "--cgroup", fmt.Sprintf("0x%08x", classid(s.Dir, i))}}
			}
		}
		return nil
	}
	var ports []string
	for _, b := range s.Brokers() {
		ports = append(ports, strconv.Itoa(b.Port))
	}
	var out [][]string
	for chunk := range slices.Chunk(ports, 15) { // multiport takes 15 ports
		out = append(out, []string{"-p", "tcp", "-m", "multiport", "--dports", strings.Join(chunk, ",")})
	}
	return out
}

// netRules are the commands that put nc's conditions in force, in order.
// teardownRules undoes them.
func (s *State) netRules(nc *NetConds) [][]string {
	ch := nc.Chain
	cmds := [][]string{
		{"iptables", "-w", "-t", "filter", "-N", ch},
		{"iptables", "-w", "-t", "filter", "-I", "OUTPUT", "-j", ch},
	}
	htb := needsHTB(nc)
	h := htbHandle(s.Dir)
	if htb {
		cmds = append(cmds,
			[]string{"iptables", "-w", "-t", "mangle", "-N", ch},
			[]string{"iptables", "-w", "-t", "mangle", "-I", "POSTROUTING", "-j", ch},
			// No default class: unclassified packets pass HTB's direct queue unshaped.
			[]string{"tc", "qdisc", "add", "dev", "lo", "root", "handle", fmt.Sprintf("%x:", h), "htb"})
	}
	// The lab's own JVMs leave the chain before the clients' rules.
	var nodeReturns [][]string
	for i := range s.Nodes {
		nodeReturns = append(nodeReturns, []string{"-m", "cgroup", "--cgroup", fmt.Sprintf("0x%08x", classid(s.Dir, i)), "-j", "RETURN"})
	}
	var filter, mangle [][]string
	returned := false
	for i, c := range nc.Conds {
		if c.Path == PathClients && !returned {
			filter = append(filter, nodeReturns...)
			mangle = append(mangle, nodeReturns...)
			returned = true
		}
		cond := c.Condition
		minor := 10 + i
		useClass := cond.Rate > 0 || nc.Mechanism == MechNetem && (cond.Delay > 0 || cond.Loss > 0 && cond.Loss < 1)
		if useClass {
			rate := "100gbit"
			if cond.Rate > 0 {
				rate = fmt.Sprintf("%dbit", cond.Rate*8)
			}
			cls := fmt.Sprintf("%x:%x", h, minor)
			cmds = append(cmds, []string{"tc", "class", "add", "dev", "lo", "parent", fmt.Sprintf("%x:", h), "classid", cls, "htb", "rate", rate, "ceil", rate})
			if nc.Mechanism == MechNetem && (cond.Delay > 0 || cond.Loss > 0 && cond.Loss < 1) {
				netem := []string{"tc", "qdisc", "add", "dev", "lo", "parent", cls, "handle", fmt.Sprintf("%x:", h+uint32(minor)), "netem", "limit", "1000"}
				if cond.Delay > 0 {
					netem = append(netem, "delay", usec(cond.Delay))
					if cond.Jitter > 0 {
						netem = append(netem, usec(cond.Jitter))
					}
				}
				if cond.Loss > 0 && cond.Loss < 1 {
					netem = append(netem, "loss", FormatLoss(cond.Loss))
				}
				cmds = append(cmds, netem)
			}
			for _, m := range s.match(nc, c.Path) {
				mangle = append(mangle, append(slices.Clone(m), "-j", "CLASSIFY", "--set-class", cls))
			}
		}
		for _, m := range s.match(nc, c.Path) {
			switch {
			case cond.Loss >= 1:
				filter = append(filter, append(slices.Clone(m), "-j", "DROP"))
				continue
			case nc.Mechanism == MechNFQueue && cond.Loss > 0:
				filter = append(filter, append(slices.Clone(m), "-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(cond.Loss, 'f', -1, 64), "-j", "DROP"))
			}
			if c.Queue != 0 {
				filter = append(filter, append(slices.Clone(m), "-j", "NFQUEUE", "--queue-num", strconv.Itoa(int(c.Queue)), "--queue-bypass"))
			}
		}
	}
	for _, r := range filter {
		cmds = append(cmds, append([]string{"iptables", "-w", "-t", "filter", "-A", ch}, r...))
	}
	if htb {
		for _, r := range mangle {
			cmds = append(cmds, append([]string{"iptables", "-w", "-t", "mangle", "-A", ch}, r...))
		}
	}
	return cmds
}

// usec spells d for tc in microseconds.
func usec(d time.Duration) string { return fmt.Sprintf("%dus", d.Microseconds()) }

// teardownRules removes the lab's chains, its qdisc on lo and netd; what is
// already gone is skipped.
func (s *State) teardownRules(nc *NetConds) error {
	var errs []error
	for _, t := range [][2]string{{"filter", "OUTPUT"}, {"mangle", "POSTROUTING"}} {
		if run("iptables", "-w", "-t", t[0], "-n", "-L", nc.Chain) != nil {
			continue // no such chain
		}
		for run("iptables", "-w", "-t", t[0], "-D", t[1], "-j", nc.Chain) == nil {
		}
		for _, c := range [][]string{{"-F", nc.Chain}, {"-X", nc.Chain}} {
			if err := run(append([]string{"iptables", "-w", "-t", t[0]}, c...)...); err != nil {
				errs = append(errs, err)
			}
		}
	}
	h := fmt.Sprintf("%x:", htbHandle(s.Dir))
	if out, err := exec.Command("tc", "qdisc", "show", "dev", "lo").Output(); err == nil && strings.Contains(string(out), "qdisc htb "+h+" root") {
		if err := run("tc", "qdisc", "del", "dev", "lo", "root", "handle", h, "htb"); err != nil {
			errs = append(errs, err)
		}
	}
	nc.QDisc = ""
	if err := stopNetd(nc.NetdPID, s.Dir); err != nil {
		errs = append(errs, err)
	} else {
		nc.NetdPID = 0
	}
	return errors.Join(errs...)
}

// netClsMounted reports whether the net_cls controller is at netClsRoot.
func netClsMounted() bool {
	_, err := os.Stat(filepath.Join(netClsRoot, "net_cls.classid"))
	return err == nil
}

// ensureNetCgroups puts every running lab JVM in a net_cls cgroup of its own
// with the node's classid; existing sockets take the classid too.
func (s *State) ensureNetCgroups(nc *NetConds) error {
	if !netClsMounted() {
		if err := os.MkdirAll(netClsRoot, 0o755); err != nil {
			return fmt.Errorf("net_cls cgroup: %w", err)
		}
		if err := run("mount", "-t", "cgroup", "-o", "net_cls", "net_cls", netClsRoot); err != nil {
			return errkind.Wrap(errkind.Usage, netcondField, fmt.Errorf("needs the cgroup v1 net_cls controller: %w", err))
		}
	}
	if nc.Cgroups == nil {
		nc.Cgroups = map[int32]string{}
	}
	base := filepath.Join(netClsRoot, fmt.Sprintf("kplan-%08x", labHash(s.Dir)))
	for i, n := range s.Nodes {
		dir := filepath.Join(base, fmt.Sprintf("node-%d", n.ID))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("net_cls cgroup: %w", err)
		}
		nc.Cgroups[n.ID] = dir
		if err := os.WriteFile(filepath.Join(dir, "net_cls.classid"), []byte(strconv.FormatUint(uint64(classid(s.Dir, i)), 10)), 0o644); err != nil {
			return fmt.Errorf("net_cls cgroup %s: %w", dir, err)
		}
		if n.Alive() {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(n.PID)), 0o644); err != nil {
				return fmt.Errorf("moving node-%d (pid %d) into %s: %w", n.ID, n.PID, dir, err)
			}
		}
	}
	return nil
}

// removeNetCgroups moves the JVMs back to the net_cls root and removes the
// lab's cgroups.
func (s *State) removeNetCgroups(nc *NetConds) error {
	var errs []error
	var parent string
	for _, dir := range nc.Cgroups {
		parent = filepath.Dir(dir)
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			_ = os.WriteFile(filepath.Join(netClsRoot, "cgroup.procs"), []byte(pid), 0o644) // an exited pid is gone already
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if parent != "" {
		if err := os.Remove(parent); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		nc.Cgroups = nil
	}
	return errors.Join(errs...)
}

// NetdEnv, when set in a process's environment to a lab directory, makes
// kplan's test binaries run netd instead of their tests (see RunNetd).
const NetdEnv = "KPLAN_LAB_NETD"

// startNetd starts the delay process for the lab in dir in a session of
// its own (it outlives this process) and waits until it serves its queues.
func startNetd(ctx context.Context, dir string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("netd: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "netd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close() //nolint:errcheck // the child holds its own descriptor
	args := []string{"lab", "netd", "--dir", dir}
	if strings.HasSuffix(exe, ".test") {
		// A test binary serves as netd from its TestMain (MaybeNetd);
		// one without it then runs no test and fails the ready check.
		args = append([]string{"-test.run=^$"}, args...)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), NetdEnv+"="+dir)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	CloseInheritedOnExec()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting netd: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // its log says why it ended
	ready := make(chan error, 1)
	go func() {
		b := make([]byte, len("ready\n"))
		n, err := io.ReadFull(out, b)
		if err == nil && string(b[:n]) != "ready\n" {
			err = fmt.Errorf("netd said %q", b[:n])
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(10 * time.Second):
		err = errors.New("not ready within 10s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("netd (log %s): %w: %s", logf.Name(), err, tail(logf.Name(), 3))
	}
	return cmd.Process.Pid, nil
}

// netdAlive reports whether pid is the lab's netd.
func netdAlive(pid int, dir string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil || zombie(pid) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), "netd\x00--dir\x00"+dir+"\x00")
}

// NetdAlive reports whether the lab's delay process runs.
func (s *State) NetdAlive() bool {
	return s.NetCond != nil && netdAlive(s.NetCond.NetdPID, s.Dir)
}

// stopNetd ends the lab's netd: SIGTERM (it accepts what it holds), then
// SIGKILL after 2s.
func stopNetd(pid int, dir string) error {
	if !netdAlive(pid, dir) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 100 && netdAlive(pid, dir); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if netdAlive(pid, dir) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("killing netd (pid %d): %w", pid, err)
		}
	}
	return nil
}

// CheckNetConditions tells why network conditions cannot be set on this lab
// here (a lab with --broker-bandwidth, not root, iptables or tc missing).
func (s *State) CheckNetConditions() error { return s.checkNetCond() }

// PlanNetCondition returns, reading only, the commands that would put c on
// path p next to the conditions in force (the net_cls cgroups and netd
// aside), one shell line each, and the mechanism.
func (s *State) PlanNetCondition(p NetPath, c Condition) ([]string, string, error) {
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	if p.Broker > 0 {
		if _, err := s.Node(p.Broker); err != nil {
			return nil, "", errkind.Wrap(errkind.Usage, FieldNetBroker, err)
		}
	}
	if err := s.checkNetCond(); err != nil {
		return nil, "", err
	}
	nc := &NetConds{Mechanism: MechNFQueue, Chain: chainName(s.Dir)}
	if s.NetCond != nil {
		nc.Mechanism = s.NetCond.Mechanism
		nc.Conds = slices.DeleteFunc(slices.Clone(s.NetCond.Conds), func(x NetCond) bool { return x.Path == p.String() })
	} else if netemAvailable() {
		nc.Mechanism = MechNetem
	}
	nc.Conds = append(nc.Conds, NetCond{Path: p.String(), Condition: c})
	slices.SortFunc(nc.Conds, func(a, b NetCond) int { return strings.Compare(a.Path, b.Path) })
	for i := range nc.Conds {
		if nc.Mechanism == MechNFQueue && nc.Conds[i].Condition.Delay > 0 {
			nc.Conds[i].Queue = queueBase(s.Dir) + uint16(i)
		}
	}
	var lines []string
	for _, c := range s.netRules(nc) {
		lines = append(lines, strings.Join(c, " "))
	}
	return lines, nc.Mechanism, nil
}
