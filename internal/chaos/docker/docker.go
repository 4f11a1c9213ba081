// Package docker is the chaos experiment's killer for brokers in Docker
// containers (Docker Compose): `docker kill --signal KILL` of the container
// --container-template names, checked first with `docker inspect` (it runs,
// and its name, host name, network alias, address or published port is the
// broker's advertised address), restored with `docker start`. The `docker`
// command is found on PATH. Killer implements chaos.Killer.
package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	osexec "os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	chaosexec "github.com/kplan-dev/kplan/internal/chaos/exec"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// Name is the killer's kind as --killer spells it.
const Name = "docker"

// Fields of usage and refusal errors: the flags' names without dashes.
const (
	FieldContainerTemplate = "container-template"
	FieldKillTimeout       = "kill-timeout"
)

// Options configure a docker killer.
type Options struct {
	// ContainerTemplate names a broker's container, e.g. "kafka-{id}".
	ContainerTemplate string
	// Timeout bounds each docker command; 0 means chaosexec.DefaultTimeout.
	Timeout time.Duration
	// Docker is the docker command; "" means "docker" found on PATH.
	Docker string
}

// Validate checks the options; its errors are usage errors naming the
// field.
func (o Options) Validate() error {
	_, err := New(o)
	return err
}

// Killer kills and starts containers.
type Killer struct {
	tmpl    chaosexec.Template
	timeout time.Duration
	docker  string
	log     chaosexec.Log
}

// New returns the killer of o.
func New(o Options) (*Killer, error) {
	if strings.TrimSpace(o.ContainerTemplate) == "" {
		return nil, errkind.Usagef(FieldContainerTemplate, "required with the docker killer (e.g. kafka-{id})")
	}
	if o.Timeout < 0 {
		return nil, errkind.Usagef(FieldKillTimeout, "negative timeout %v", o.Timeout)
	}
	t, err := chaosexec.ParseTemplate(FieldContainerTemplate, o.ContainerTemplate)
	if err != nil {
		return nil, err
	}
	k := &Killer{tmpl: t, timeout: o.Timeout, docker: o.Docker}
	if k.timeout == 0 {
		k.timeout = chaosexec.DefaultTimeout
	}
	if k.docker == "" {
		k.docker = "docker"
	}
	return k, nil
}

// Name implements chaos.Killer.
func (*Killer) Name() string { return Name }

// container is what kplan reads of `docker inspect`.
type container struct {
	Name  string
	State struct {
		Running    bool
		Status     string
		FinishedAt string
	}
	Config struct {
		Hostname string
	}
	NetworkSettings struct {
		Networks map[string]struct {
			IPAddress         string
			GlobalIPv6Address string
			Aliases           []string
			DNSNames          []string
		}
		Ports map[string][]struct {
			HostIP   string `json:"HostIp"`
			HostPort string
		}
	}
}

// name returns the container's name without Docker's leading slash.
func (c *container) name() string { return strings.TrimPrefix(c.Name, "/") }

// matches reports whether the container is the one at host:port: its name,
// host name, a network alias or DNS name, or an address is host (a host
// name matches case-insensitively and by its first label, as a Compose
// service's FQDN would); or host is a loopback address or localhost and the
// container publishes port.
func (c *container) matches(host string, port int32) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	names := []string{c.name(), c.Config.Hostname}
	var addrs []string
	for _, n := range c.NetworkSettings.Networks {
		names = append(names, n.Aliases...)
		names = append(names, n.DNSNames...)
		addrs = append(addrs, n.IPAddress, n.GlobalIPv6Address)
	}
	for _, n := range names {
		n = strings.ToLower(n)
		if n != "" && (h == n || strings.HasPrefix(h, n+".")) {
			return true
		}
	}
	if ip := net.ParseIP(h); ip != nil {
		for _, a := range addrs {
			if a != "" && net.ParseIP(a).Equal(ip) {
				return true
			}
		}
	}
	if ip := net.ParseIP(h); h == "localhost" || ip != nil && ip.IsLoopback() {
		want := strconv.Itoa(int(port))
		for _, bs := range c.NetworkSettings.Ports {
			for _, b := range bs {
				if b.HostPort == want {
					return true
				}
			}
		}
	}
	return false
}

// inspect runs `docker inspect` on name. A container docker does not know
// is a refusal naming it.
func (k *Killer) inspect(ctx context.Context, name string) (*container, error) {
	cctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	cmd := osexec.CommandContext(cctx, k.docker, "inspect", "--type", "container", name)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		if ee := (*osexec.ExitError)(nil); errors.As(err, &ee) {
			msg := strings.TrimSpace(errOut.String())
			if i := strings.IndexByte(msg, '\n'); i >= 0 {
				msg = msg[:i]
			}
			return nil, errkind.Refusedf(FieldContainerTemplate, "container %s: docker inspect: %s", name, msg)
		}
		return nil, fmt.Errorf("docker inspect %s: %w", name, err)
	}
	var cs []container
	if err := json.Unmarshal(out.Bytes(), &cs); err != nil {
		return nil, fmt.Errorf("docker inspect %s: %w", name, err)
	}
	if len(cs) != 1 {
		return nil, errkind.Refusedf(FieldContainerTemplate, "container %s: docker inspect found %d containers", name, len(cs))
	}
	return &cs[0], nil
}

// Plan implements chaos.Killer: the container must run and be broker b.
func (k *Killer) Plan(ctx context.Context, b chaos.Broker) (chaos.KillPlan, error) {
	name, err := k.tmpl.Expand(b)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	c, err := k.inspect(ctx, name)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	if !c.State.Running {
		return chaos.KillPlan{}, errkind.Refusedf(FieldContainerTemplate, "container %s is not running (%s)", name, c.State.Status)
	}
	if !c.matches(b.Host, b.Port) {
		return chaos.KillPlan{}, errkind.Refusedf(FieldContainerTemplate, "container %s is not broker %d: the broker advertises %s:%d, which is not the container's name, host name, alias, address or published port", name, b.ID, b.Host, b.Port)
	}
	kill := strings.Join([]string{k.docker, "kill", "--signal", "KILL", chaosexec.ShellQuote(name)}, " ")
	return chaos.KillPlan{
		Target: "container " + name,
		Steps: []string{
			fmt.Sprintf("`%s` (timeout %v); the container's FinishedAt is the kill time", kill, k.timeout),
			fmt.Sprintf("wait until Kafka's metadata no longer lists broker %d", b.ID),
			fmt.Sprintf("to restore: `%s start %s`", k.docker, chaosexec.ShellQuote(name)),
		},
		Manifest: kill,
	}, nil
}

// Kill implements chaos.Killer: `docker kill --signal KILL`. The kill time
// is the container's FinishedAt as docker reports it, or the command's end
// when docker reports none.
func (k *Killer) Kill(ctx context.Context, b chaos.Broker) (time.Time, error) {
	name, err := k.tmpl.Expand(b)
	if err != nil {
		return time.Time{}, err
	}
	if err := k.log.Run(ctx, k.timeout, k.docker, "kill", "--signal", "KILL", name); err != nil {
		return time.Time{}, fmt.Errorf("kill container %s: %w", name, err)
	}
	end := time.Now()
	c, err := k.inspect(ctx, name)
	if err != nil {
		k.log.Add(fmt.Sprintf("  (docker inspect after the kill failed: %v; kill time: the command's end)", err))
		return end, nil
	}
	at, err := time.Parse(time.RFC3339Nano, c.State.FinishedAt)
	if err != nil || at.Year() < 2000 {
		return end, nil
	}
	k.log.Add(fmt.Sprintf("  container %s finished at %s", name, c.State.FinishedAt))
	return at, nil
}

// Restore implements chaos.Killer: `docker start`.
func (k *Killer) Restore(ctx context.Context, b chaos.Broker) error {
	name, err := k.tmpl.Expand(b)
	if err != nil {
		return err
	}
	if err := k.log.Run(ctx, k.timeout, k.docker, "start", name); err != nil {
		return fmt.Errorf("start container %s: %w", name, err)
	}
	return nil
}

// Cleanup implements chaos.Killer: nothing is left behind.
func (*Killer) Cleanup(context.Context) error { return nil }

// Log implements chaos.Killer.
func (k *Killer) Log() []string { return k.log.Lines() }

// Container returns the container name of broker b.
func (k *Killer) Container(b chaos.Broker) (string, error) { return k.tmpl.Expand(b) }
