package reassign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

// ring returns a layout of partitions with replication factor rf over the
// brokers ids in a ring, the i-th partition starting at broker i mod n.
func ring(topic string, parts, rf int, ids ...int32) []topology.Partition {
	var out []topology.Partition
	for p := range parts {
		var reps []int32
		for j := range rf {
			reps = append(reps, ids[(p+j)%len(ids)])
		}
		out = append(out, topology.Partition{Topic: topic, Partition: int32(p), Replicas: reps, Leader: reps[0]})
	}
	return out
}

// A broker that replicas name but the cluster's broker list does not is
// down: a live cluster with it Missing, or a layout whose broker is known
// only from replicas. Plans used to place replicas and leaders on it; now
// it is drained and never a target, and an explicit target list naming it
// is refused.
func TestDownBrokerIsDrained(t *testing.T) {
	for _, live := range []bool{true, false} {
		c := &topology.Cluster{Live: live, Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}}}
		c.Partitions = ring("t", 12, 2, 1, 2, 3, 4)
		c.Normalize()
		down, _ := c.Broker(4)
		require.True(t, down.Missing)
		p, err := Compute(c, Options{})
		require.NoError(t, err)
		checkPlan(t, c, Options{}, p)
		require.NoError(t, Check(c, p, Options{}))
		for _, fp := range p.Final.Partitions {
			assert.NotContains(t, fp.Replicas, int32(4), "%s", fp.Key())
			assert.NotEqual(t, int32(4), fp.Leader)
		}
		assert.Equal(t, []int32{4}, p.Summary.DrainedBrokers)
		assert.Equal(t, []int32{1, 2, 3}, p.Summary.TargetBrokers)
		assert.Contains(t, strings.Join(p.Summary.Notes, "\n"), "broker 4 is down")

		_, err = Compute(c, Options{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 4}}})
		var te *TargetError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "brokers", te.Field)
		assert.Contains(t, te.Msg, "broker 4 is down")
	}
}

// sameRackPairs counts partitions with two replicas in one named rack, by
// the racks of c's brokers: the independent count of rack violations when
// there are at least as many racks as replicas.
func sameRackPairs(c *topology.Cluster, parts []topology.Partition) int {
	bad := 0
	for _, p := range parts {
		seen := map[string]bool{}
		for _, r := range p.Replicas {
			b, _ := c.Broker(r)
			if b.Rack != "" && seen[b.Rack] {
				bad++
				break
			}
			seen[b.Rack] = true
		}
	}
	return bad
}

// One rack-less broker (or a down one) used to turn rack awareness off for
// the whole plan while the summary said "rack violations 0" before and
// after. Now the rack-less broker counts as a rack of its own, the brokers
// with racks keep their rules, and the summary counts what is there.
func TestRacklessBrokerKeepsRacks(t *testing.T) {
	for _, down := range []bool{false, true} {
		brokers := []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}, {ID: 6, Rack: "c"}}
		if !down {
			brokers = append(brokers, topology.Broker{ID: 5})
		}
		c := &topology.Cluster{Live: down, Brokers: brokers}
		// Every partition on two brokers of one rack, some on broker 5.
		c.Partitions = append(ring("a", 6, 2, 1, 2), ring("b", 6, 2, 3, 4)...)
		c.Partitions = append(c.Partitions, ring("c", 6, 2, 5, 6)...)
		c.Normalize()
		p, err := Compute(c, Options{})
		require.NoError(t, err)
		checkPlan(t, c, Options{}, p)
		assert.Equal(t, 12, sameRackPairs(c, c.Partitions))
		assert.Equal(t, 12, p.Summary.Before.RackViolations, "down=%v", down)
		assert.Zero(t, sameRackPairs(c, p.Final.Partitions), "down=%v", down)
		assert.Zero(t, p.Summary.After.RackViolations)
	}
}

// An RF-1 topic spread 1-1-1 used to be moved entirely onto one broker by
// --fix-overlaps (its leader block: its only replica is its data), several
// times the lower bound. Partitions of replication factor 1 now stay and
// lead where they are: a balanced layout moves nothing, the bound.
func TestFixOverlapsKeepsRF1Data(t *testing.T) {
	for _, tc := range []struct {
		name string
		rf   int
	}{{"with rf 1", 1}, {"with rf 2", 2}, {"with rf 3", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}}
			c.Partitions = append(ring("a", 3, 1, 1, 2, 3), ring("big", 32, tc.rf, 1, 2, 3, 4)...)
			c.Partitions = append(c.Partitions, ring("c", 1, 1, 4)...)
			c.Normalize()
			opts := Options{FixOverlaps: true}
			p, err := Compute(c, opts)
			require.NoError(t, err)
			checkPlan(t, c, opts, p)
			assert.Equal(t, p.Summary.LowerBound, p.Summary.ReplicasMoved)
			assert.Equal(t, movesBetween(c, p.Final), p.Summary.ReplicasMoved)
			for _, fp := range p.Final.Partitions {
				if fp.Topic != "big" {
					assert.Equal(t, c.Partitions[c.Find(fp.Key())].Replicas, fp.Replicas, "%s moved", fp.Key())
				}
			}
		})
	}
}

// perBroker counts replicas and leaders per broker of c.
func perBroker(c *topology.Cluster) (map[int32]int, map[int32]int) {
	reps, leads := map[int32]int{}, map[int32]int{}
	for _, b := range c.Brokers {
		reps[b.ID], leads[b.ID] = 0, 0
	}
	for _, p := range c.Partitions {
		for _, r := range p.Replicas {
			reps[r]++
		}
		leads[p.Leader]++
	}
	return reps, leads
}

// On a cluster already within a few percent of even, kplan used to propose
// hundreds of moves and leader changes to reach floor/ceil of the mean.
// With a tolerance, brokers inside the band are left alone: a layout within
// it moves nothing, and one outside moves exactly its lower bound, every
// broker ending inside the band.
func TestToleranceLeavesBalancedBrokersAlone(t *testing.T) {
	for seed := range uint64(4) {
		c := generate(rand.New(rand.NewPCG(seed, 20)), layout{brokers: 30, firstID: 1, racks: 3 * int(seed%2), topics: 300, minParts: 20, maxParts: 50, rf: 3, skew: 0})
		reps, _ := perBroker(c)
		total := 0
		for _, k := range reps {
			total += k
		}
		mean := float64(total) / float64(len(reps))
		for _, tol := range []float64{0.02, 0.05, 0.1} {
			opts := Options{Tolerance: tol}
			p, err := Compute(c, opts)
			require.NoError(t, err)
			checkPlan(t, c, opts, p)
			require.NoError(t, Check(c, p, opts))
			inside := true
			for _, k := range reps {
				inside = inside && float64(k) >= mean*(1-tol)-1e-9 && float64(k) <= mean*(1+tol)+1e-9
			}
			if inside {
				assert.Zero(t, p.Summary.ReplicasMoved, "seed %d tol %g: every broker is inside the band", seed, tol)
			}
			if c.Brokers[0].Rack == "" {
				assert.Equal(t, p.Summary.LowerBound, p.Summary.ReplicasMoved, "seed %d tol %g", seed, tol)
			}
			after, _ := perBroker(p.Final)
			for b, k := range after {
				assert.GreaterOrEqual(t, float64(k), min(math.Floor(mean), math.Ceil(mean*(1-tol)-1e-9)), "seed %d tol %g broker %d", seed, tol, b)
				assert.LessOrEqual(t, float64(k), max(math.Ceil(mean), math.Floor(mean*(1+tol)+1e-9)), "seed %d tol %g broker %d", seed, tol, b)
			}
		}
		// Without a tolerance the same layout is balanced to floor/ceil:
		// the moves the tolerance saves.
		p, err := Compute(c, Options{})
		require.NoError(t, err)
		q, err := Compute(c, Options{Tolerance: 0.05})
		require.NoError(t, err)
		assert.Greater(t, p.Summary.ReplicasMoved, q.Summary.ReplicasMoved, "seed %d", seed)
		assert.Greater(t, p.Summary.LeaderChanges, q.Summary.LeaderChanges, "seed %d", seed)
	}
}

// A tolerance below floor/ceil of a small mean changes nothing: small
// layouts plan as without it.
func TestToleranceSmallMeansUnchanged(t *testing.T) {
	c := load(t, layouts+"kafkakit-optimize-input.json")
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	q, err := Compute(c, Options{Tolerance: 0.05})
	require.NoError(t, err)
	assert.Equal(t, p.Changes, q.Changes)
	assert.Equal(t, 102, q.Summary.ReplicasMoved)
	assert.Zero(t, q.Summary.Tolerance, "the band was floor/ceil everywhere")
}

// --max-moves keeps the changes that fit and counts the rest; what it
// keeps is a valid plan of its own, and drained brokers empty first.
func TestMaxMoves(t *testing.T) {
	c := generate(rand.New(rand.NewPCG(5, 5)), layout{brokers: 12, firstID: 1, topics: 30, minParts: 3, maxParts: 30, rf: 3, skew: 1})
	opts := Options{Brokers: c.Brokers[1:]}
	full, err := Compute(c, opts)
	require.NoError(t, err)
	onDrained := 0 // the moves of the changes that empty the drained broker
	for _, ch := range full.Changes {
		if slices.Contains(ch.Old.Replicas, c.Brokers[0].ID) {
			onDrained += ch.Moves
		}
	}
	require.Greater(t, full.Summary.ReplicasMoved, onDrained+10)
	for _, limit := range []int{1, onDrained, onDrained + 10, full.Summary.ReplicasMoved, full.Summary.ReplicasMoved + 1} {
		opts.MaxMoves = limit
		p, err := Compute(c, opts)
		require.NoError(t, err)
		require.NoError(t, Check(c, p, opts))
		assert.LessOrEqual(t, p.Summary.ReplicasMoved, limit)
		assert.Equal(t, full.Summary.ReplicasMoved, p.Summary.ReplicasMoved+p.Summary.MovesLeft, "limit %d", limit)
		assert.Equal(t, movesBetween(c, p.Final), p.Summary.ReplicasMoved)
		if limit >= onDrained {
			after, _ := perBroker(p.Final)
			assert.Zero(t, after[c.Brokers[0].ID], "limit %d: the drained broker empties first", limit)
		}
		if p.Summary.MovesLeft > 0 {
			assert.Contains(t, strings.Join(p.Summary.Notes, "\n"), "keep their assignment for a later run")
		}
	}
}

// A partition in the middle of a reassignment lists its old and new
// replicas together (Kafka's metadata while adding replicas); planning from
// that list made the move a permanent replication-factor increase. With
// the ongoing reassignments it is planned from its target replicas.
func TestOngoingReassignmentKeepsRF(t *testing.T) {
	c := &topology.Cluster{Live: true, Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}}
	c.Partitions = ring("t", 8, 2, 1, 2, 3, 4)
	// t-0 moves from 1,2 to 2,3: while adding 3 it lists 1,2,3.
	c.Partitions[0].Replicas = []int32{1, 2, 3}
	c.Partitions[0].ISR = []int32{1, 2}
	c.Normalize()
	ongoing := map[topology.Key]topology.Ongoing{{Topic: "t", Partition: 0}: {Replicas: []int32{1, 2, 3}, Adding: []int32{3}, Removing: []int32{1}}}
	opts := Options{Ongoing: ongoing}
	p, err := Compute(c, opts)
	require.NoError(t, err)
	require.NoError(t, Check(c, p, Options{}))
	for _, fp := range p.Final.Partitions {
		assert.Len(t, fp.Replicas, 2, "%s: replication factor", fp.Key())
	}
	assert.Contains(t, strings.Join(p.Summary.Notes, "\n"), "1 partition is in the middle of a reassignment, planned from the replicas it is moving to (t-0 1,2,3 -> 2,3)")
	assert.Equal(t, []int32{1, 2, 3}, c.Partitions[0].Replicas, "the input is not changed")

	// Without them, the same layout keeps replication factor 3 for t-0.
	q, err := Compute(c, Options{})
	require.NoError(t, err)
	assert.Len(t, q.Final.Partitions[0].Replicas, 3)
}

// A drain plan used to include replication-factor-1 partitions on a dead
// broker without a word: their data is gone while it is down. The plan now
// warns, and also names partitions whose only copies are on live drained
// brokers (they must stay up until the move completes).
func TestDrainWarnsAboutLostPartitions(t *testing.T) {
	c := &topology.Cluster{Live: true, Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}}}
	c.Partitions = append(ring("rf1", 4, 1, 1, 2, 3, 4), ring("rf2", 4, 2, 1, 2, 3, 4)...)
	c.Normalize() // broker 4 is down
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	notes := strings.Join(p.Summary.Notes, "\n")
	assert.Contains(t, notes, "1 partition has every replica on a down broker or no leader (rf1-3 on 4)")
	assert.NotContains(t, notes, "no replica on a target broker")

	// Draining live broker 3 as well: rf1-2 has its only copy there.
	p, err = Compute(c, Options{Brokers: []topology.Broker{{ID: 1}, {ID: 2}}})
	require.NoError(t, err)
	notes = strings.Join(p.Summary.Notes, "\n")
	assert.Contains(t, notes, "1 partition has every replica on a down broker or no leader (rf1-3 on 4)")
	assert.Contains(t, notes, "2 partitions have no replica on a target broker (rf1-2 on 3; rf2-2 on 3,4)")
}

// Properties on random layouts with a down broker, a rack-less broker, a
// tolerance and a move cap: the laws every plan obeys (checkPlan), no
// replica on the down broker, no rack shared by two replicas among brokers
// with racks when there are enough racks, every broker inside the
// tolerance band without a cap, and no more moves than the cap.
func TestPropertiesDownRacklessTolerance(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 20))
	for iter := range 400 {
		l := layout{brokers: 4 + rng.IntN(10), firstID: 1, topics: 1 + rng.IntN(6), minParts: 1, maxParts: 1 + rng.IntN(60), skew: rng.Float64()}
		l.rf = 1 + rng.IntN(3)
		if rng.IntN(2) == 0 {
			l.racks = l.rf + rng.IntN(2)
		}
		c := generate(rng, l)
		c.Live = true
		down := c.Brokers[rng.IntN(len(c.Brokers))].ID
		if rng.IntN(3) == 0 {
			c.Brokers[rng.IntN(len(c.Brokers))].Rack = "" // one rack-less broker
		}
		c.Brokers = slices.DeleteFunc(c.Brokers, func(b topology.Broker) bool { return b.ID == down })
		c.Normalize()
		opts := Options{Tolerance: []float64{0, 0.05, 0.2}[rng.IntN(3)]}
		if rng.IntN(3) == 0 {
			opts.MaxMoves = rng.IntN(20)
		}
		live := 0
		racks := map[string]bool{}
		for _, b := range c.Brokers {
			if !b.Missing {
				live++
				racks[b.Rack] = true
			}
		}
		if live < l.rf {
			continue
		}
		p, err := Compute(c, opts)
		require.NoError(t, err, "iteration %d", iter)
		if !t.Run(fmt.Sprintf("layout-%d", iter), func(t *testing.T) {
			if opts.MaxMoves == 0 {
				checkPlan(t, c, opts, p) // a capped plan leaves partitions where they are
			}
			require.NoError(t, Check(c, p, opts))
			assert.Equal(t, movesBetween(c, p.Final), p.Summary.ReplicasMoved)
			for _, ch := range p.Changes {
				assert.NotContains(t, ch.New.Replicas, down, "%s on the down broker", ch.New.Key())
			}
			if opts.MaxMoves > 0 {
				assert.LessOrEqual(t, p.Summary.ReplicasMoved, max(opts.MaxMoves, 0))
				return
			}
			for _, fp := range p.Final.Partitions {
				assert.NotContains(t, fp.Replicas, down)
			}
			if l.racks >= l.rf && len(racks) > l.rf {
				assert.Zero(t, sameRackPairs(p.Final, p.Final.Partitions), "iteration %d", iter)
			}
			after, _ := perBroker(p.Final)
			total := 0
			for _, k := range after {
				total += k
			}
			w := &work{opts: opts}
			lo, hi := w.band(total, len(after))
			if l.racks == 0 {
				for b, k := range after {
					assert.True(t, k >= lo && k <= hi, "iteration %d: broker %d holds %d, band %d-%d", iter, b, k, lo, hi)
				}
			}
		}) {
			t.Logf("layout %+v options %+v down %d", l, opts, down)
			break
		}
	}
}
