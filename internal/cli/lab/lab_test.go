package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

func run(args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	return app.Run(context.Background(), f, args), out.String(), errOut.String()
}

// TestLabBadInput covers the faults refused before any JVM starts: each is
// one line on stderr and exit 2 (no Java or jars needed).
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
		{"brokers zero", []string{"lab", "up", "--brokers", "0", "--dir", noLab}, "--brokers 0: want 1 to 64"},
		{"jars dir without kafka", []string{"lab", "up", "--kafka-jars", empty, "--dir", noLab}, "make kafka"},
		{"bad bandwidth", []string{"lab", "up", "--kafka-jars", fakeJars, "--broker-bandwidth", "fast", "--dir", noLab}, "--broker-bandwidth"},
		{"zero cpu", []string{"lab", "up", "--kafka-jars", fakeJars, "--broker-cpu", "0", "--dir", noLab}, "--broker-cpu"},
		{"bad cpu", []string{"lab", "up", "--kafka-jars", fakeJars, "--broker-cpu", "lots", "--dir", noLab}, "--broker-cpu"},
		{"status without a lab", []string{"lab", "status", "--dir", noLab}, noLab},
		{"kill without a lab", []string{"lab", "kill", "broker-1", "--dir", noLab}, noLab},
		{"kill a non-broker", []string{"lab", "kill", "zookeeper", "--dir", noLab}, `"zookeeper" is not a broker`},
		{"kill without an argument", []string{"lab", "kill", "--dir", noLab}, "accepts 1 arg"},
		{"down without a lab", []string{"lab", "down", "--dir", noLab}, noLab},
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
