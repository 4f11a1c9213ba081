package worker

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
)

func parse(t *testing.T, env map[string]string, args ...string) (*Options, error) {
	t.Helper()
	var got *Options
	cmd := NewCmdWorker(cmdutil.NewTestFactory(), func(_ context.Context, o *Options) error { got = o; return nil }, func(k string) string { return env[k] })
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return got, err
}

func TestNewCmdWorker(t *testing.T) {
	o, err := parse(t, nil, "--run", "r42", "--index", "2", "--bootstrap-server", "k1:9092", "--join-timeout", "30s")
	require.NoError(t, err)
	assert.Equal(t, "r42", o.Worker.Run)
	assert.Equal(t, 2, o.Worker.Index)
	assert.Equal(t, 30*time.Second, o.Worker.JoinTimeout)
	assert.Equal(t, "k1:9092", o.Worker.Conn.BootstrapServers)

	// A Kubernetes Indexed Job's pod: the index from the environment.
	o, err = parse(t, map[string]string{IndexEnv: "3"}, "--run", "r42", "--bootstrap-server", "k1:9092")
	require.NoError(t, err)
	assert.Equal(t, 3, o.Worker.Index)
	assert.Equal(t, 10*time.Minute, o.Worker.JoinTimeout)
	// --index wins over the environment.
	o, err = parse(t, map[string]string{IndexEnv: "3"}, "--run", "r42", "--index", "0", "--bootstrap-server", "k1:9092")
	require.NoError(t, err)
	assert.Equal(t, 0, o.Worker.Index)
}

// TestBadFlags: each bad command line is one usage error (exit 2) whose
// one line names the flag.
func TestBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--index", "0", "--bootstrap-server", "k:1"}, nil, "--run: required"},
		{[]string{"--run", "a.b", "--index", "0", "--bootstrap-server", "k:1"}, nil, "--run:"},
		{[]string{"--run", strings.Repeat("r", 65), "--index", "0", "--bootstrap-server", "k:1"}, nil, "--run:"},
		{[]string{"--run", "r", "--bootstrap-server", "k:1"}, nil, "--index: required"},
		{[]string{"--run", "r", "--bootstrap-server", "k:1"}, map[string]string{IndexEnv: "x"}, "$JOB_COMPLETION_INDEX:"},
		{[]string{"--run", "r", "--index", "-1", "--bootstrap-server", "k:1"}, nil, "--index: -1"},
		{[]string{"--run", "r", "--index", "256", "--bootstrap-server", "k:1"}, nil, "--index: 256"},
		{[]string{"--run", "r", "--index", "0"}, nil, "--bootstrap-server: required"},
		{[]string{"--run", "r", "--index", "0", "--bootstrap-server", ","}, nil, "--bootstrap-server: no address"},
		{[]string{"--run", "r", "--index", "0", "--bootstrap-server", "k:1", "--timeout", "0s"}, nil, "--timeout:"},
		{[]string{"--run", "r", "--index", "0", "--bootstrap-server", "k:1", "--join-timeout", "0s"}, nil, "--join-timeout:"},
		{[]string{"--run", "r", "--index", "0", "--bootstrap-server", "k:1", "--command-config", "/nonexistent/client.properties"}, nil, "--command-config: open /nonexistent/client.properties"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parse(t, tc.env, tc.args...)
			require.Error(t, err)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err), "%v", err)
			assert.Equal(t, 2, cmdutil.ExitCode(err))
			assert.True(t, strings.HasPrefix(err.Error(), tc.want), "%q does not start with %q", err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestPrintWorkerCommands(t *testing.T) {
	var b bytes.Buffer
	PrintCommands(&b, "chaos", "r42", 2, []string{"k1:9092", "k2:9092"}, "/etc/kafka/my client.properties")
	assert.Equal(t, `chaos: run r42: waiting for 2 workers; start each with:
  kplan worker --run r42 --index 0 --bootstrap-server k1:9092,k2:9092 --command-config '/etc/kafka/my client.properties'
  kplan worker --run r42 --index 1 --bootstrap-server k1:9092,k2:9092 --command-config '/etc/kafka/my client.properties'
`, b.String())
}
