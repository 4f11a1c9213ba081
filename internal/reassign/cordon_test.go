package reassign

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// TestCordonCountPlanProperties: on random layouts, expansions and drains,
// the count plan (--balance replicas) with cordoned brokers never gives a
// cordoned broker a replica it did not hold (counted here from the plan's
// final layout), keeps every law of checkPlanLaws (the count bound aside: a cordon can
// make the per-topic targets it assumes unreachable), and refuses in one
// TargetError naming --cordon when too few brokers are left to take new
// replicas.
func TestCordonCountPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	planned, refused := 0, 0
	for iter := range 1500 {
		l := layout{brokers: 3 + rng.IntN(10), firstID: 1, topics: 1 + rng.IntN(6), minParts: 1, maxParts: 1 + rng.IntN(24), skew: rng.Float64() * 2}
		l.rf = 1 + rng.IntN(min(3, l.brokers))
		if rng.IntN(2) == 0 {
			l.racks = l.rf + rng.IntN(2)
		}
		c := generate(rng, l)
		opts := Options{FixOverlaps: rng.IntN(4) == 0}
		targets := slices.Clone(c.Brokers)
		switch rng.IntN(3) {
		case 1: // add brokers: the new ones are the natural cordon test
			for k := range 1 + rng.IntN(3) {
				b := topology.Broker{ID: c.Brokers[len(c.Brokers)-1].ID + 1 + int32(k)}
				if l.racks > 0 {
					b.Rack = c.Brokers[k%len(c.Brokers)].Rack
				}
				targets = append(targets, b)
			}
			opts.Brokers = targets
		case 2: // drain one broker: its replicas must land somewhere else
			if len(c.Brokers)-1 >= max(l.rf, l.racks)+1 {
				targets = slices.Clone(c.Brokers[1:])
				opts.Brokers = targets
			}
		}
		for _, k := range rng.Perm(len(targets))[:1+rng.IntN(2)] {
			opts.Cordon = append(opts.Cordon, targets[k].ID)
		}
		p, err := Compute(c, opts)
		if err != nil {
			var te *TargetError
			require.True(t, errors.As(err, &te), "iteration %d: %v", iter, err)
			require.Equal(t, "cordon", te.Field, "iteration %d: %v", iter, err)
			assert.Less(t, len(targets)-len(opts.Cordon), l.rf, "iteration %d: refused with enough brokers left: %v", iter, err)
			refused++
			continue
		}
		planned++
		if !t.Run(fmt.Sprintf("layout-%d", iter), func(t *testing.T) {
			checkPlanLaws(t, c, opts, p)
			for i, q := range p.Final.Partitions {
				for _, r := range q.Replicas {
					if slices.Contains(opts.Cordon, r) {
						require.Contains(t, c.Partitions[i].Replicas, r, "%s: new replica on cordoned broker %d", q.Key(), r)
					}
				}
			}
		}) {
			t.Logf("layout %+v options %+v", l, opts)
			break
		}
	}
	t.Logf("%d plans, %d refusals", planned, refused)
	require.Positive(t, planned)
	require.Positive(t, refused)
}
