package measure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// TestMeasureReadsCommandConfigOnce runs `kplan measure` against an
// in-process cluster with --command-config: Tp's producer, Tc's consumer,
// l_r's two producers, u's clients and the admin are all built from the
// options resolved when the flags were checked; the file is read once.
func TestMeasureReadsCommandConfigOnce(t *testing.T) {
	c := newFake(t, 3)
	t.Setenv("KPLAN_LAB_DIR", t.TempDir()) // no lab here
	t.Setenv("KPLAN_TEST_PROTO", "PLAINTEXT")
	props := filepath.Join(t.TempDir(), "client.properties")
	require.NoError(t, os.WriteFile(props, []byte("bootstrap.servers="+strings.Join(c.addrs, ",")+"\nsecurity.protocol=${env:KPLAN_TEST_PROTO}\n"), 0o600))

	ios, _, stdout, stderr := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	cmd := newCmdMeasure(f, nil)
	cmd.SetArgs([]string{"--command-config", props, "--yes", "-o", "json", "--max-handles", "1000",
		"--record-size", "100", "--duration", "1s", "--window", "250ms", "--replication-samples", "5",
		"--replication-record-size", "10", "--election-partitions", "4", "--election-rounds", "2"})
	before := kafka.CommandConfigReads(props)
	require.NoError(t, cmd.Execute(), stderr.String())
	assert.Contains(t, stdout.String(), `"partition_produce_rate"`)
	assert.Equal(t, 1, kafka.CommandConfigReads(props)-before, "reads of --command-config in one measure")
}
