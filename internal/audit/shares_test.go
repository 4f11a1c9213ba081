package audit

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// section64 is the thesis's §6.4 cluster: topic A's three partitions led
// by brokers 1, 2, 2 and topic B's two by 2, 3 (replication factor 1).
func section64() *topology.Cluster {
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "A", Partition: 0, Replicas: []int32{1}, Leader: 1},
		{Topic: "A", Partition: 1, Replicas: []int32{2}, Leader: 2},
		{Topic: "A", Partition: 2, Replicas: []int32{2}, Leader: 2},
		{Topic: "B", Partition: 0, Replicas: []int32{2}, Leader: 2},
		{Topic: "B", Partition: 1, Replicas: []int32{3}, Leader: 3},
	}}
	c.Normalize()
	return c
}

func ab(a, b float64, keys ...workload.Keys) []workload.Topic {
	out := []workload.Topic{{Name: "A", Rate: a}, {Name: "B", Rate: b}}
	for i, k := range keys {
		out[i].Keys = k
	}
	return out
}

// TestPredictSharesSection64 is the thesis's §6.4 table at a = 3, b = 2:
// round robin a/3, 2a/3+b/2, b/2 = 1, 3, 1; node and SQF a/2, a/2+b/2,
// b/2 = 1.5, 2.5, 1. Every keyless partitioner balancing partitions gives
// round robin's row, every one balancing brokers node's.
func TestPredictSharesSection64(t *testing.T) {
	rr := map[int32]float64{1: 1, 2: 3, 3: 1}
	node := map[int32]float64{1: 1.5, 2: 2.5, 3: 1}
	tests := []struct {
		name string
		o    ShareOptions
		want map[int32]float64
	}{
		{RoundRobin, ShareOptions{}, rr},
		{Random, ShareOptions{}, rr},
		{LeastBackup, ShareOptions{}, rr},
		{Default, ShareOptions{}, rr},
		{Hash, ShareOptions{}, rr},
		{Node, ShareOptions{}, node},
		{SQF, ShareOptions{}, node},
		{SQF, ShareOptions{Regime: Saturated}, node},
		{SQFShared, ShareOptions{Regime: RateCapped}, node},
	}
	for _, tt := range tests {
		got, err := PredictShares(section64(), ab(3, 2), tt.name, tt.o)
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.name, got.Partitioner)
		assert.NotEmpty(t, got.Basis, tt.name)
		assert.InDeltaMapValues(t, tt.want, got.Load, 1e-12, tt.name)
	}
}

// TestPredictSharesKeyed: keyed records go where murmur2 sends them (the
// rule TestPartitionOfMatchesFranzGo checks against franz-go and Kafka's
// vectors), for hash and default alike; keyless ones as round robin.
func TestPredictSharesKeyed(t *testing.T) {
	// One key: all of A lands on the partition key-0 hashes to.
	pa := workload.PartitionOf(workload.Key(0), 3)
	leaderA := []int32{1, 2, 2}[pa]
	pb := workload.PartitionOf(workload.Key(0), 2)
	leaderB := []int32{2, 3}[pb]
	one := workload.Keys{Kind: workload.KeysUniform, N: 1}
	for _, name := range []string{Hash, Default} {
		want := map[int32]float64{1: 0, 2: 0, 3: 0}
		want[leaderA] += 3
		want[leaderB] += 2
		got, err := PredictShares(section64(), ab(3, 2, one, one), name, ShareOptions{})
		require.NoError(t, err)
		assert.InDeltaMapValues(t, want, got.Load, 1e-12, name)
		// Keys on A only: B keyless splits b over its two partitions.
		want = map[int32]float64{1: 0, 2: 1, 3: 1}
		want[leaderA] += 3
		got, err = PredictShares(section64(), ab(3, 2, one), name, ShareOptions{})
		require.NoError(t, err)
		assert.InDeltaMapValues(t, want, got.Load, 1e-12, name)
		// Keyed records do not change the keyless partitioners.
		got, err = PredictShares(section64(), ab(3, 2, one, one), RoundRobin, ShareOptions{})
		require.NoError(t, err)
		assert.InDeltaMapValues(t, map[int32]float64{1: 1, 2: 3, 3: 1}, got.Load, 1e-12)
	}
	// Many keys: each broker takes the mass of its partitions' keys.
	zipf := workload.Keys{Kind: workload.KeysZipf, S: 1.1, N: 1000}
	m := zipf.PartitionMass(3)
	got, err := PredictShares(section64(), []workload.Topic{{Name: "A", Rate: 10, Keys: zipf}}, Hash, ShareOptions{})
	require.NoError(t, err)
	assert.InDeltaMapValues(t, map[int32]float64{1: 10 * m[0], 2: 10 * (m[1] + m[2]), 3: 0}, got.Load, 1e-9)
}

// TestPredictSharesOffline: a partition with no leader, or led by a broker
// that is down, takes nothing; keyless partitioners spread its share over
// the writable ones, keyed records bound for it wait.
func TestPredictSharesOffline(t *testing.T) {
	noLeader := section64()
	noLeader.Partitions[1].Leader = topology.NoLeader
	missing := section64()
	missing.Brokers[1].Missing = true // broker 2, B-0 unwritable
	tests := []struct {
		name string
		c    *topology.Cluster
		part string
		want map[int32]float64
	}{
		// A over A-0 (1) and A-2 (2): 1.5 each; B as before.
		{"no leader", noLeader, RoundRobin, map[int32]float64{1: 1.5, 2: 1.5 + 1, 3: 1}},
		{"no leader", noLeader, Node, map[int32]float64{1: 1.5, 2: 1.5 + 1, 3: 1}},
		{"missing", missing, RoundRobin, map[int32]float64{1: 3, 2: 0, 3: 2}},
		{"missing", missing, Node, map[int32]float64{1: 3, 2: 0, 3: 2}},
		{"missing", missing, SQFShared, map[int32]float64{1: 3, 2: 0, 3: 2}},
		{"missing", missing, Random, map[int32]float64{1: 3, 2: 0, 3: 2}},
	}
	for _, tt := range tests {
		got, err := PredictShares(tt.c, ab(3, 2), tt.part, ShareOptions{})
		require.NoError(t, err)
		assert.InDeltaMapValues(t, tt.want, got.Load, 1e-12, tt.name+" "+tt.part)
	}
	// One key whose partition is offline: its records wait, nobody takes them.
	one := workload.Keys{Kind: workload.KeysUniform, N: 1}
	off := section64()
	off.Partitions[workload.PartitionOf(workload.Key(0), 3)].Leader = topology.NoLeader
	got, err := PredictShares(off, []workload.Topic{{Name: "A", Rate: 3, Keys: one}}, Hash, ShareOptions{})
	require.NoError(t, err)
	assert.InDeltaMapValues(t, map[int32]float64{1: 0, 2: 0, 3: 0}, got.Load, 1e-12)
}

// TestPredictSharesSaturatedSQF: one SQF for every producer, queues full,
// balances the combined flow as far as the leader sets allow.
func TestPredictSharesSaturatedSQF(t *testing.T) {
	const tol = 1e-9
	tests := []struct {
		name string
		a, b float64
		want map[int32]float64
	}{
		// a=2, b=1: A sends 1 to broker 1 and 1 to broker 2, B all to 3:
		// 1, 1, 1, perfectly even.
		{"balanced", 2, 1, map[int32]float64{1: 1, 2: 1, 3: 1}},
		// a=1, b=5: broker 1 can take only A's 1; B splits 2.5/2.5 over 2
		// and 3; the mean is 2, the layout keeps broker 1 below it.
		{"layout-bound", 1, 5, map[int32]float64{1: 1, 2: 2.5, 3: 2.5}},
		// a=3, b=0: only A's leaders 1 and 2, 1.5 each.
		{"one topic", 3, 0, map[int32]float64{1: 1.5, 2: 1.5, 3: 0}},
	}
	for _, tt := range tests {
		got, err := PredictShares(section64(), ab(tt.a, tt.b), SQFShared, ShareOptions{Regime: Saturated})
		require.NoError(t, err)
		assert.InDeltaMapValues(t, tt.want, got.Load, tol, tt.name)
		assert.Contains(t, got.Basis, "saturated")
		capped, err := PredictShares(section64(), ab(tt.a, tt.b), SQFShared, ShareOptions{})
		require.NoError(t, err)
		node, err := PredictShares(section64(), ab(tt.a, tt.b), Node, ShareOptions{})
		require.NoError(t, err)
		assert.Equal(t, node.Load, capped.Load, "rate-capped sqf-shared is node: "+tt.name)
	}
}

// TestPredictSharesSaturatedChain: A on broker 1 at 3, B on 1 and 2 at 1,
// C on 2 and 3 at 2. Broker 1 holds A's 3, above any even share, so B
// goes wholly to broker 2, and C levels brokers 2 and 3: 1 + x = 2 - x,
// x = 1/2, so 3, 1.5, 1.5.
func TestPredictSharesSaturatedChain(t *testing.T) {
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "A", Partition: 0, Replicas: []int32{1}, Leader: 1},
		{Topic: "B", Partition: 0, Replicas: []int32{1}, Leader: 1},
		{Topic: "B", Partition: 1, Replicas: []int32{2}, Leader: 2},
		{Topic: "C", Partition: 0, Replicas: []int32{2}, Leader: 2},
		{Topic: "C", Partition: 1, Replicas: []int32{3}, Leader: 3},
	}}
	c.Normalize()
	got, err := PredictShares(c, []workload.Topic{{Name: "A", Rate: 3}, {Name: "B", Rate: 1}, {Name: "C", Rate: 2}}, SQFShared, ShareOptions{Regime: Saturated})
	require.NoError(t, err)
	assert.InDeltaMapValues(t, map[int32]float64{1: 3, 2: 1.5, 3: 1.5}, got.Load, 1e-9)
}

// TestPredictSharesSaturatedOfflineTopic is a regression test: a topic
// with no writable partition made the saturated shared SQF index an empty
// broker list and panic.
func TestPredictSharesSaturatedOfflineTopic(t *testing.T) {
	c := section64()
	for i := range c.Partitions {
		if c.Partitions[i].Topic == "B" {
			c.Partitions[i].Leader = topology.NoLeader
		}
	}
	got, err := PredictShares(c, ab(2, 1), SQFShared, ShareOptions{Regime: Saturated})
	require.NoError(t, err)
	assert.InDeltaMapValues(t, map[int32]float64{1: 1, 2: 1, 3: 0}, got.Load, 1e-9)
}

func TestPredictSharesUnknownAndEmpty(t *testing.T) {
	_, err := PredictShares(section64(), ab(1, 1), "sticky", ShareOptions{})
	assert.ErrorContains(t, err, `"sticky"`)
	_, err = PredictShares(section64(), nil, "", ShareOptions{})
	assert.Error(t, err, "an unknown partitioner is an error even with nothing to predict")
	got, err := PredictShares(section64(), []workload.Topic{{Name: "nope", Rate: 5}, {Name: "A", Rate: 0}}, Node, ShareOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[int32]float64{1: 0, 2: 0, 3: 0}, got.Load, "unknown topics and zero rates take nothing; every broker listed")
}

func TestShares(t *testing.T) {
	p := PredictedShares{Load: map[int32]float64{1: 1, 2: 3, 3: 0, 4: 4}}
	all := p.Shares(nil)
	assert.InDeltaMapValues(t, map[int32]float64{1: 0.125, 2: 0.375, 3: 0, 4: 0.5}, all, 1e-12)
	over := p.Shares([]int32{1, 2})
	assert.InDeltaMapValues(t, map[int32]float64{1: 0.25, 2: 0.75}, over, 1e-12)
	zero := PredictedShares{Load: map[int32]float64{1: 0}}.Shares(nil)
	assert.Equal(t, map[int32]float64{1: 0}, zero)
}

// TestEquivalentsHold: without keys and with rate-capped producers, every
// partitioner Equivalents names predicts exactly the load of the one it
// is said to equal, on every shipped layout.
func TestEquivalentsHold(t *testing.T) {
	for _, name := range []string{"thesis-6.4.json", "thesis-6-4.json", "thesis-fig3.3.json", "thesis-fig3.8.json", "kafkakit-optimize-input.json", "demo-cells.json"} {
		c := loadLayout(t, name)
		l := Loads(c, Rates{ByTopic: map[string]float64{}, Default: 1}, workload.TopicKeys{})
		for i := range l {
			l[i].Rate = float64(1 + i%3)
		}
		for _, e := range Equivalents {
			got, err := PredictShares(c, l, e.Partitioner, ShareOptions{})
			require.NoError(t, err)
			want, err := PredictShares(c, l, e.Equals, ShareOptions{})
			require.NoError(t, err)
			assert.InDeltaMapValues(t, want.Load, got.Load, 1e-9, "%s: %s equals %s", name, e.Partitioner, e.Equals)
		}
	}
}

// TestPredictAfterLossThesis64RF2: §6.4 with a follower per partition
// (testdata/layouts/thesis-6-4.json) at A=2, B=1, losing broker 2: A-1
// elects 3, A-2 and B-0 elect 1. Round robin: broker 1 takes 2·2/3 + 1/2
// = 11/6, broker 3 2/3 + 1/2 = 7/6, max/mean (11/6)/(3/2) = 11/9 over the
// live leaders 1 and 3; node: 1 + 1/2 each, max/mean 1.
func TestPredictAfterLossThesis64RF2(t *testing.T) {
	c := loadLayout(t, "thesis-6-4.json")
	after := AfterLoss(c, 2)
	leaders := map[string]int32{}
	for _, p := range after.Partitions {
		leaders[p.Key().String()] = p.Leader
	}
	assert.Equal(t, map[string]int32{"A-0": 1, "A-1": 3, "A-2": 1, "B-0": 1, "B-1": 3}, leaders)
	b, _ := after.Broker(2)
	assert.True(t, b.Missing)
	orig, _ := c.Broker(2)
	assert.False(t, orig.Missing, "AfterLoss leaves its input alone")

	rates := Rates{ByTopic: map[string]float64{"A": 2, "B": 1}}
	lp, err := PredictAfterLoss(c, rates, workload.TopicKeys{}, ShareOptions{}, []int32{2})
	require.NoError(t, err)
	require.Len(t, lp, 1)
	assert.Equal(t, int32(2), lp[0].Lost)
	assert.Equal(t, []int32{1, 3}, lp[0].SkewBrokers)
	assert.Equal(t, lp[0].SkewBrokers, SkewBrokers(after, Loads(after, rates, workload.TopicKeys{})))
	require.Len(t, lp[0].Predictions, len(SharePartitioners))
	byName := map[string]Prediction{}
	for i, p := range lp[0].Predictions {
		assert.Equal(t, SharePartitioners[i], p.Partitioner)
		byName[p.Partitioner] = p
	}
	load := func(p Prediction) []float64 {
		var v []float64
		for _, b := range p.Brokers {
			v = append(v, b.Load)
		}
		return v
	}
	for _, name := range []string{RoundRobin, Default, Random, Hash, LeastBackup} {
		assert.InDeltaSlice(t, []float64{11.0 / 6, 0, 7.0 / 6}, load(byName[name]), 1e-5, name)
		assert.InDelta(t, 11.0/9, byName[name].MaxOverMean, 1e-3, name)
		assert.Equal(t, int32(1), byName[name].BusiestBroker)
	}
	for _, name := range []string{Node, SQF, SQFShared} {
		assert.InDeltaSlice(t, []float64{1.5, 0, 1.5}, load(byName[name]), 1e-5, name)
		assert.InDelta(t, 1.0, byName[name].MaxOverMean, 1e-3, name)
	}
}

// TestPredictSkewOverLiveLeaders is the mismatch: on §6.4 (RF 1)
// at A=2, B=1, losing broker 2 leaves A on broker 1 and B on broker 3,
// loads 2 and 1. Max/mean over the live leaders is 2/1.5 = 1.33, as chaos
// measures it; counting the lost broker in the mean gave 2.0.
func TestPredictSkewOverLiveLeaders(t *testing.T) {
	rates := Rates{ByTopic: map[string]float64{"A": 2, "B": 1}}
	after := AfterLoss(loadLayout(t, "thesis-6.4.json"), 2)
	for _, p := range Predict(after, rates) {
		assert.Equal(t, []BrokerShare{{1, 2, 0.666667}, {2, 0, 0}, {3, 1, 0.333333}}, p.Brokers, p.Partitioner)
		assert.InDelta(t, 1.333, p.MaxOverMean, 1e-9, p.Partitioner)
	}
	lp, err := PredictAfterLoss(loadLayout(t, "thesis-6.4.json"), rates, workload.TopicKeys{}, ShareOptions{}, []int32{2})
	require.NoError(t, err)
	for _, p := range lp[0].Predictions {
		assert.InDelta(t, 1.333, p.MaxOverMean, 1e-9, p.Partitioner)
	}
	// A broker that leads only unwritten topics does not count either.
	only := Predict(loadLayout(t, "thesis-6.4.json"), Rates{ByTopic: map[string]float64{"A": 3}})
	assert.InDelta(t, 2.0/1.5, only[0].MaxOverMean, 1e-3, "round robin over brokers 1 and 2: 1 and 2")
	assert.InDelta(t, 1.0, only[1].MaxOverMean, 1e-9, "node over brokers 1 and 2: 1.5 each")
}

// TestPredictAfterLossIsPredictOnAfterLoss: PredictAfterLoss (which elects
// on the fly) gives exactly PredictAll on the cluster AfterLoss builds,
// for every broker of several layouts, keyed and saturated alike.
func TestPredictAfterLossIsPredictOnAfterLoss(t *testing.T) {
	keys := workload.TopicKeys{Default: workload.Keys{Kind: workload.KeysZipf, S: 1.1, N: 200}}
	for _, name := range []string{"thesis-6-4.json", "thesis-6.4.json", "thesis-fig3.5-z-rf2.json", "kafkakit-optimize-input.json", "demo-cells.json"} {
		c := loadLayout(t, name)
		rates := Rates{ByTopic: map[string]float64{}, Default: 1}
		for _, o := range []ShareOptions{{}, {Regime: Saturated}} {
			for _, b := range c.Brokers {
				lp, err := PredictAfterLoss(c, rates, keys, o, []int32{b.ID})
				require.NoError(t, err)
				after := AfterLoss(c, b.ID)
				want, err := PredictAll(after, Loads(after, rates, keys), o)
				require.NoError(t, err)
				assert.Equal(t, want, lp[0].Predictions, "%s losing %d", name, b.ID)
				over := SkewBrokers(after, Loads(after, rates, keys))
				if over == nil {
					over = []int32{}
				}
				assert.Equal(t, over, lp[0].SkewBrokers, "%s losing %d", name, b.ID)
			}
		}
	}
}

// TestPredictSharesKeyedOfflineKeepsOthers: keys whose partition is
// offline fail in the producer (Kafka's hash partitioner never sends them
// elsewhere), so every writable partition takes exactly its own keys' mass,
// rate x mass, as with every partition up: brute force over the keys.
func TestPredictSharesKeyedOfflineKeepsOthers(t *testing.T) {
	keys := workload.Keys{Kind: workload.KeysZipf, S: 1.1, N: 500}
	c := &topology.Cluster{}
	for p := range int32(6) {
		c.Partitions = append(c.Partitions, topology.Partition{Topic: "A", Partition: p, Replicas: []int32{p%3 + 1}, Leader: p%3 + 1})
	}
	c.Normalize()
	c.Partitions[2].Leader = topology.NoLeader // A-2 offline
	want := map[int32]float64{1: 0, 2: 0, 3: 0}
	for i, w := range keys.Weights() {
		p := workload.PartitionOf(workload.Key(i), 6)
		if p != 2 {
			want[int32(p%3+1)] += 10 * w
		}
	}
	for _, name := range []string{Hash, Default} {
		got, err := PredictShares(c, []workload.Topic{{Name: "A", Rate: 10, Keys: keys}}, name, ShareOptions{})
		require.NoError(t, err)
		assert.InDeltaMapValues(t, want, got.Load, 1e-9, name)
	}
}

// TestPredictHugePartitionNumber: one partition numbered 2147483647 is a
// valid layout; predicting it (keyless and keyed) costs memory for one
// partition, not for two billion. Its number is past the partition count,
// so no key hashes to it.
func TestPredictHugePartitionNumber(t *testing.T) {
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "A", Partition: 0, Replicas: []int32{1}, Leader: 1},
		{Topic: "A", Partition: 1<<31 - 1, Replicas: []int32{2}, Leader: 2},
	}}
	c.Normalize()
	one := workload.Keys{Kind: workload.KeysUniform, N: 100}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rr, err := PredictShares(c, []workload.Topic{{Name: "A", Rate: 2}}, RoundRobin, ShareOptions{})
	require.NoError(t, err)
	hash, err := PredictShares(c, []workload.Topic{{Name: "A", Rate: 2, Keys: one}}, Hash, ShareOptions{})
	require.NoError(t, err)
	r := Run(c, ByLeaders)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated")
	assert.InDeltaMapValues(t, map[int32]float64{1: 1, 2: 1}, rr.Load, 1e-12)
	want := map[int32]float64{1: 0, 2: 0}
	for i, w := range one.Weights() {
		if workload.PartitionOf(workload.Key(i), 2) == 0 {
			want[1] += 2 * w
		}
	}
	assert.InDeltaMapValues(t, want, hash.Load, 1e-12)
	assert.Equal(t, 2, r.Partitions)
}
