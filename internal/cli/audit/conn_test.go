package audit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
)

// TestCommandConfigReadOnce: a live audit reads its --command-config once,
// whichever of the file and the flag gives the address; so does a live
// reassign, which builds a second admin client for the partition sizes.
func TestCommandConfigReadOnce(t *testing.T) {
	addrs, stop, err := kafkatest.FakeCluster(3)
	require.NoError(t, err)
	defer stop()
	dir := t.TempDir()
	t.Setenv("KPLAN_TEST_PROTO", "PLAINTEXT")
	withAddr := filepath.Join(dir, "with-addr.properties")
	require.NoError(t, os.WriteFile(withAddr, []byte("bootstrap.servers="+addrs[0]+"\nsecurity.protocol=${env:KPLAN_TEST_PROTO}\n"), 0o600))
	noAddr := filepath.Join(dir, "no-addr.properties")
	require.NoError(t, os.WriteFile(noAddr, []byte("security.protocol=${env:KPLAN_TEST_PROTO}\n"), 0o600))
	plan := filepath.Join(dir, "plan.json")
	for _, tc := range []struct {
		name string
		args []string
		file string
		want string // in stdout
	}{
		{"audit, --bootstrap-server and --command-config", []string{"audit", "-o", "json", "--bootstrap-server", addrs[0], "--command-config", noAddr}, noAddr, `"max_groups"`},
		{"audit, bootstrap.servers in --command-config", []string{"audit", "-o", "json", "--command-config", withAddr}, withAddr, `"max_groups"`},
		{"reassign", []string{"reassign", "--command-config", withAddr, "--brokers", "0-2", "--out", plan}, withAddr, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := kafka.CommandConfigReads(tc.file)
			code, out, errOut := run("", tc.args...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, tc.want)
			assert.Equal(t, 1, kafka.CommandConfigReads(tc.file)-before, "reads of --command-config in one command")
		})
	}
}
