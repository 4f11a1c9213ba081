package chaos

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestTotalRate(t *testing.T) {
	assert.Equal(t, int64(300), TotalRate([]WorkloadTopic{{Rate: 200}, {Rate: 100}}))
	assert.Zero(t, TotalRate([]WorkloadTopic{{Rate: 200}, {Rate: 0}}), "a topic written as fast as it can")
	assert.Zero(t, TotalRate(nil))
}

func TestCampaignValidate(t *testing.T) {
	ok := func() Campaign {
		c := Campaign{Config: Defaults(), Partitions: 3, ReplicationFactor: 2, Repeat: 1}
		c.Config.Assignment = nil // the ring over the cluster's brokers
		return c
	}
	c := ok()
	require.NoError(t, c.Validate(), "the assignment comes from the cluster")
	c.Config.Existing, c.Config.Sequential = true, true
	require.NoError(t, c.Validate(), "the existing topics are listed at run time")
	for _, tc := range []struct {
		name, field, msg string
		mut              func(*Campaign)
	}{
		{"repeat", "repeat", "want 1 to 1000, got 0", func(c *Campaign) { c.Repeat = 0 }},
		{"partitions", "partitions", "got 0", func(c *Campaign) { c.Partitions = 0 }},
		{"rf", FieldReplicationFactor, "at least 1", func(c *Campaign) { c.ReplicationFactor = 0 }},
		{"each repeated", "repeat", "not with the target each", func(c *Campaign) { c.Config.Target = Target{Kind: TargetEach}; c.Repeat = 2 }},
		{"config", "stick", "want 1 to 1000000", func(c *Campaign) { c.Config.Stick = 0 }},
		{"durations", "metadata-min-age", "must be positive", func(c *Campaign) { c.Config.MetadataMinAge = 0 }},
	} {
		c := ok()
		tc.mut(&c)
		err := c.Validate()
		require.Error(t, err, tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
		assert.Equal(t, tc.field, errkind.FieldOf(err), tc.name)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), tc.name)
	}
	// A run kills one broker: each is a campaign's target.
	cfg := Defaults()
	cfg.Target = Target{Kind: TargetEach}
	assert.Equal(t, "kill", errkind.FieldOf(cfg.Validate()))
	c = ok()
	c.Config.Target = Target{Kind: TargetEach}
	assert.NoError(t, c.Validate())
}

func TestParseTargetEach(t *testing.T) {
	got, err := ParseTarget("each")
	require.NoError(t, err)
	assert.Equal(t, Target{Kind: TargetEach}, got)
	assert.Equal(t, "each", got.String())
}

// TestNewKillEach: the measured skew is the largest share over the mean
// share, per kill and partitioner, computed the way the predicted one is.
func TestNewKillEach(t *testing.T) {
	run := func(id int32, shares map[string]float64) *Result {
		return &Result{Cluster: "embedded", Label: "sim", KilledBroker: id, Partitioners: []PartitionerResult{
			{Name: "roundrobin", Acked: 10, Phases: map[string]*PhaseResult{"after": {MeasuredShare: shares, PredictedShare: shares, PredictedMaxOverMean: ptr(1)}}},
			{Name: "node", Acked: 5, Phases: map[string]*PhaseResult{}},
		}}
	}
	// The second run lists its dead broker with a share of 0, as a real
	// cluster's after phase may: it is left out.
	k := NewKillEach([]*Result{run(1, map[string]float64{"2": 0.6, "3": 0.4}), run(2, map[string]float64{"1": 0.25, "2": 0, "3": 0.25, "4": 0.5})}, []bool{true, false})
	require.Len(t, k.Kills, 2)
	assert.Equal(t, KillEachSchema, k.Schema)
	assert.Equal(t, []int32{1, 2}, []int32{k.Kills[0].Broker, k.Kills[1].Broker})
	assert.Equal(t, []bool{true, false}, []bool{k.Kills[0].Restored, k.Kills[1].Restored})
	for i, want := range []float64{1.2, 1.5} {
		for _, p := range k.Kills[i].Partitioners {
			if p.Name == "node" {
				assert.Nil(t, p.MeasuredMaxOverMean, "no after phase, no figure")
				continue
			}
			// Brute force: max share times the number of brokers.
			var hi float64
			for _, s := range p.MeasuredShare {
				hi = max(hi, s)
			}
			assert.InDelta(t, hi*float64(len(p.MeasuredShare)), *p.MeasuredMaxOverMean, 1e-9)
			assert.InDelta(t, want, *p.MeasuredMaxOverMean, 1e-9)
			assert.InDelta(t, want, *p.PredictedMaxOverMean, 1e-9)
			assert.NotContains(t, p.PredictedShare, strconv.Itoa(int(k.Kills[i].Broker)))
		}
	}
}

func TestNotPreferred(t *testing.T) {
	m := &clusterMeta{topics: map[string][]partMeta{
		"a": {{leader: 1, replicas: []int32{1, 2}}, {leader: 1, replicas: []int32{2, 1}}},
		"b": {{leader: -1, replicas: []int32{3}}, {leader: 3, replicas: nil}},
	}}
	assert.Equal(t, []string{"a/1", "b/0"}, notPreferred(m))
}

// openCounter opens fresh embedded clusters and counts opens and closes.
type openCounter struct {
	brokers       int
	opens, closes int
}

type countedCluster struct {
	Cluster
	n *openCounter
}

func (c countedCluster) Close() { c.n.closes++; c.Cluster.Close() }

func (o *openCounter) open(context.Context, *Config) (Cluster, error) {
	c, err := embedded.NewCluster(o.brokers, "test")
	if err != nil {
		return nil, err
	}
	o.opens++
	return countedCluster{Cluster: c, n: o}, nil
}

// TestCampaignRepeat: repeated runs on fresh clusters, each closed, the
// ring assignment built over the cluster's brokers, the seed and the order
// of a sequential run's partitioners rotating, and a summary.
func TestCampaignRepeat(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiments")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	oc := &openCounter{brokers: 3}
	c := Campaign{Config: Defaults(), Partitions: 3, ReplicationFactor: 2, Repeat: 2, Open: oc.open}
	c.Config.Assignment = nil
	c.Config.Partitioners = []string{"roundrobin", "node"}
	c.Config.Sequential = true
	c.Config.Warmup, c.Config.Phase, c.Config.Rate = 200*time.Millisecond, 500*time.Millisecond, 20_000
	var seen []int
	c.OnRun = func(i, n int, res *Result) {
		assert.Equal(t, 2, n)
		require.NotNil(t, res)
		seen = append(seen, i)
	}
	require.NoError(t, c.Validate())
	out, err := c.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, seen)
	require.Len(t, out.Runs, 2)
	assert.Equal(t, 2, oc.opens)
	assert.Equal(t, 2, oc.closes, "every cluster the campaign opened is closed")
	require.NotNil(t, out.Summary)
	assert.Nil(t, out.Kills)
	assert.Nil(t, out.ISR, "nothing to check on a simulated cluster")
	for i, want := range [][]string{{"roundrobin", "node"}, {"node", "roundrobin"}} {
		assert.Equal(t, "1,2;2,3;3,1", out.Runs[i].Assignment, "the ring over the cluster's brokers")
		var got []string
		for _, p := range out.Runs[i].Partitioners {
			got = append(got, p.Name)
		}
		assert.Equal(t, want, got, "run %d: a sequential run's order rotates", i+1)
	}
}

// TestCampaignRingTooLarge: a replication factor above the cluster's
// brokers is the user's input, named by its field, and nothing runs.
func TestCampaignRingTooLarge(t *testing.T) {
	oc := &openCounter{brokers: 2}
	c := Campaign{Config: Defaults(), Partitions: 3, ReplicationFactor: 3, Repeat: 1, Open: oc.open}
	c.Config.Assignment = nil
	out, err := c.Run(context.Background())
	require.Error(t, err)
	assert.Equal(t, FieldReplicationFactor, errkind.FieldOf(err))
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Empty(t, out.Runs)
	assert.Equal(t, oc.opens, oc.closes)
}

// What needs a killer, and every kill undone, on a cluster kplan does not
// run.
func TestCampaignNeeds(t *testing.T) {
	kill := Target{Kind: TargetBroker, Broker: 2}
	fault := &Fault{Kind: FaultDelay}
	for _, tc := range []struct {
		name            string
		cfg             Config
		repeat          int
		killer, restore string
	}{
		{"no kill", Config{Target: Target{Kind: TargetNone}}, 3, "", ""},
		{"fault alone", Config{Target: Target{Kind: TargetNone}, Fault: fault}, 1, "--fault on a --bootstrap-server cluster (chaos-mesh injects it as a NetworkChaos)", ""},
		{"one kill", Config{Target: kill}, 1, "--bootstrap-server (chaos-mesh, docker or exec)", ""},
		{"restore", Config{Target: kill, Restore: true}, 1, "--bootstrap-server (chaos-mesh, docker or exec)", "--restore"},
		{"each", Config{Target: Target{Kind: TargetEach}}, 1, "--bootstrap-server (chaos-mesh, docker or exec)", "--kill each (each kill is undone before the next)"},
		{"repeat", Config{Target: kill}, 2, "--bootstrap-server (chaos-mesh, docker or exec)", "--repeat (each run needs the broker back)"},
		{"sequential", Config{Target: kill, Sequential: true, Partitioners: []string{"a", "b"}}, 1, "--bootstrap-server (chaos-mesh, docker or exec)", "--sequential (each partitioner's leg needs the broker back)"},
		{"sequential, one partitioner", Config{Target: kill, Sequential: true, Partitioners: []string{"a"}}, 1, "--bootstrap-server (chaos-mesh, docker or exec)", ""},
	} {
		c := &Campaign{Config: tc.cfg, Repeat: tc.repeat}
		assert.Equal(t, tc.killer, c.KillerNeeded(), tc.name)
		assert.Equal(t, tc.restore, c.RestoreNeeded(), tc.name)
	}
}

// Complete builds the ring over the cluster's brokers, lists the existing
// topics, and refuses an assignment or a replication factor the cluster
// cannot hold, naming the field.
func TestCampaignComplete(t *testing.T) {
	cl, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()

	ring := Defaults()
	ring.Assignment = nil
	c := &Campaign{Config: ring, Partitions: 3, ReplicationFactor: 2}
	require.NoError(t, c.Complete(ctx, cl))
	assert.Equal(t, [][]int32{{1, 2}, {2, 3}, {3, 1}}, c.Config.Assignment)

	for _, tc := range []struct {
		name  string
		c     *Campaign
		field string
	}{
		{"rf", &Campaign{Config: Config{}, Partitions: 3, ReplicationFactor: 4}, FieldReplicationFactor},
		{"assignment", &Campaign{Config: Config{Assignment: [][]int32{{1, 9}}}}, "assignment"},
	} {
		var ke *errkind.Error
		require.ErrorAs(t, tc.c.Complete(ctx, cl), &ke, tc.name)
		assert.Equal(t, tc.field, ke.Field, tc.name)
	}

	existing := &Campaign{Config: Config{Existing: true}, Existing: func(context.Context, Cluster, Config) ([]WorkloadTopic, error) {
		return []WorkloadTopic{{Name: "a", Rate: 100}, {Name: "b", Rate: 50}}, nil
	}}
	require.NoError(t, existing.Complete(ctx, cl))
	assert.Len(t, existing.Config.Workload, 2)
	assert.Equal(t, int64(150), existing.Config.Rate)
	assert.Nil(t, existing.Config.Assignment, "existing topics keep their own layout")
}
