//go:build integration

package failover5

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestReassignProofFailover5 runs issue 20's proof short on the 5-broker,
// 2-rack lab: --kill each on the failover-5 topics, `kplan reassign` and
// `kplan reassign apply` on them, --kill each again on the same topics. It
// checks invariants only (the plan changes something and is applied, read
// back with a client of its own; every kill restored, with a prediction,
// nothing lost, before and after); the measured shares against the bound
// are `make acceptance`'s (proof_acceptance_test.go).
func TestReassignProofFailover5(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 5, Racks: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	seq := sequence{Prefix: "proof", Timing: []string{"--warmup", "1s", "--phase-duration", "2s", "--rate", "100kB/s"}}
	res := seq.run(ctx, t, lab)
	checkKillEach(t, "before", res.Before, seq.Prefix)
	require.NotEmpty(t, res.Plan, "the failover-5 layout needs a plan")
	checkKillEach(t, "after", res.After, seq.Prefix)
}
