// Package exec is the chaos experiment's killer that runs any command:
// --kill-cmd and --restore-cmd templates with {id}, {host} and {port}, run
// through `sh -c` with a timeout (e.g. `ssh {host} sudo systemctl kill -s
// KILL kafka`). What the commands print goes into the killer's log, and so
// into the report. Killer implements chaos.Killer.
package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	osexec "os/exec"
	"strings"
	"sync"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// Name is the killer's kind as --killer spells it.
const Name = "exec"

// DefaultTimeout bounds each command when Options.Timeout is 0.
const DefaultTimeout = 60 * time.Second

// Fields of usage errors: the flags' names without dashes.
const (
	FieldKillCmd     = "kill-cmd"
	FieldRestoreCmd  = "restore-cmd"
	FieldKillTimeout = "kill-timeout"
)

// Options configure an exec killer.
type Options struct {
	// KillCmd kills the broker; RestoreCmd ("" for none) brings it back.
	KillCmd, RestoreCmd string
	// Timeout bounds each command; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Validate checks the templates; its errors are usage errors naming the
// field.
func (o Options) Validate() error {
	_, err := New(o)
	return err
}

// Killer runs the kill and restore commands.
type Killer struct {
	kill, restore Template
	timeout       time.Duration
	log           Log
}

// New returns the killer of o.
func New(o Options) (*Killer, error) {
	if strings.TrimSpace(o.KillCmd) == "" {
		return nil, errkind.Usagef(FieldKillCmd, "required with the exec killer (e.g. 'ssh {host} sudo systemctl kill -s KILL kafka')")
	}
	if o.Timeout < 0 {
		return nil, errkind.Usagef(FieldKillTimeout, "negative timeout %v", o.Timeout)
	}
	k := &Killer{timeout: o.Timeout}
	if k.timeout == 0 {
		k.timeout = DefaultTimeout
	}
	var err error
	if k.kill, err = ParseTemplate(FieldKillCmd, o.KillCmd); err != nil {
		return nil, err
	}
	if k.restore, err = ParseTemplate(FieldRestoreCmd, o.RestoreCmd); err != nil {
		return nil, err
	}
	return k, nil
}

// Name implements chaos.Killer.
func (*Killer) Name() string { return Name }

// CanRestore reports whether a restore command was given.
func (k *Killer) CanRestore() bool { return !k.restore.Empty() }

// Plan implements chaos.Killer: the command, expanded for b.
func (k *Killer) Plan(_ context.Context, b chaos.Broker) (chaos.KillPlan, error) {
	cmd, err := k.kill.Expand(b)
	if err != nil {
		return chaos.KillPlan{}, err
	}
	p := chaos.KillPlan{
		Target: fmt.Sprintf("broker %d at %s:%d", b.ID, b.Host, b.Port),
		Steps: []string{
			fmt.Sprintf("run `sh -c %s` (timeout %v); its end is the kill time", shellQuote(cmd), k.timeout),
			fmt.Sprintf("wait until Kafka's metadata no longer lists broker %d", b.ID),
		},
		Manifest: cmd,
	}
	if !k.restore.Empty() {
		rc, err := k.restore.Expand(b)
		if err != nil {
			return chaos.KillPlan{}, err
		}
		p.Steps = append(p.Steps, fmt.Sprintf("to restore: run `sh -c %s`", shellQuote(rc)))
	}
	return p, nil
}

// Kill implements chaos.Killer: it runs the kill command and returns when
// it ended successfully, the kill time.
func (k *Killer) Kill(ctx context.Context, b chaos.Broker) (time.Time, error) {
	cmd, err := k.kill.Expand(b)
	if err != nil {
		return time.Time{}, err
	}
	if err := k.log.Run(ctx, k.timeout, "sh", "-c", cmd); err != nil {
		return time.Time{}, fmt.Errorf("kill command for broker %d: %w", b.ID, err)
	}
	return time.Now(), nil
}

// Restore implements chaos.Killer: it runs the restore command.
func (k *Killer) Restore(ctx context.Context, b chaos.Broker) error {
	if k.restore.Empty() {
		return errkind.Usagef(FieldRestoreCmd, "broker %d cannot be restored: no restore command", b.ID)
	}
	cmd, err := k.restore.Expand(b)
	if err != nil {
		return err
	}
	if err := k.log.Run(ctx, k.timeout, "sh", "-c", cmd); err != nil {
		return fmt.Errorf("restore command for broker %d: %w", b.ID, err)
	}
	return nil
}

// Cleanup implements chaos.Killer: commands leave nothing behind.
func (*Killer) Cleanup(context.Context) error { return nil }

// Log implements chaos.Killer.
func (k *Killer) Log() []string { return k.log.Lines() }

// Log is the record of the commands a killer ran and what they printed.
// Its methods are safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	lines []string
}

// maxOutputLines bounds the lines of one command's output kept in the log
// (the last ones).
const maxOutputLines = 40

// Run runs name with args within timeout, recording the command line, its
// output (stdout and stderr together) and its outcome. A failure, a
// timeout included, is an error carrying the output's last line.
func (l *Log) Run(ctx context.Context, timeout time.Duration, name string, args ...string) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := osexec.CommandContext(cctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A command's children (ssh, a shell's pipeline) may keep the output
	// open after it was killed: stop waiting for them.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(time.Millisecond)
	l.Add("$ " + display(name, args))
	text := strings.TrimRight(out.String(), "\n")
	var outLines []string
	if text != "" {
		outLines = strings.Split(text, "\n")
	}
	if len(outLines) > maxOutputLines {
		l.Add(fmt.Sprintf("  | ... %d lines left out", len(outLines)-maxOutputLines))
		outLines = outLines[len(outLines)-maxOutputLines:]
	}
	for _, s := range outLines {
		l.Add("  | " + s)
	}
	last := ""
	if len(outLines) > 0 {
		last = ": " + strings.TrimSpace(outLines[len(outLines)-1])
	}
	switch {
	case err == nil:
		l.Add(fmt.Sprintf("  exit 0 after %v", took))
		return nil
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		l.Add(fmt.Sprintf("  timed out after %v", timeout))
		return fmt.Errorf("%s: timed out after %v%s: %w", name, timeout, last, cctx.Err())
	default:
		l.Add(fmt.Sprintf("  failed after %v: %v", took, err))
		return fmt.Errorf("%s%s: %w", display(name, args), last, err)
	}
}

// Add appends a line.
func (l *Log) Add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

// Lines returns the log so far, nil when empty.
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return nil
	}
	return append([]string(nil), l.lines...)
}

// display is a command line as a shell would read it.
func display(name string, args []string) string {
	if name == "sh" && len(args) == 2 && args[0] == "-c" {
		return args[1]
	}
	parts := []string{name}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !isAlnum(r) && !strings.ContainsRune("-_./:=@%+,", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string { return shellQuote(s) }
