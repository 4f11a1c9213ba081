package source_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cli/source"
	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

const layouts = "../../../testdata/layouts/"

func parse(t *testing.T, args ...string) (*source.Options, error) {
	t.Helper()
	var o source.Options
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return o.Validate() }}
	source.AddFlags(cmd, &o)
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read the test binary's own command line
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return &o, cmd.Execute()
}

// flagValues are the options' flag values, without the flag set they were
// parsed from.
type flagValues struct {
	From, Topics, BootstrapServers, CommandConfig string
	Timeout                                       time.Duration
}

func TestFlagsAndValidate(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		want    flagValues
	}{
		{"file", []string{"--from", "a.json", "--topics", "^x"}, "", flagValues{From: "a.json", Topics: "^x", Timeout: 10 * time.Second}},
		{"live", []string{"--bootstrap-server", "k:9092", "--timeout", "2s"}, "", flagValues{BootstrapServers: "k:9092", Timeout: 2 * time.Second}},
		{"config only", []string{"--command-config", "c.properties"}, "", flagValues{CommandConfig: "c.properties", Timeout: 10 * time.Second}},
		{"none", nil, "no layout: give --from FILE or --bootstrap-server HOST:PORT", flagValues{}},
		{"both", []string{"--from", "a", "--bootstrap-server", "k:1"}, "--from and --bootstrap-server/--command-config: give one source", flagValues{}},
		{"bad regex", []string{"--from", "a", "--topics", "("}, "--topics", flagValues{}},
		{"zero timeout", []string{"--bootstrap-server", "k:1", "--timeout", "0s"}, "--timeout: want a positive duration, got 0s", flagValues{}},
		{"empty address", []string{"--command-config", "c.properties", "--bootstrap-server", " "}, "--bootstrap-server: no address given", flagValues{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parse(t, tt.args...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, flagValues{o.From, o.Topics, o.BootstrapServers, o.CommandConfig, o.Timeout})
		})
	}
}

func factory(stdin string) *cmdutil.Factory {
	ios, in, _, _ := iostreams.Test()
	in.WriteString(stdin)
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	return f
}

func TestLoadFileWithTopicFilter(t *testing.T) {
	o := source.Options{From: layouts + "thesis-fig3.3.json", Topics: "^[BC]$"}
	c, err := o.Load(context.Background(), factory(""))
	require.NoError(t, err)
	var topics []string
	for _, tp := range c.Topics() {
		topics = append(topics, tp.Name)
	}
	assert.Equal(t, []string{"B", "C"}, topics)
}

func TestLoadStdin(t *testing.T) {
	o := source.Options{From: "-"}
	c, err := o.Load(context.Background(), factory("Topic: t\tPartition: 0\tLeader: 2\tReplicas: 2,1\tIsr: 2\n"))
	require.NoError(t, err)
	require.Len(t, c.Partitions, 1)
	assert.Equal(t, int32(2), c.Partitions[0].Leader)
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{\"version\":1,\n\"partitions\":[{\"topic\":\"a\",\"partition\":0,\"replicas\":[]}]}"), 0o644))
	tests := []struct {
		name string
		o    source.Options
		code int
		msg  string
	}{
		{"missing file", source.Options{From: filepath.Join(dir, "nope.json")}, cmdutil.ExitUsage, "--from"},
		{"bad file names file:line", source.Options{From: bad}, cmdutil.ExitUsage, bad + ":2:"},
		{"unreachable cluster", source.Options{Options: target.Options{BootstrapServers: "127.0.0.1:1", Timeout: 500 * time.Millisecond}}, cmdutil.ExitRuntime, "unreachable"},
		{"bad command config", source.Options{Options: target.Options{CommandConfig: filepath.Join(dir, "none.properties"), Timeout: time.Second}}, cmdutil.ExitUsage, "none.properties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.o.Load(context.Background(), factory(""))
			require.Error(t, err)
			assert.Equal(t, tt.code, cmdutil.ExitCode(err), err.Error())
			assert.Contains(t, err.Error(), tt.msg)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}
