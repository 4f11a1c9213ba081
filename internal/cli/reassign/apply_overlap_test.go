package reassign

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// The case: testdata/layouts/overlap-4.json, planned with
// --fix-overlaps and applied on a cluster whose controller behaves like
// Kafka's (a leader that stays among the replicas keeps leading). Moving
// replicas alone gives 4 of the 12 changed partitions the plan's leader
// and leaves round robin at max/mean 1.25 (rates A=3,B=3,C=1,D=1); apply
// with its election leaves every partition led by its first replica and
// max/mean 1.00, the layout the plan shows.
func TestApplyOverlapLayout(t *testing.T) {
	layout := filepath.Join("..", "..", "..", "testdata", "layouts", "overlap-4.json")
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.json")
	ios, _, _, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	cmd := NewCmdReassign(f, nil)
	cmd.SetArgs([]string{"--from", layout, "--fix-overlaps", "--out", planFile})
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	require.NoError(t, cmd.Execute(), errOut.String())
	plan, err := os.ReadFile(planFile)
	require.NoError(t, err)

	cluster := func() *applytest.Admin {
		r, err := os.Open(layout)
		require.NoError(t, err)
		defer r.Close() //nolint:errcheck // read-only
		c, err := topology.Load(r, layout)
		require.NoError(t, err)
		var ids []int32
		for _, b := range c.Brokers {
			ids = append(ids, b.ID)
		}
		var parts []topology.Partition
		for _, p := range c.Partitions {
			parts = append(parts, applytest.Part(p.Topic, p.Partition, p.Replicas...))
		}
		adm := applytest.New(ids, parts...)
		adm.FinishPerPoll = len(parts)
		return adm
	}
	original := cluster()
	skew := func(adm *applytest.Admin) float64 {
		c := &topology.Cluster{Brokers: adm.Brokers, Partitions: adm.Parts, Live: true}
		rates := []workload.Topic{{Name: "A", Rate: 3}, {Name: "B", Rate: 3}, {Name: "C", Rate: 1}, {Name: "D", Rate: 1}}
		p, err := audit.PredictShares(c, rates, "roundrobin", audit.ShareOptions{})
		require.NoError(t, err)
		shares := p.Shares(nil)
		var top float64
		for _, s := range shares {
			top = max(top, s)
		}
		return top * float64(len(shares))
	}
	// changed counts the partitions the plan changed, and those of them
	// led by their (new) first replica.
	changed := func(adm *applytest.Admin) (n, led int) {
		for i, p := range adm.Parts {
			if !slices.Equal(p.Replicas, original.Parts[i].Replicas) {
				n++
				if p.Leader == p.Replicas[0] {
					led++
				}
			}
		}
		return n, led
	}

	adm := cluster()
	code, _, _, msg := runFake(t, adm, string(plan), func(o *ApplyOptions) { o.Yes, o.NoElect = true, true })
	require.Equal(t, cmdutil.ExitOK, code, msg)
	n, led := changed(adm)
	assert.Equal(t, 12, n)
	assert.Equal(t, 4, led, "the move alone: Kafka keeps the leaders still in the ISR")
	assert.InDelta(t, 1.25, skew(adm), 1e-9)

	adm = cluster()
	code, _, errOut2, msg := runFake(t, adm, string(plan), func(o *ApplyOptions) { o.Yes = true })
	require.Equal(t, cmdutil.ExitOK, code, msg)
	assert.Contains(t, errOut2, "then elect preferred leaders of 8 partitions")
	n, led = changed(adm)
	assert.Equal(t, 12, n)
	assert.Equal(t, 12, led)
	for _, p := range adm.Parts {
		assert.Equal(t, p.Replicas[0], p.Leader, "%s led by its first replica", p.Key())
	}
	assert.InDelta(t, 1.0, skew(adm), 1e-9)
}
