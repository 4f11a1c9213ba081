package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/internal/cmdutil"
)

// FuzzExperimentFile: an experiment file (--workload or --file: chaos and
// workload YAML) never panics the command's option parsing, which reads it
// through loadFile; a file it rejects is a usage error on one line. The
// corpus holds every shipped experiment (chaos/*.yaml), read from a
// directory where their relative layout paths resolve as in the repository.
func FuzzExperimentFile(f *testing.F) {
	repo, err := filepath.Abs("../../..")
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "chaos"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "testdata"), filepath.Join(dir, "testdata")); err != nil {
		f.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(repo, "chaos", "*.yaml"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no experiment files: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{
		"kill: busiest\nlayout: ../testdata/layouts/thesis-6-4.json\nrates:\n  A: 2MB/s\n  B: 1MB/s\nkeys:\n  A: zipf:1.1:1000\n  B: none\npartitioner: [roundrobin, node]\n",
		"kill: none\nlayout: ../testdata/layouts/thesis-6-4.json\nrates:\n  A: fast\n",
		"kill: none\nkeys:\n  A: [1]\n",
		"kill: none\npartitioner: {a: b}\n",
		"kill: none\nworkload: other.yaml\n",
		"kill: none\nkill: none\n",
		"- a\n",
		"",
		"kill: leader-of:t/0\nassignment: \"1,2;2,3;3,1\"\nphase-duration: 1m30s\nrate: 10MB/s\n",
		"cluster: lab\nfault: delay:broker-2:200ms\npartitioner: [roundrobin, sqf]\nrate: 1MB/s\n",
		"cluster: lab\nfault: loss:broker-2:10%\nkill: broker-3\nrestore: true\n",
		"cluster: lab\nfault: partition:broker-2\n",
		"fault: delay:broker-2:100ms:20ms\n",
	} {
		f.Add(s)
	}
	p := filepath.Join(dir, "chaos", "x.yaml")
	f.Fuzz(func(t *testing.T, body string) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := parse(t, "--workload", p)
		if err != nil {
			if code := cmdutil.ExitCode(err); code != cmdutil.ExitUsage {
				t.Fatalf("exit %d, not a usage error: %v", code, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if o == nil {
			t.Fatal("no error and no options")
		}
	})
}
