package measure

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// Without --yes a cluster that is not the lab gets the plan and exit 4:
// nothing is created or killed.
func TestUnavailabilityRemoteRefusedWithoutYes(t *testing.T) {
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	defer c.Close()
	seeds := strings.Join(c.Seeds(), ",")
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	cmd := NewCmdUnavailability(f, nil)
	killed := t.TempDir() + "/killed"
	cmd.SetArgs([]string{"--bootstrap-server", seeds, "--killer", "exec", "--kill-cmd", "touch " + killed, "--restore-cmd", "true", "--broker", "2", "--partitions", "1,10"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = cmd.ExecuteContext(ctx)
	require.Error(t, err)
	assert.Equal(t, 4, cmdutil.ExitCode(err), "refused: %v", err)
	assert.ErrorContains(t, err, "--yes: not given")
	assert.Contains(t, out.String(), "kplan measure unavailability plan")
	assert.Contains(t, out.String(), "kill:     broker 2")
	assert.Contains(t, out.String(), "kplan-unavail-N-RUNID for N in 1,10, led by broker 2")
	assert.Empty(t, errOut.String())
	assert.NoFileExists(t, killed, "nothing killed")

	adm, err := kafka.NewScratchAdmin(kafka.ConnOptions{BootstrapServers: seeds}, "test")
	require.NoError(t, err)
	defer adm.Close()
	snap, err := adm.Snapshot(ctx)
	require.NoError(t, err)
	assert.Empty(t, snap.Partitions, "no topic created")

	cmd = NewCmdUnavailability(f, nil)
	cmd.SetArgs([]string{"--bootstrap-server", seeds, "--killer", "exec", "--kill-cmd", "true", "--restore-cmd", "true", "--broker", "7"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err = cmd.ExecuteContext(ctx)
	assert.Equal(t, 2, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, "--broker: 7 is not a broker of the cluster (brokers [1 2 3])")
}
