//go:build integration

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// TestReassignProofFailover5 runs issue 20's proof short on the 5-broker,
// 2-rack lab: --kill each with the shipped failover-5 workload, `kplan
// reassign` and `kplan reassign apply` on its topics, --kill each again on
// the same topics. It checks invariants only: the lab's racks as the
// workload's layout needs them; the plan changes something and is applied,
// read back with a client of its own; every broker is killed once in each
// run, each kill restored (the broker back in every ISR, the preferred
// leaders elected) before the next and after the last, with a prediction
// per kill and nothing lost; every broker runs at the end. The measured
// shares against the bound are `make acceptance`'s
// (proof_acceptance_test.go). Its first --kill each is the shipped
// workload's kill-each run, so no other test runs that one again.
func TestReassignProofFailover5(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 5, Racks: 2})
	t.Cleanup(func() {
		if s, err := localkafka.Load(lab.State.Dir); err == nil {
			lab.State.Nodes = s.Nodes
		}
	})
	var racks []string
	for _, n := range lab.State.Nodes {
		if n.Broker {
			racks = append(racks, n.Rack)
		}
	}
	require.Equal(t, []string{"rack-a", "rack-b", "rack-a", "rack-b", "rack-a"}, racks, "the layout's racks")

	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	seq := sequence{Prefix: "proof", Timing: []string{"--warmup", "1s", "--phase-duration", "2s", "--rate", "100kB/s"}}
	res := seq.run(ctx, t, lab)
	checkKillEach(t, "before", res.Before, seq.Prefix)
	require.NotEmpty(t, res.Plan, "the failover-5 layout needs a plan")
	checkKillEach(t, "after", res.After, seq.Prefix)
	for label, log := range map[string]string{"before": res.BeforeLog, "after": res.AfterLog} {
		assert.Regexp(t, `chaos: every broker \(\[1 2 3 4 5\]\) is back in every ISR`, log, label)
	}

	s, err := localkafka.Load(lab.State.Dir)
	require.NoError(t, err)
	var alive []int32
	for _, n := range s.Nodes {
		if n.Broker && n.Alive() {
			alive = append(alive, n.ID)
		}
	}
	slices.Sort(alive)
	assert.Equal(t, []int32{1, 2, 3, 4, 5}, alive, "every broker runs at the end")
}
