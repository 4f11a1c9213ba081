package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cli/lab"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/report"
)

func run(args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	return app.Run(context.Background(), f, args), out.String(), errOut.String()
}

// parse runs cmd on args with its run function replaced, as the command
// tree runs it.
func parse(t *testing.T, cmd *cobra.Command, args ...string) error {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read the test binary's own command line
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.Execute()
}

// TestNewCmdUp checks argv to options.
func TestNewCmdUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  string
		check func(*testing.T, *lab.UpOptions)
	}{
		{"defaults", "--dir /tmp/l", func(t *testing.T, o *lab.UpOptions) {
			assert.Equal(t, localkafka.Config{Brokers: 3, Dir: "/tmp/l", BasePort: 19092, FastFailover: true, HeapMB: 384, Racks: 3, Security: "plaintext"}, o.Config)
			assert.Equal(t, 120*time.Second, o.Timeout)
			assert.NotNil(t, o.Ready)
		}},
		{"every flag", "--dir /tmp/l --brokers 6 --kafka-jars /opt/kafka/libs --base-port 29092 --fast-failover=false --broker-bandwidth 5MB/s --broker-cpu 0.25 --heap-mb 512 --timeout 3m --security sasl_ssl --racks 2", func(t *testing.T, o *lab.UpOptions) {
			assert.Equal(t, localkafka.Config{Brokers: 6, JarsDir: "/opt/kafka/libs", Dir: "/tmp/l", BasePort: 29092, HeapMB: 512, BandwidthBps: 5_000_000, CPUQuota: 0.25, Racks: 2, Security: "sasl_ssl"}, o.Config)
			assert.Equal(t, 3*time.Minute, o.Timeout)
		}},
		{"loopback per broker", "--dir /tmp/l --loopback-per-broker", func(t *testing.T, o *lab.UpOptions) {
			assert.True(t, o.Config.Loopback)
		}},
		{"no cpu cap", "--dir /tmp/l --broker-cpu 0", func(t *testing.T, o *lab.UpOptions) {
			assert.Zero(t, o.Config.CPUQuota)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *lab.UpOptions
			cmd := lab.NewCmdUp(cmdutil.NewTestFactory(), func(_ context.Context, o *lab.UpOptions) error { got = o; return nil })
			require.NoError(t, parse(t, cmd, strings.Fields(tc.args)...))
			require.NotNil(t, got)
			tc.check(t, got)
		})
	}
}

// TestNewCmdUpValidates: the options are validated by localkafka's
// Config.Validate, and the message spells the field as its flag.
func TestNewCmdUpValidates(t *testing.T) {
	for _, tc := range []struct {
		args, want string
	}{
		{"--brokers 0", "--brokers: want 1 to 64, got 0"},
		{"--brokers 65", "--brokers: want 1 to 64, got 65"},
		{"--base-port 80", "--base-port: want 1024 to 65475 for 3 brokers, got 80"},
		{"--broker-cpu -1", "--broker-cpu: want a fraction of one CPU"},
		{"--broker-cpu 100", "--broker-cpu: want a fraction of one CPU"},
		{"--heap-mb -5", "--heap-mb: want a heap in MiB"},
		{"--broker-bandwidth fast", "--broker-bandwidth: rate \"fast\" has no /s"},
		{"--timeout 0s", "--timeout: want a positive duration"},
		{"--security tls", `--security: unknown mode "tls" (want plaintext, sasl_ssl, ssl, sasl_plaintext)`},
		{"--security sasl_scram", `--security: unknown mode "sasl_scram"`},
		{"--loopback-per-broker --broker-bandwidth 5MB/s", "--loopback-per-broker: cannot be combined with a broker bandwidth limit"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			called := false
			cmd := lab.NewCmdUp(cmdutil.NewTestFactory(), func(context.Context, *lab.UpOptions) error { called = true; return nil })
			err := parse(t, cmd, append(strings.Fields(tc.args), "--dir", "/tmp/l")...)
			assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
			assert.ErrorContains(t, err, tc.want)
			assert.False(t, called, "nothing runs after a bad flag")
		})
	}
}

// TestNewCmdBroker checks argv to options of kill and restart.
func TestNewCmdBroker(t *testing.T) {
	var got *lab.BrokerOptions
	capture := func(_ context.Context, o *lab.BrokerOptions) error { got = o; return nil }
	f := cmdutil.NewTestFactory()

	require.NoError(t, parse(t, lab.NewCmdKill(f, capture), "broker-3", "--dir", "/tmp/l"))
	assert.Equal(t, int32(3), got.Broker)
	assert.Equal(t, "/tmp/l", got.Dir)

	require.NoError(t, parse(t, lab.NewCmdRestart(f, capture), "2", "--timeout", "5s"))
	assert.Equal(t, int32(2), got.Broker)
	assert.Equal(t, 5*time.Second, got.Timeout)
	assert.Equal(t, localkafka.DefaultDir(), got.Dir)
	assert.NotNil(t, got.Ready)

	err := parse(t, lab.NewCmdKill(f, capture), "zookeeper")
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.EqualError(t, err, `"zookeeper" is not a broker (want broker-N)`)
}

// TestNewCmdOthers checks argv to options of status, elect-preferred and
// down.
func TestNewCmdOthers(t *testing.T) {
	f := cmdutil.NewTestFactory()
	var st *lab.StatusOptions
	require.NoError(t, parse(t, lab.NewCmdStatus(f, func(_ context.Context, o *lab.StatusOptions) error { st = o; return nil }), "-o", "json", "--dir", "/tmp/l"))
	assert.Equal(t, report.JSON, st.Format)
	assert.Equal(t, "/tmp/l", st.Dir)
	assert.Equal(t, 10*time.Second, st.Timeout)

	var el *lab.ElectOptions
	require.NoError(t, parse(t, lab.NewCmdElect(f, func(_ context.Context, o *lab.ElectOptions) error { el = o; return nil }), "--timeout", "1m"))
	assert.Equal(t, time.Minute, el.Timeout)
	assert.Equal(t, "test", el.Version)

	var dn *lab.DownOptions
	require.NoError(t, parse(t, lab.NewCmdDown(f, func(_ context.Context, o *lab.DownOptions) error { dn = o; return nil }), "--grace", "0s"))
	assert.Zero(t, dn.Grace)
	err := parse(t, lab.NewCmdDown(f, func(context.Context, *lab.DownOptions) error { return nil }), "--grace", "-1s")
	assert.ErrorContains(t, err, "--grace: want 0 or more")
}

// TestLabBadInput covers the faults refused before any JVM starts: each is
// one line on stderr naming the flag or argument, and exit 2 (no Java or
// jars needed).
func TestLabBadInput(t *testing.T) {
	empty := t.TempDir()
	fakeJars := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fakeJars, "kafka_2.13-4.3.1.jar"), nil, 0o644))
	noLab := filepath.Join(t.TempDir(), "nolab")

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"brokers zero", []string{"lab", "up", "--brokers", "0", "--dir", noLab}, "kplan: --brokers: want 1 to 64, got 0"},
		{"jars dir without kafka", []string{"lab", "up", "--kafka-jars", empty, "--dir", noLab}, "kplan: --kafka-jars: " + empty + " holds no kafka_2.13 jar (run `make kafka`)"},
		{"unknown flag", []string{"lab", "up", "--dir", noLab, "--java"}, "kplan: unknown flag: --java"},
		{"bad bandwidth", []string{"lab", "up", "--kafka-jars", fakeJars, "--broker-bandwidth", "fast", "--dir", noLab}, "kplan: --broker-bandwidth: "},
		{"negative cpu", []string{"lab", "up", "--kafka-jars", fakeJars, "--broker-cpu", "-0.5", "--dir", noLab}, "kplan: --broker-cpu: "},
		{"bad cpu", []string{"lab", "up", "--kafka-jars", fakeJars, "--broker-cpu", "lots", "--dir", noLab}, `"--broker-cpu"`},
		{"base port", []string{"lab", "up", "--base-port", "100", "--dir", noLab}, "kplan: --base-port: want 1024 to"},
		{"status without a lab", []string{"lab", "status", "--dir", noLab}, "kplan: no lab in " + noLab},
		{"status bad output", []string{"lab", "status", "--dir", noLab, "-o", "xml"}, "kplan: --output: "},
		{"kill without a lab", []string{"lab", "kill", "broker-1", "--dir", noLab}, "kplan: no lab in " + noLab},
		{"kill a non-broker", []string{"lab", "kill", "zookeeper", "--dir", noLab}, `kplan: "zookeeper" is not a broker`},
		{"kill without an argument", []string{"lab", "kill", "--dir", noLab}, "accepts 1 arg"},
		{"restart without a lab", []string{"lab", "restart", "broker-1", "--dir", noLab}, "kplan: no lab in " + noLab},
		{"elect without a lab", []string{"lab", "elect-preferred", "--dir", noLab}, "kplan: no lab in " + noLab},
		{"down without a lab", []string{"lab", "down", "--dir", noLab}, "kplan: no lab in " + noLab},
		{"unknown subcommand", []string{"lab", "nosuch"}, `kplan: unknown command "nosuch" for "kplan lab"`},
		{"extra argument", []string{"lab", "up", "extra-arg", "--dir", noLab}, `kplan: unknown command "extra-arg" for "kplan lab up"`},
		{"dir before the subcommand", []string{"lab", "--dir", noLab, "status"}, "kplan: no lab in " + noLab},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			assert.Equal(t, cmdutil.ExitUsage, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
		})
	}
	_, err := os.Stat(noLab)
	assert.True(t, os.IsNotExist(err), "a refused command created %s", noLab)
}

// TestEverySubcommandHasExamples: help shows how to run each one.
func TestEverySubcommandHasExamples(t *testing.T) {
	for _, c := range lab.NewCmdLab(cmdutil.NewTestFactory()).Commands() {
		assert.True(t, strings.HasPrefix(c.Example, "  $ kplan lab "+c.Name()) || strings.Contains(c.Example, "kplan lab "+c.Name()), "%s: %q", c.Name(), c.Example)
	}
}
