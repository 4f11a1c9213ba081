package target_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// parse declares which flags with notes on a fresh flag set and parses argv.
func parse(t *testing.T, which target.Flag, argv ...string) (*target.Options, *pflag.FlagSet) {
	t.Helper()
	var o target.Options
	fs := pflag.NewFlagSet("verb", pflag.ContinueOnError)
	o.AddFlags(fs, which, target.Notes{Bootstrap: "b-note"})
	require.NoError(t, fs.Parse(argv))
	return &o, fs
}

func TestAddFlags(t *testing.T) {
	for _, tc := range []struct {
		which target.Flag
		want  []string
	}{
		{target.Conn, []string{"bootstrap-server", "command-config", "timeout"}},
		{target.Conn | target.LabDir, []string{"bootstrap-server", "command-config", "lab-dir", "timeout"}},
		{target.CommandConfig | target.LabDir, []string{"command-config", "lab-dir"}},
		{target.Bootstrap, []string{"bootstrap-server"}},
	} {
		_, fs := parse(t, tc.which)
		var got []string
		fs.VisitAll(func(f *pflag.Flag) { got = append(got, f.Name) })
		assert.Equal(t, tc.want, got)
	}
	o, fs := parse(t, target.Conn)
	assert.Equal(t, target.DefaultTimeout, o.Timeout)
	assert.True(t, strings.HasSuffix(fs.Lookup("bootstrap-server").Usage, "; b-note"), "a verb's note follows the shared text")
	assert.NotContains(t, fs.Lookup("command-config").Usage, ";", "no note, no separator")

	// The single-flag declarations give the same flag as the group.
	var s string
	one := pflag.NewFlagSet("one", pflag.ContinueOnError)
	target.BootstrapVar(one, &s, "b-note")
	assert.Equal(t, fs.Lookup("bootstrap-server").Usage, one.Lookup("bootstrap-server").Usage)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		which target.Flag
		argv  []string
		want  string // "" valid
	}{
		{"defaults", target.Conn | target.LabDir, nil, ""},
		{"address", target.Conn, []string{"--bootstrap-server", "k:1,k:2"}, ""},
		{"empty address", target.Conn, []string{"--bootstrap-server", " "}, "--bootstrap-server: no address given"},
		{"commas only", target.Conn, []string{"--bootstrap-server", ","}, "--bootstrap-server: no address given"},
		{"zero timeout", target.Conn, []string{"--timeout", "0s"}, "--timeout: want a positive duration, got 0s"},
		{"negative timeout", target.Conn, []string{"--timeout", "-1s"}, "--timeout: want a positive duration, got -1s"},
		{"empty lab dir", target.LabDir, []string{"--lab-dir", ""}, "--lab-dir: empty"},
		{"lab dir", target.LabDir, []string{"--lab-dir", "/x"}, ""},
		{"timeout not declared", target.Bootstrap | target.LabDir, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := parse(t, tc.which, tc.argv...)
			err := o.Validate()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
		})
	}
	var zero target.Options
	assert.NoError(t, zero.Validate(), "options no flag set declared are not checked")
}

// TestConnOptionsResolvesOnce: the command config is read at the first
// call only; a changed flag value is resolved again; a bad file exits 2
// with the loader's one-line message.
func TestConnOptionsResolvesOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "client.properties")
	t.Setenv("KPLAN_TEST_PROTO", "PLAINTEXT")
	require.NoError(t, os.WriteFile(path, []byte("bootstrap.servers=k:1\nsecurity.protocol=${env:KPLAN_TEST_PROTO}\n"), 0o600))
	o, _ := parse(t, target.Conn, "--command-config", path, "--timeout", "3s")
	before := kafka.CommandConfigReads(path)
	for range 5 {
		c, err := o.ConnOptions()
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, c.Timeout)
		p, ok := c.Properties()
		require.True(t, ok)
		assert.Equal(t, "k:1", p.BootstrapServers)
	}
	assert.Equal(t, 1, kafka.CommandConfigReads(path)-before)

	o.CommandConfig = filepath.Join(dir, "missing.properties")
	_, err := o.ConnOptions()
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	assert.Contains(t, err.Error(), "--command-config: ")
	assert.NotContains(t, err.Error(), "\n")
}

func TestLabOrLive(t *testing.T) {
	for _, tc := range []struct {
		name, cluster string
		argv          []string
		lab           bool
		err           string
	}{
		{"live", "", []string{"--bootstrap-server", "k:9092"}, false, ""},
		{"lab", "lab", nil, true, ""},
		{"neither", "", nil, false, "--bootstrap-server: required (or --cluster lab)"},
		{"both", "lab", []string{"--bootstrap-server", "k:9092"}, false, "--bootstrap-server: not with --cluster lab"},
		{"unknown", "prod", nil, false, `--cluster: unknown cluster "prod"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := parse(t, target.Bootstrap, tc.argv...)
			lab, err := o.LabOrLive(tc.cluster)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.lab, lab)
		})
	}
}
