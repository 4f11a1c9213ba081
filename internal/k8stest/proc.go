package k8stest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kplan-dev/kplan/internal/localkafka"
)

// proc is one process of the control plane, logging to Dir/<name>.log.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}

	mu  sync.Mutex
	err error // Wait's answer once done is closed
}

// binDirs are where lookPath looks when PATH lacks a program (a test's
// PATH may be pared down).
var binDirs = []string{"/usr/bin", "/usr/sbin", "/usr/local/bin"}

// lookPath finds a program on PATH, else in binDirs.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range binDirs {
		if isFile(filepath.Join(d, name)) {
			return filepath.Join(d, name), nil
		}
	}
	return "", exec.ErrNotFound
}

// spawn starts a control-plane process in a process group of its own that
// dies with this one (Pdeathsig), so nothing outlives the test binary.
func (e *Env) spawn(name, bin string, env []string, args ...string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(e.Dir, name+".log"), done: make(chan struct{})}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // the child holds its own descriptor
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = e.Dir
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	localkafka.CloseInheritedOnExec() // hand no test lock down to the control plane
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	e.procs = append(e.procs, p)
	go func() {
		werr := p.cmd.Wait()
		p.mu.Lock()
		p.err = werr
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) state() string {
	if !p.exited() {
		return "running"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		return "exit 0"
	}
	return p.err.Error()
}

// kill stops p's process group: SIGTERM, then SIGKILL after grace.
func (p *proc) kill(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s (pid %d) still runs after SIGKILL", p.name, pgid)
		}
	}
	// Anything left in the group (none of these programs forks) goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// stop stops the processes in reverse order of start.
func (e *Env) stop() error {
	var errs []error
	for i := len(e.procs) - 1; i >= 0; i-- {
		if err := e.procs[i].kill(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
