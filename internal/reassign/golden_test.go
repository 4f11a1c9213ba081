package reassign

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
	"github.com/kplan-dev/kplan/internal/topology"
)

// layouts is the repository's shared directory of input layouts.
const layouts = "../../testdata/layouts/"

func load(t testing.TB, path string) *topology.Cluster {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // read-only
	c, err := topology.Load(f, path)
	require.NoError(t, err)
	return c
}

// render is everything a plan produces, as bytes: the plan, the rollback,
// the elections and the summary.
func render(t testing.TB, p *Plan) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, topology.WriteReassignment(&b, p.New()))
	require.NoError(t, topology.WriteReassignment(&b, p.Rollback()))
	for _, k := range p.Elections {
		b.WriteString(k.String() + "\n")
	}
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(p.Summary))
	return b.Bytes()
}

// The thesis's layouts (Burato 2019): §6.4's prototype cluster (topic A on
// nodes 1,2,2; B on 2,3), Fig 3.5's cluster Z (groups {A,C} on {1,2} and
// {B} on {2} overlap on broker 2; replicas our reading of the figure) and
// Fig 3.8 (B's four partitions on three nodes).
func TestThesisLayouts(t *testing.T) {
	for _, tc := range []struct {
		layout string
		opts   Options
		// overlapsAfter: overlapping max-group pairs after the plan.
		overlapsAfter int
	}{
		{"thesis-6.4", Options{}, 1},
		{"thesis-6.4", Options{FixOverlaps: true}, 0},
		// Balancing leaders alone spreads the small topics apart: three
		// overlapping pairs where there was one. --fix-overlaps removes all.
		{"thesis-fig3.5-z-rf2", Options{}, 3},
		{"thesis-fig3.5-z-rf2", Options{FixOverlaps: true}, 0},
		{"thesis-fig3.8", Options{FixOverlaps: true}, 0},
	} {
		name := strings.TrimSuffix(tc.layout, "-z-rf2")
		if tc.opts.FixOverlaps {
			name += "-fix-overlaps"
		}
		t.Run(name, func(t *testing.T) {
			c := load(t, layouts+tc.layout+".json")
			p, err := Compute(c, tc.opts)
			require.NoError(t, err)
			checkPlan(t, c, tc.opts, p)
			assert.Equal(t, tc.overlapsAfter, p.Summary.After.Overlaps)
			reps, leads := balanced(p)
			assert.True(t, reps && leads, "balanced")
			golden.Assert(t, name+".txt", render(t, p))
		})
	}
}

// §6.4 with --fix-overlaps is the thesis's Fig 6.6: topic B moves to node 3
// and A keeps nodes 1 and 2, with one replica moved.
func TestThesis64IsFig66(t *testing.T) {
	c := load(t, layouts+"thesis-6.4.json")
	p, err := Compute(c, Options{FixOverlaps: true})
	require.NoError(t, err)
	require.Len(t, p.Changes, 1)
	assert.Equal(t, "B-0", p.Changes[0].New.Key().String())
	assert.Equal(t, []int32{3}, p.Changes[0].New.Replicas)
	assert.Equal(t, 1, p.Summary.ReplicasMoved)
}

func TestDeterministic(t *testing.T) {
	c := generate(rand.New(rand.NewPCG(3, 4)), layout{brokers: 40, firstID: 100, topics: 60, minParts: 1, maxParts: 50, rf: 3, racks: 4, skew: 0.8})
	opts := Options{Brokers: append(c.Clone().Brokers[3:], topology.Broker{ID: 500, Rack: "rack-1"})}
	for _, fix := range []bool{false, true} {
		opts.FixOverlaps = fix
		a, err := Compute(c, opts)
		require.NoError(t, err)
		b, err := Compute(c.Clone(), opts)
		require.NoError(t, err)
		assert.Equal(t, render(t, a), render(t, b))
		// The same seed gives the same plan, too.
		opts.Rand = rand.New(rand.NewPCG(9, 9))
		a, err = Compute(c, opts)
		require.NoError(t, err)
		opts.Rand = rand.New(rand.NewPCG(9, 9))
		b, err = Compute(c, opts)
		require.NoError(t, err)
		assert.Equal(t, render(t, a), render(t, b))
		opts.Rand = nil
	}
}

func TestBadTargets(t *testing.T) {
	c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "b"}, {ID: 3, Rack: "c"}},
		Partitions: []topology.Partition{{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1}}}
	dup := &topology.Cluster{Partitions: []topology.Partition{{Topic: "t", Replicas: []int32{1, 1}}}}
	dup.Normalize()
	for _, tc := range []struct {
		name  string
		c     *topology.Cluster
		opts  Options
		field string
		want  string
	}{
		{"too few brokers", c, Options{Brokers: []topology.Broker{{ID: 1}, {ID: 2}}}, "brokers", "2 target brokers cannot hold replication factor 3"},
		{"rf above brokers", c, Options{ReplicationFactor: 4}, "replication-factor", "3 target brokers cannot hold replication factor 4"},
		{"duplicate broker", c, Options{Brokers: []topology.Broker{{ID: 1}, {ID: 1}}}, "brokers", "broker 1 is listed twice"},
		{"rack missing", c, Options{Brokers: []topology.Broker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}}, "brokers", "broker 4 has no rack while broker 3 has one"},
		{"cell size alone", c, Options{CellSize: 3}, "cell-size", "only applies with fix-overlaps"},
		{"cell size not dividing", c, Options{FixOverlaps: true, CellSize: 2}, "cell-size", "2 does not divide the 3 target brokers into whole cells"},
		// Faults of the layout itself name no option.
		{"duplicate replica", dup, Options{}, "", "partition t-0 lists broker 1 twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compute(tc.c, tc.opts)
			var te *TargetError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
			assert.True(t, strings.HasPrefix(te.Msg, tc.want), "%q does not start with %q", te.Msg, tc.want)
			assert.NotContains(t, err.Error(), "--"+tc.field+":", "the domain does not spell flags")
		})
	}
}

// A layout with fewer target brokers than a partition's replication factor
// and no option given: the error names no option (the layout is at fault).
func TestLayoutRFAboveBrokersBlamesNoFlag(t *testing.T) {
	c := &topology.Cluster{Brokers: []topology.Broker{{ID: 1}, {ID: 2}},
		Partitions: []topology.Partition{{Topic: "t", Replicas: []int32{1, 2, 3}, Leader: 1}}}
	// Broker 3 holds a replica but is not a target: drained as the cluster
	// lists only 1 and 2 (a live snapshot whose broker 3 is down).
	_, err := Compute(c, Options{})
	var te *TargetError
	require.ErrorAs(t, err, &te)
	assert.Empty(t, te.Field)
	assert.Equal(t, "2 target brokers cannot hold replication factor 3", te.Msg)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
}

func TestWaves(t *testing.T) {
	c := generate(rand.New(rand.NewPCG(5, 6)), layout{brokers: 12, firstID: 1, topics: 10, minParts: 5, maxParts: 40, rf: 3, skew: 1})
	p, err := Compute(c, Options{})
	require.NoError(t, err)
	require.NotEmpty(t, p.Changes)
	for _, tc := range []struct{ waves, max int }{{4, 0}, {0, 10}, {3, 5}} {
		waves := SplitWaves(p, tc.waves, tc.max)
		seen := map[topology.Key]bool{}
		total := 0
		for wi, wave := range waves {
			moves := 0
			for _, ch := range wave {
				require.False(t, seen[ch.New.Key()], "partition in two waves")
				seen[ch.New.Key()] = true
				moves += ch.Moves
			}
			if tc.max > 0 {
				assert.True(t, moves <= tc.max || len(wave) == 1, "wave %d has %d moves", wi+1, moves)
			}
			total += moves
			assert.Equal(t, moves, p.Summary.Waves[wi].ReplicasMoved)
		}
		assert.Len(t, seen, len(p.Changes))
		assert.Equal(t, p.Summary.ReplicasMoved, total)
		if tc.waves > 0 && tc.max == 0 {
			assert.Len(t, waves, tc.waves)
		}
	}
}

// With --cell-size, every topic (all have at least as many partitions as a
// cell) leads from exactly one whole cell: max groups are the cells and no
// pair overlaps, while replicas and leaders stay balanced.
func TestCells(t *testing.T) {
	c, err := topology.Generate(topology.GenOptions{Brokers: 12, FirstID: 1, Topics: 30, Partitions: 600, ReplicationFactor: 3, Scatter: 0.5}, rand.New(rand.NewPCG(3, 3)))
	require.NoError(t, err)
	for _, k := range []int{4, 6, 12} {
		opts := Options{FixOverlaps: true, CellSize: k}
		p, err := Compute(c, opts)
		require.NoError(t, err)
		checkPlan(t, c, opts, p)
		assert.Equal(t, 12/k, p.Summary.After.MaxGroups, "cell size %d", k)
		assert.Zero(t, p.Summary.After.Overlaps)
		assert.Equal(t, 30, p.Summary.After.TopicsLeadersWithinOne)
		reps, leads := balanced(p)
		assert.True(t, reps && leads)
		assert.LessOrEqual(t, p.Summary.ReplicasMoved, int(1.1*float64(p.Summary.LowerBound))+1)
	}
}
