package lab

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
	"github.com/kplan-dev/kplan/internal/topology"
)

// TestNewCmdNet: flags to options, for a path with every condition, a
// broker, and the clears.
func TestNewCmdNet(t *testing.T) {
	tests := []struct {
		args  []string
		path  localkafka.NetPath
		has   bool
		cond  localkafka.Condition
		clear bool
	}{
		{[]string{"--clients", "--delay", "30ms", "--jitter", "5ms", "--loss", "5%", "--rate", "10MB/s"}, localkafka.ClientsPath(), true,
			localkafka.Condition{Delay: 30 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.05, Rate: 10_000_000}, false},
		{[]string{"--broker", "2", "--loss", "100%"}, localkafka.BrokerPath(2), true, localkafka.Partition(), false},
		{[]string{"--clear"}, localkafka.NetPath{}, false, localkafka.Condition{}, true},
		{[]string{"--clear", "--broker", "3"}, localkafka.BrokerPath(3), true, localkafka.Condition{}, true},
	}
	for _, tc := range tests {
		var got *NetOptions
		cmd := NewCmdNet(cmdutil.NewTestFactory(), func(_ context.Context, o *NetOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		require.NoError(t, cmd.Execute(), tc.args)
		require.NotNil(t, got)
		assert.Equal(t, tc.path, got.Path, tc.args)
		assert.Equal(t, tc.has, got.HasPath, tc.args)
		assert.Equal(t, tc.cond, got.Cond, tc.args)
		assert.Equal(t, tc.clear, got.Clear, tc.args)
	}
}

// TestStatusShowsNetConditions: the conditions in lab.json appear in both
// the table and the JSON of `kplan lab status`.
func TestStatusShowsNetConditions(t *testing.T) {
	dir := writeLab(t)
	b, err := os.ReadFile(filepath.Join(dir, "lab.json"))
	require.NoError(t, err)
	var s localkafka.State
	require.NoError(t, json.Unmarshal(b, &s))
	s.NetCond = &localkafka.NetConds{Mechanism: localkafka.MechNFQueue, Chain: "KPLAN-0000abcd", Conds: []localkafka.NetCond{
		{Path: "broker-2", Condition: localkafka.Partition()},
		{Path: "clients", Condition: localkafka.Condition{Delay: 30 * time.Millisecond, Jitter: 5 * time.Millisecond}, Queue: 1001},
	}}
	b, err = json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lab.json"), b, 0o644))
	for _, format := range []report.Format{report.Table, report.JSON} {
		ios, _, out, _ := iostreams.Test()
		opts := &StatusOptions{IO: ios, Dir: dir, Format: format, Timeout: time.Second,
			Snapshot: func(context.Context, []string) (*topology.Cluster, error) { return nil, nil }}
		require.NoError(t, runStatus(context.Background(), opts))
		golden.AssertString(t, "status-net."+map[report.Format]string{report.Table: "txt", report.JSON: "json"}[format], out.String())
	}
}
