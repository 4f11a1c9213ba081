package reassign_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cli/reassign"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
)

func parseApply(t *testing.T, args ...string) (*reassign.ApplyOptions, error) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	var got *reassign.ApplyOptions
	cmd := reassign.NewCmdApply(f, func(_ context.Context, o *reassign.ApplyOptions) error { got = o; return nil })
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read the test binary's own command line
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return got, err
}

func TestNewCmdApply(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  string
		check func(*testing.T, *reassign.ApplyOptions)
	}{
		{"execute", "plan.json --bootstrap-server k:9092", func(t *testing.T, o *reassign.ApplyOptions) {
			assert.Equal(t, "plan.json", o.Plan)
			assert.Equal(t, apply.ModeExecute, o.Mode)
			assert.Zero(t, o.Throttle)
			assert.False(t, o.Yes)
			assert.Equal(t, 10*time.Second, o.Timeout)
		}},
		{"throttle", "plan.json --bootstrap-server k:9092 --throttle 50MB/s --yes --no-wait", func(t *testing.T, o *reassign.ApplyOptions) {
			assert.Equal(t, int64(50_000_000), o.Throttle)
			assert.True(t, o.Yes)
			assert.True(t, o.NoWait)
			assert.False(t, o.NoElect)
		}},
		{"no elect", "plan.json --bootstrap-server k:9092 --no-elect", func(t *testing.T, o *reassign.ApplyOptions) {
			assert.True(t, o.NoElect)
		}},
		{"verify", "plan.json --command-config c.properties --verify", func(t *testing.T, o *reassign.ApplyOptions) {
			assert.Equal(t, apply.ModeVerify, o.Mode)
		}},
		{"cancel", "plan.json --bootstrap-server k:9092 --cancel", func(t *testing.T, o *reassign.ApplyOptions) {
			assert.Equal(t, apply.ModeCancel, o.Mode)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseApply(t, strings.Fields(tc.args)...)
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
}

// Bad flags and bad plan files: one line naming the flag or file, exit 2,
// before any connection is tried.
func TestApplyBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	empty := write("empty.json", `{"version":1,"partitions":[]}`)
	broken := write("broken.json", "{\"version\":1,\n\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1,1]}]}")
	describe := write("describe.txt", "Topic: t\tTopicId: x\tPartitionCount: 1\tReplicationFactor: 1\tConfigs:\n\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n")
	// An address nothing listens on: the errors must come before any dial.
	const bs = "127.0.0.1:1"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no plan", []string{"reassign", "apply", "--bootstrap-server", bs}, "want one plan file"},
		{"two plans", []string{"reassign", "apply", "a.json", "b.json", "--bootstrap-server", bs}, "want one plan file"},
		{"no cluster", []string{"reassign", "apply", empty}, "--bootstrap-server: required"},
		{"verify and cancel", []string{"reassign", "apply", empty, "--bootstrap-server", bs, "--verify", "--cancel"}, "--verify and --cancel"},
		{"bad throttle", []string{"reassign", "apply", empty, "--bootstrap-server", bs, "--throttle", "fast"}, "--throttle"},
		{"bad timeout", []string{"reassign", "apply", empty, "--bootstrap-server", bs, "--timeout", "0s"}, "--timeout"},
		{"bad wait timeout", []string{"reassign", "apply", empty, "--bootstrap-server", bs, "--wait-timeout", "-1s"}, "--wait-timeout"},
		{"missing file", []string{"reassign", "apply", filepath.Join(dir, "nope.json"), "--bootstrap-server", bs}, "nope.json"},
		{"empty plan", []string{"reassign", "apply", empty, "--bootstrap-server", bs}, "plan " + empty + ": no partitions"},
		{"duplicate replica", []string{"reassign", "apply", broken, "--bootstrap-server", bs}, "broken.json:2"},
		{"not JSON", []string{"reassign", "apply", describe, "--bootstrap-server", bs}, "plan " + describe + ": not a reassignment JSON file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertUsage(t, tc.want, tc.args...)
		})
	}
}

func TestApplyUnreachable(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`), 0o600))
	code, out, errOut := run("reassign", "apply", plan, "--bootstrap-server", "127.0.0.1:1", "--timeout", "2s", "--yes")
	assert.Equal(t, cmdutil.ExitRuntime, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "cluster unreachable")
}
