package localkafka

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PortHolder names what listens on TCP port on this machine: "pid N
// (command)", with the lab directory when the holder is a lab's JVM, or ""
// when it cannot tell (not Linux, another user's process, no listener).
// It reads /proc/net/tcp and tcp6 for the listening socket and the
// processes' open files for that socket.
func PortHolder(port int) string {
	return portHolder("/proc", port)
}

func portHolder(proc string, port int) string {
	inodes := map[string]bool{}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		file, err := os.Open(filepath.Join(proc, f))
		if err != nil {
			continue
		}
		for _, ino := range listeningInodes(file, port) {
			inodes[ino] = true
		}
		_ = file.Close()
	}
	if len(inodes) == 0 {
		return ""
	}
	pids, err := filepath.Glob(filepath.Join(proc, "[0-9]*"))
	if err != nil {
		return ""
	}
	for _, dir := range pids {
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(target, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] {
				return describeProcess(dir)
			}
		}
	}
	return ""
}

// listeningInodes returns the socket inodes of /proc/net/tcp(6) lines in
// state LISTEN (0A) on port.
func listeningInodes(r io.Reader, port int) []string {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		p, err := strconv.ParseUint(f[1][i+1:], 16, 16)
		if err != nil || int(p) != port {
			continue
		}
		out = append(out, f[9])
	}
	return out
}

// describeProcess names the process of /proc/PID: its pid and command, and
// the lab directory when its command line holds a lab node's config.
func describeProcess(dir string) string {
	pid := filepath.Base(dir)
	comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
	desc := fmt.Sprintf("pid %s (%s)", pid, strings.TrimSpace(string(comm)))
	cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if strings.HasSuffix(arg, ".properties") && strings.Contains(arg, string(filepath.Separator)+"node-") {
			return fmt.Sprintf("%s of the lab in %s", desc, filepath.Dir(filepath.Dir(arg)))
		}
	}
	return desc
}
