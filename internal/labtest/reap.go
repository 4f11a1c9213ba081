package labtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kplan-dev/kplan/internal/localkafka"
)

// dirPattern names the directories of the pool's labs under os.TempDir().
const dirPattern = "kplan-labtest-*"

// labSubdir is the lab's own directory inside a directory of the pool.
const labSubdir = "lab"

// ownerFile, in a directory of the pool (beside the lab's), names the test binary that
// started the lab: its pid and that process's start time (the 22nd field
// of /proc/PID/stat, in clock ticks since boot), so that a reused pid is
// not taken for the owner.
const ownerFile = "labtest-owner"

// owner is a process: its pid and start time.
type owner struct {
	PID   int
	Start string
}

func (o owner) String() string { return strconv.Itoa(o.PID) + " " + o.Start }

// self is this process as an owner.
func self() (owner, error) {
	st, err := procStart(os.Getpid())
	if err != nil {
		return owner{}, err
	}
	return owner{PID: os.Getpid(), Start: st}, nil
}

// procStart returns the start time of pid (/proc/PID/stat's 22nd field).
func procStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The fields after the parenthesised command name (which may hold
	// spaces) start at the 3rd: the start time is the 20th of them.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	return f[19], nil
}

// alive reports whether o still runs: the pid exists and started when o
// did.
func (o owner) alive() bool {
	st, err := procStart(o.PID)
	return err == nil && st == o.Start
}

// writeOwner records this process as the owner of the lab in dir.
func writeOwner(dir string) error {
	o, err := self()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(o.String()+"\n"), 0o644)
}

// readOwner reads dir's owner file; ok is false when there is none.
func readOwner(dir string) (o owner, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return owner{}, false, nil
	}
	if err != nil {
		return owner{}, false, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return owner{}, false, fmt.Errorf("%s: want \"PID START\", got %q", filepath.Join(dir, ownerFile), b)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return owner{}, false, fmt.Errorf("%s: %w", filepath.Join(dir, ownerFile), err)
	}
	return owner{PID: pid, Start: f[1]}, true, nil
}

// Reaped is one orphaned lab that reap stopped.
type Reaped struct {
	Dir   string
	Owner int
	// Stopped is the pids of the processes it stopped: the lab's JVMs and
	// any other process whose argv names the directory.
	Stopped []int
}

// reap stops the labs of the pool under root whose test binary is gone
// (killed, so its Main never stopped them): their JVMs, network
// namespaces, cgroups and network conditions (localkafka's Down), then any
// process still naming the directory. It leaves the directory, as Main
// does after a failed run, for post-mortems, without its owner file, so
// the lab is reaped once. Labs of running binaries, and directories
// without an owner file (being created, or not the pool's), are left
// alone.
func reap(root string) ([]Reaped, error) {
	dirs, err := filepath.Glob(filepath.Join(root, dirPattern))
	if err != nil {
		return nil, err
	}
	var out []Reaped
	var errs []error
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		o, ok, err := readOwner(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok || o.alive() {
			continue
		}
		r := Reaped{Dir: dir, Owner: o.PID}
		if s, lerr := localkafka.Load(filepath.Join(dir, labSubdir)); lerr == nil {
			for _, n := range s.Nodes {
				if n.Alive() {
					r.Stopped = append(r.Stopped, n.PID)
				}
			}
			if derr := s.Down(5 * time.Second); derr != nil {
				errs = append(errs, fmt.Errorf("stopping the orphaned lab %s: %w", dir, derr))
			}
		}
		left, err := stopProcessesOf(dir)
		r.Stopped = append(r.Stopped, left...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(filepath.Join(dir, ownerFile)); err != nil {
			errs = append(errs, err)
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// stopProcessesOf kills (SIGKILL) every process whose argv names dir and
// waits up to 5 s until none is left; it returns the pids it killed.
func stopProcessesOf(dir string) ([]int, error) {
	pids, err := localkafka.ProcessesOf(dir)
	if err != nil {
		return nil, err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for range 100 {
		left, err := localkafka.ProcessesOf(dir)
		if err != nil {
			return pids, err
		}
		if len(left) == 0 {
			return pids, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pids, fmt.Errorf("processes of the orphaned lab %s still run after SIGKILL", dir)
}
