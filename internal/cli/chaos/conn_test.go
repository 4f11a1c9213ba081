package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// TestCommandConfigReadOnce runs a whole experiment on the embedded cluster
// with several producers (three partitioners), a consumer and admin
// clients, all built from --command-config: the file (whose values come
// through ${env:} and ${file:} providers) is read once, when the options
// are checked.
func TestCommandConfigReadOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	require.NoError(t, os.WriteFile(secrets, []byte("proto=PLAINTEXT\n"), 0o600))
	t.Setenv("KPLAN_TEST_ACKS", "all")
	props := filepath.Join(dir, "client.properties")
	require.NoError(t, os.WriteFile(props, []byte("security.protocol=${file:"+secrets+":proto}\nacks=${env:KPLAN_TEST_ACKS}\n"), 0o600))

	ios, _, _, _ := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	cmd := NewCmdChaos(f, nil)
	cmd.SetArgs([]string{"--kill", "broker-3", "--partitioner", "roundrobin,node,sqf", "--warmup", "300ms",
		"--phase-duration", "800ms", "--rate", "20kB/s", "-o", "json", "--command-config", props})
	before := kafka.CommandConfigReads(props)
	require.NoError(t, cmd.Execute())
	assert.Equal(t, 1, kafka.CommandConfigReads(props)-before, "reads of --command-config in one run")
}
