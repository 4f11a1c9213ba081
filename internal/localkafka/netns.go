package localkafka

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"strings"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Per-broker capacity (--broker-bandwidth): every node runs in a network
// namespace of its own, joined to a lab bridge by a veth pair, and each
// broker's link carries a tc token-bucket (tbf) limit in both directions.
// Addresses are 10.213.<net>.<10+i>/24, which exist only on the lab's
// bridge and inside the namespaces the lab created; the bridge holds
// 10.213.<net>.1 so kplan itself reaches the brokers.

// Net records what the lab created, so Down can remove exactly that.
type Net struct {
	Subnet     int      `json:"subnet"`
	Bridge     string   `json:"bridge"`
	Namespaces []string `json:"namespaces"`
	// RateBytes is each broker link's limit in bytes per second.
	RateBytes int64 `json:"rate_bytes_per_sec"`
}

// CheckNetPrivileges tells why per-broker bandwidth cannot work here.
func CheckNetPrivileges() error {
	if !isRoot() {
		return errkind.Usagef(FieldBrokerBandwidth, "needs root (network namespaces and tc)")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return errkind.Usagef(FieldBrokerBandwidth, "needs iproute2's %s on PATH", tool)
		}
	}
	return nil
}

// subnetFor picks the lab's third octet from its directory (1..249).
func subnetFor(dir string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dir))
	return int(h.Sum32()%249) + 1
}

// hostLink names the root-namespace end of node id's veth pair.
func hostLink(subnet int, id int32) string { return fmt.Sprintf("kpl%dh%d", subnet, id) }

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setupNet creates the bridge, one namespace and veth pair per node, and the
// tbf limits on broker links. On failure it removes what it made.
func (s *State) setupNet(rate int64) (err error) {
	x := subnetFor(s.Dir)
	n := &Net{Subnet: x, Bridge: fmt.Sprintf("kpl%dbr", x), RateBytes: rate}
	s.Net = n
	defer func() {
		if err != nil {
			s.teardownNet() //nolint:errcheck // the setup error is the one to report
		}
	}()
	if _, e := os.Stat("/sys/class/net/" + n.Bridge); e == nil {
		return errkind.Usagef("", "network bridge %s exists: another lab with bandwidth limits runs from %s? (kplan lab down)", n.Bridge, s.Dir)
	}
	if err := run("ip", "link", "add", n.Bridge, "type", "bridge"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", fmt.Sprintf("10.213.%d.1/24", x), "dev", n.Bridge); err != nil {
		return err
	}
	if err := run("ip", "link", "set", n.Bridge, "up"); err != nil {
		return err
	}
	bits := fmt.Sprintf("%dbit", rate*8)
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		ns := fmt.Sprintf("kplan-%d-%d", x, nd.ID)
		host, peer := hostLink(x, nd.ID), fmt.Sprintf("kpl%dn%d", x, nd.ID)
		nd.Netns = ns
		n.Namespaces = append(n.Namespaces, ns)
		cmds := [][]string{
			{"ip", "netns", "add", ns},
			{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
			{"ip", "link", "set", peer, "netns", ns},
			{"ip", "link", "set", host, "master", n.Bridge, "up"},
			{"ip", "netns", "exec", ns, "ip", "addr", "add", nd.Addr + "/24", "dev", peer},
			{"ip", "netns", "exec", ns, "ip", "link", "set", peer, "up"},
			{"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
		}
		if nd.Broker {
			cmds = append(cmds,
				[]string{"tc", "qdisc", "add", "dev", host, "root", "tbf", "rate", bits, "burst", "64kbit", "latency", "50ms"},
				[]string{"ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", peer, "root", "tbf", "rate", bits, "burst", "64kbit", "latency", "50ms"})
		}
		for _, c := range cmds {
			if err := run(c...); err != nil {
				return err
			}
		}
	}
	return nil
}

// teardownNet deletes the namespaces (their veths go with them) and the
// bridge the lab made.
func (s *State) teardownNet() error {
	if s.Net == nil {
		return nil
	}
	var errs []error
	// Delete the host ends first: that removes both ends at once, whereas a
	// deleted namespace frees its veths later, in the kernel's own time, and
	// an immediate `lab up` would find the names still taken.
	for _, nd := range s.Nodes {
		host := hostLink(s.Net.Subnet, nd.ID)
		if _, err := os.Stat("/sys/class/net/" + host); err == nil {
			if err := run("ip", "link", "del", host); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, ns := range s.Net.Namespaces {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			if err := run("ip", "netns", "del", ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := os.Stat("/sys/class/net/" + s.Net.Bridge); err == nil {
		if err := run("ip", "link", "del", s.Net.Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
