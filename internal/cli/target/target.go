// Package target declares, once for every verb that reaches a Kafka
// cluster, the flags that say how: --bootstrap-server, --command-config,
// --timeout and --lab-dir, with one help text and one check each, and
// resolves the connection they describe once (the command config read a
// single time, every client of the command built from the result).
//
// Verbs keep their own notes after a flag's shared help text (what the
// flag means to them: "needs --yes", "with --killer"); the name, the
// default, the base text and the validation live here. Options binds the
// whole group; the *Var functions bind one flag to a variable a verb
// already has (cli/chaos and measure unavailability, whose flag sets are
// shared with other options). KillerFlags is the other shared group: the
// killer of a --bootstrap-server cluster and its 20 flags, bound into a
// killers.Spec that checks itself.
package target

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// The flags' names.
const (
	FlagBootstrap     = "bootstrap-server"
	FlagCommandConfig = "command-config"
	FlagTimeout       = "timeout"
	FlagLabDir        = "lab-dir"
)

// DefaultTimeout is --timeout's default.
const DefaultTimeout = 10 * time.Second

// The flags' shared help texts; a verb's note follows after "; ".
const (
	helpBootstrap     = "the Kafka cluster: HOST:PORT[,HOST:PORT...]"
	helpCommandConfig = "Kafka client properties file (bootstrap.servers, security.protocol, sasl.*, ssl.* as PEM)"
	helpTimeout       = "give up on connecting and on each request to the cluster after this long"
	helpLabDir        = "the kplan lab's directory (default: kplan lab's)"
)

func help(base, note string) string {
	if note == "" {
		return base
	}
	return base + "; " + note
}

// BootstrapVar declares --bootstrap-server on fs, bound to p.
func BootstrapVar(fs *pflag.FlagSet, p *string, note string) {
	fs.StringVar(p, FlagBootstrap, "", help(helpBootstrap, note))
}

// CommandConfigVar declares --command-config on fs, bound to p.
func CommandConfigVar(fs *pflag.FlagSet, p *string, note string) {
	fs.StringVar(p, FlagCommandConfig, "", help(helpCommandConfig, note))
}

// TimeoutVar declares --timeout on fs, bound to p (default 10s).
func TimeoutVar(fs *pflag.FlagSet, p *time.Duration, note string) {
	fs.DurationVar(p, FlagTimeout, DefaultTimeout, help(helpTimeout, note))
}

// LabDirVar declares --lab-dir on fs, bound to p.
func LabDirVar(fs *pflag.FlagSet, p *string, note string) {
	fs.StringVar(p, FlagLabDir, "", help(helpLabDir, note))
}

// CheckBootstrap refuses a --bootstrap-server given with no address.
func CheckBootstrap(fs *pflag.FlagSet, v string) error {
	if fs.Changed(FlagBootstrap) && strings.Trim(v, " ,") == "" {
		return errkind.Usagef("", "--%s: no address given", FlagBootstrap)
	}
	return nil
}

// CheckTimeout refuses a --timeout that is not positive.
func CheckTimeout(d time.Duration) error {
	if d <= 0 {
		return errkind.Usagef("", "--%s: want a positive duration, got %s", FlagTimeout, d)
	}
	return nil
}

// CheckLabDir refuses a --lab-dir given empty.
func CheckLabDir(fs *pflag.FlagSet, v string) error {
	if fs.Changed(FlagLabDir) && v == "" {
		return errkind.Usagef("", "--%s: empty", FlagLabDir)
	}
	return nil
}

// Resolve reads conn's command config once (kafka.ConnOptions.Resolve); a
// bad file is the user's input (exit 2), its one-line message naming the
// file, the line and the key.
func Resolve(conn kafka.ConnOptions) (kafka.ConnOptions, error) {
	r, err := conn.Resolve()
	if err != nil {
		return conn, errkind.Wrap(errkind.Usage, "", err)
	}
	return r, nil
}

// Flag selects flags of the group.
type Flag uint8

// The flags of the group.
const (
	Bootstrap Flag = 1 << iota
	CommandConfig
	Timeout
	LabDir
	// Conn is the connection: --bootstrap-server, --command-config and
	// --timeout.
	Conn = Bootstrap | CommandConfig | Timeout
)

// Notes are a verb's notes after the shared help texts ("" none).
type Notes struct {
	Bootstrap, CommandConfig, Timeout, LabDir string
}

// Options are the group's flags as one verb declared them.
type Options struct {
	BootstrapServers string
	CommandConfig    string
	Timeout          time.Duration
	LabDir           string

	fs       *pflag.FlagSet
	declared Flag
	conn     *kafka.ConnOptions // resolved once by ConnOptions
}

// AddFlags declares the flags of which on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet, which Flag, n Notes) {
	o.fs, o.declared = fs, which
	o.Timeout = DefaultTimeout
	if which&Bootstrap != 0 {
		BootstrapVar(fs, &o.BootstrapServers, n.Bootstrap)
	}
	if which&CommandConfig != 0 {
		CommandConfigVar(fs, &o.CommandConfig, n.CommandConfig)
	}
	if which&Timeout != 0 {
		TimeoutVar(fs, &o.Timeout, n.Timeout)
	}
	if which&LabDir != 0 {
		LabDirVar(fs, &o.LabDir, n.LabDir)
	}
}

// Live reports whether a cluster address was asked for: --bootstrap-server
// or --command-config (whose bootstrap.servers may hold it).
func (o *Options) Live() bool { return o.BootstrapServers != "" || o.CommandConfig != "" }

// Validate checks the declared flags: an address given empty, a timeout
// that is not positive, an empty --lab-dir. The command config is read
// and checked by ConnOptions.
func (o *Options) Validate() error {
	if o.fs == nil {
		return nil
	}
	if o.declared&Bootstrap != 0 {
		if err := CheckBootstrap(o.fs, o.BootstrapServers); err != nil {
			return err
		}
	}
	if o.declared&Timeout != 0 {
		if err := CheckTimeout(o.Timeout); err != nil {
			return err
		}
	}
	if o.declared&LabDir != 0 {
		return CheckLabDir(o.fs, o.LabDir)
	}
	return nil
}

// ConnOptions is the connection the flags describe, resolved once: the
// first call reads --command-config, later ones return the same options.
// Errors exit 2 and name the file, the line and the key.
func (o *Options) ConnOptions() (kafka.ConnOptions, error) {
	if o.conn != nil && o.conn.BootstrapServers == o.BootstrapServers && o.conn.CommandConfig == o.CommandConfig && o.conn.Timeout == o.Timeout {
		return *o.conn, nil
	}
	c, err := Resolve(kafka.ConnOptions{BootstrapServers: o.BootstrapServers, CommandConfig: o.CommandConfig, Timeout: o.Timeout})
	if err != nil {
		return c, err
	}
	o.conn = &c
	return c, nil
}

// LabOrLive resolves a verb's --cluster value against the connection
// flags: "lab" (the kplan lab, which knows its own addresses: no
// --bootstrap-server) returns true; "" needs a live cluster
// (--bootstrap-server, or a --command-config holding bootstrap.servers)
// and returns false. Anything else is an unknown cluster. Errors exit 2.
func (o *Options) LabOrLive(cluster string) (bool, error) {
	switch cluster {
	case "":
		if !o.Live() {
			return false, errkind.Usagef("", "--bootstrap-server: required (or --cluster lab)")
		}
		return false, nil
	case "lab":
		if o.BootstrapServers != "" {
			return false, errkind.Usagef("", "--bootstrap-server: not with --cluster lab (the lab knows its own addresses)")
		}
		return true, nil
	}
	return false, errkind.Usagef("", "--cluster: unknown cluster %q (want lab, or --bootstrap-server)", cluster)
}
