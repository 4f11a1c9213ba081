package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/report"
)

func run(args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

func TestRootHelpListsExitCodesAndVersion(t *testing.T) {
	code, out, _ := run("--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Exit codes:")
	assert.Contains(t, out, "version")
	assert.Contains(t, out, "completion")
}

// TestUsageErrorsAreTyped: cobra's own usage errors exit 2 because they
// are typed where cobra makes them, not because of what their text says.
func TestUsageErrorsAreTyped(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "kplan"`},
		{[]string{"nosuch"}, `unknown command "nosuch" for "kplan"`},
		{[]string{"siz"}, `unknown command "siz" for "kplan"; did you mean size?`},
		{[]string{"lab", "nosuch"}, `unknown command "nosuch" for "kplan lab"`},
		{[]string{"generate", "nosuch"}, `unknown command "nosuch" for "kplan generate"`},
		{[]string{"completion", "nosuch"}, `unknown command "nosuch" for "kplan completion"`},
		{[]string{"size", "nosuch"}, `unknown command "nosuch" for "kplan size"`},
		{[]string{"lab", "up", "extra-arg"}, `unknown command "extra-arg" for "kplan lab up"`},
		{[]string{"lab", "kill"}, "accepts 1 arg(s), received 0"},
		{[]string{"version", "extra"}, `unknown command "extra" for "kplan version"`},
		{[]string{"help", "nosuch"}, `unknown help topic "nosuch"`},
		{[]string{"help", "lab", "nosuch"}, `unknown help topic "lab nosuch"`},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"size", "--nosuch"}, "unknown flag: --nosuch"},
		{[]string{"lab", "up", "--brokers", "many"}, `invalid argument "many" for "--brokers" flag: strconv.ParseInt: parsing "many": invalid syntax`},
		{[]string{"lab", "up", "--brokers"}, "flag needs an argument: --brokers"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			assert.Equal(t, cmdutil.ExitUsage, code)
			assert.Empty(t, out)
			assert.Equal(t, "kplan: "+tt.want+"\n", errOut, "one line on stderr naming the command or flag")
		})
	}
}

// TestGroupsPrintHelp: a group command without a subcommand prints its help
// and exits 0, as cobra does for commands with nothing to run, and its usage
// line is unchanged.
func TestGroupsPrintHelp(t *testing.T) {
	for _, args := range [][]string{{}, {"lab"}, {"generate"}} {
		code, out, errOut := run(args...)
		assert.Equal(t, 0, code, args)
		assert.Empty(t, errOut)
		want := strings.TrimSpace("kplan " + strings.Join(args, " "))
		assert.Contains(t, out, "Usage:\n  "+want+" [command]\n\n", "one usage line, as before")
	}
	for _, args := range [][]string{{"help", "lab"}, {"help", "lab", "up"}} {
		code, out, _ := run(args...)
		assert.Equal(t, 0, code, args)
		assert.Contains(t, out, "Usage:\n  kplan "+strings.Join(args[1:], " "))
	}
	_, out, _ := run("size", "--help")
	assert.Contains(t, out, "Usage:\n  kplan size [flags]\n  kplan size [command]\n", "a verb with subcommands keeps both lines")
}

// TestRuntimeErrorSayingInvalidArgument is the regression test for errors
// classified by their text: an EINVAL from a cgroup write reads "invalid
// argument" and is a runtime error (exit 1), not a usage error.
func TestRuntimeErrorSayingInvalidArgument(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	root, stop := newRootCmd(f)
	einval := &fs.PathError{Op: "write", Path: "/sys/fs/cgroup/kplan-lab-7/node-1/cpu.max", Err: syscall.EINVAL}
	root.AddCommand(&cobra.Command{Use: "fail", RunE: func(*cobra.Command, []string) error {
		return fmt.Errorf("broker-cpu: writing 25000 100000: %w", einval)
	}})
	code := execute(context.Background(), f, root, stop, []string{"fail"})
	assert.Equal(t, cmdutil.ExitRuntime, code)
	assert.Empty(t, out.String())
	assert.Equal(t, "kplan: broker-cpu: writing 25000 100000: write /sys/fs/cgroup/kplan-lab-7/node-1/cpu.max: invalid argument\n", errOut.String())
}

// TestRequiredFlagsAndGroupsAreUsageErrors: cobra returns these untyped;
// typeUsageErrors checks them first, as usage errors.
func TestRequiredFlagsAndGroupsAreUsageErrors(t *testing.T) {
	build := func() *cobra.Command {
		root := &cobra.Command{Use: "t", SilenceErrors: true, SilenceUsage: true}
		ran := &cobra.Command{Use: "run", PreRun: func(c *cobra.Command, _ []string) { c.Annotations = map[string]string{"pre": "ran"} },
			RunE: func(*cobra.Command, []string) error { return nil }}
		ran.Flags().String("a", "", "")
		ran.Flags().String("b", "", "")
		ran.Flags().String("c", "", "")
		require.NoError(t, ran.MarkFlagRequired("a"))
		ran.MarkFlagsMutuallyExclusive("b", "c")
		root.AddCommand(ran)
		typeUsageErrors(root)
		return root
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, `required flag(s) "a" not set`},
		{[]string{"run", "--a", "x", "--b", "1", "--c", "2"}, "[b c] were all set"},
	} {
		root := build()
		root.SetArgs(tc.args)
		err := root.Execute()
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.args)
		assert.ErrorContains(t, err, tc.want)
	}
	root := build()
	root.SetArgs([]string{"run", "--a", "x"})
	require.NoError(t, root.Execute())
	run, _, err := root.Find([]string{"run"})
	require.NoError(t, err)
	assert.Equal(t, "ran", run.Annotations["pre"], "the command's own PreRun still runs")
}

func TestVersion(t *testing.T) {
	code, out, _ := run("version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "kplan test\ngo "), out)

	code, out, errOut := run("version", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	assert.Equal(t, VersionSchema, v["schema"])
	assert.Equal(t, "test", v["version"])

	code, _, errOut = run("version", "-o", "xml")
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "--output")
}

// TestVersionRun checks options to output, with fixed versions.
func TestVersionRun(t *testing.T) {
	info := VersionInfo{Schema: VersionSchema, Version: "v1.2.3", Go: "1.26.0", FranzGo: "v1.22.2"}
	for _, tc := range []struct {
		format report.Format
		want   string
	}{
		{report.Table, "kplan v1.2.3\ngo 1.26.0\nfranz-go v1.22.2\n"},
		{report.JSON, `{
  "schema": "kplan.version/v1",
  "version": "v1.2.3",
  "go": "1.26.0",
  "franz_go": "v1.22.2"
}
`},
	} {
		ios, _, out, _ := iostreams.Test()
		require.NoError(t, runVersion(&VersionOptions{IO: ios, Format: tc.format, Info: info}))
		assert.Equal(t, tc.want, out.String())
	}
}

func TestCompletion(t *testing.T) {
	code, out, _ := run("completion", "bash")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "bash completion")
}

func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.out")
	code, out, _ := run("--cpu-profile", path, "version")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "kplan ")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Positive(t, st.Size(), "a profile, even of a short command, has a header")

	code, _, errOut := run("--cpu-profile", filepath.Join(t.TempDir(), "no", "such", "dir"), "version")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--cpu-profile")
}

// TestRunWithoutArgsIgnoresOwnCommandLine: Run with no arguments (nil, as
// a variadic helper called with none passes) runs kplan with none, never
// with the process's own command line (cobra's fallback for nil args),
// which in a test is the test binary's.
func TestRunWithoutArgsIgnoresOwnCommandLine(t *testing.T) {
	saved := os.Args
	t.Cleanup(func() { os.Args = saved })
	os.Args = []string{"kplan.test", "--no-such-flag", "size"}
	code, out, errOut := run() // nil args
	wantCode, wantOut, wantErr := run([]string{}...)
	assert.Equal(t, wantCode, code)
	assert.Equal(t, wantOut, out)
	assert.Equal(t, wantErr, errOut)
	assert.NotContains(t, errOut, "no-such-flag")
}
