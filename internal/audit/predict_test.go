package audit

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

func loadLayout(t *testing.T, name string) *topology.Cluster {
	t.Helper()
	f, err := os.Open("../../testdata/layouts/" + name)
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // read-only
	c, err := topology.Load(f, name)
	require.NoError(t, err)
	return c
}

func loads(ps []Prediction) map[string][]float64 {
	out := map[string][]float64{}
	for _, p := range ps {
		for _, b := range p.Brokers {
			out[p.Partitioner] = append(out[p.Partitioner], b.Load)
		}
	}
	return out
}

// TestSection64 is the thesis's §6.4 table: topic A with one partition on
// broker 1 and two on broker 2, topic B on brokers 2 and 3, producer X
// writing a to A and Y writing b to B. Default (round robin): a/3,
// 2a/3+b/2, b/2. Node: a/2, a/2+b/2, b/2. Loads are linear in the rates,
// so the coefficients of a and b are checked separately.
func TestSection64(t *testing.T) {
	c := loadLayout(t, "thesis-6.4.json")
	onlyA := loads(Predict(c, Rates{ByTopic: map[string]float64{"A": 1}}))
	onlyB := loads(Predict(c, Rates{ByTopic: map[string]float64{"B": 1}}))
	for _, tt := range []struct {
		partitioner string
		a, b        []float64
	}{
		{RoundRobin, []float64{1.0 / 3, 2.0 / 3, 0}, []float64{0, 0.5, 0.5}},
		{Node, []float64{0.5, 0.5, 0}, []float64{0, 0.5, 0.5}},
	} {
		assert.InDeltaSlice(t, tt.a, onlyA[tt.partitioner], 1e-5, tt.partitioner)
		assert.InDeltaSlice(t, tt.b, onlyB[tt.partitioner], 1e-5, tt.partitioner)
	}
	r, err := ParseRates("A=30MB/s,B=20MB/s")
	require.NoError(t, err)
	both := loads(Predict(c, r))
	assert.Equal(t, []float64{10e6, 30e6, 10e6}, both[RoundRobin])
	assert.Equal(t, []float64{15e6, 25e6, 10e6}, both[Node])
}

func TestPredictSkipsOfflineAndSharesSumToOne(t *testing.T) {
	c := &topology.Cluster{Partitions: []topology.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1}, Leader: 1},
		{Topic: "t", Partition: 1, Replicas: []int32{2}, Leader: topology.NoLeader},
		{Topic: "t", Partition: 2, Replicas: []int32{3}, Leader: 3},
		{Topic: "u", Partition: 0, Replicas: []int32{3}, Leader: 3},
	}}
	c.Normalize()
	ps := Predict(c, EqualRates())
	require.Len(t, ps, 2)
	rr := ps[0]
	assert.Equal(t, []BrokerShare{{1, 0.5, 0.25}, {2, 0, 0}, {3, 1.5, 0.75}}, rr.Brokers, "an offline partition takes no records")
	assert.Equal(t, int32(3), rr.BusiestBroker)
	// Max/mean over the brokers leading a written partition (1 and 3;
	// broker 2 leads only an offline one): 1.5 / ((0.5+1.5)/2).
	assert.InDelta(t, 1.5, rr.MaxOverMean, 1e-9)
}

func TestParseRates(t *testing.T) {
	r, err := ParseRates("a=100MB/s, b=1GiB/s ,*=1kB/s")
	require.NoError(t, err)
	assert.True(t, r.BytesPerSecond)
	assert.Equal(t, 1e8, r.Of("a"))
	assert.Equal(t, float64(1<<30), r.Of("b"))
	assert.Equal(t, 1e3, r.Of("zzz"))
	r, err = ParseRates("a=3,b=0.5")
	require.NoError(t, err)
	assert.False(t, r.BytesPerSecond)
	assert.Equal(t, 0.0, r.Of("c"), "unnamed topics carry no load without *=")
	for _, bad := range []string{"", ",", "a", "a=", "=3", "a=-1", "a=x", "a=1,a=2", "a=1,b=1MB/s", "a=5MB", "a=NaN", "a=1e300"} {
		_, err := ParseRates(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseRatesFile(t *testing.T) {
	r, err := ParseRatesFile([]byte("# producers\nA 30MB/s\n\nB=20MB/s\n"), "rates.txt")
	require.NoError(t, err)
	assert.Equal(t, 3e7, r.Of("A"))
	assert.Equal(t, 2e7, r.Of("B"))
	_, err = ParseRatesFile([]byte("A=1\nB=oops\n"), "rates.txt")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rates.txt:2: B: ")
	_, err = ParseRatesFile([]byte("A=1,B=2\n"), "rates.txt")
	assert.ErrorContains(t, err, "rates.txt:1: one topic=rate a line")
	_, err = ParseRatesFile([]byte("# nothing\n"), "rates.txt")
	assert.ErrorContains(t, err, "rates.txt: no topic=rate given")
}

// TestParseRatesArg: --rates takes topic=rate,... or a snapshot's name.
func TestParseRatesArg(t *testing.T) {
	files := map[string]string{
		"observed.json": `{"observe_schema":1,"observe":{"traffic":true,"window_seconds":10,"topics":[{"topic":"A","produce":{"bytes_per_second":{"mean":5}}}]}}`,
		"rates.txt":     "A=1\n",
	}
	read := func(name string) ([]byte, error) {
		if b, ok := files[name]; ok {
			return []byte(b), nil
		}
		return nil, os.ErrNotExist
	}
	r, err := ParseRatesArg("A=2,B=1", read)
	require.NoError(t, err)
	assert.Equal(t, 2.0, r.Of("A"))
	r, err = ParseRatesArg("observed.json", read)
	require.NoError(t, err)
	assert.Equal(t, 5.0, r.Of("A"))
	assert.True(t, r.BytesPerSecond)
	_, err = ParseRatesArg("missing.json", read)
	assert.EqualError(t, err, `"missing.json": want topic=rate`, "no such file: a malformed topic=rate, as before")
	_, err = ParseRatesArg("dir", func(string) ([]byte, error) { return nil, errors.New("is a directory") })
	assert.EqualError(t, err, `"dir" is neither topic=rate,... nor a snapshot of kplan observe: is a directory`)
	_, err = ParseRatesArg("rates.txt", read)
	assert.EqualError(t, err, "rates.txt: not a snapshot of kplan observe (--out); a file of topic=rate lines goes to --rates-file")
	_, err = ParseRatesArg("", read)
	assert.EqualError(t, err, "no topic=rate given")
}

// TestParseRatesFileSnapshot: a kplan observe snapshot gives each topic its
// observed produce rate in bytes/s; its faults name the file and field.
func TestParseRatesFileSnapshot(t *testing.T) {
	snap := `{"version":1,"observe_schema":1,"partitions":[],"observe":{"traffic":true,"window_seconds":10,"topics":[
 {"topic":"A","produce":{"bytes_per_second":{"mean":3000000}}},
 {"topic":"B","produce":{"bytes_per_second":{"mean":0}}}]}}`
	r, err := ParseRatesFile([]byte(snap), "observed.json")
	require.NoError(t, err)
	assert.True(t, r.BytesPerSecond)
	assert.Equal(t, 3e6, r.Of("A"))
	assert.Equal(t, 0.0, r.Of("B"))
	assert.Equal(t, 0.0, r.Of("C"), "a topic the snapshot did not see writes nothing")
	_, err = ParseRatesFile([]byte(`{"observe_schema":1,"observe":{"traffic":false}}`), "observed.json")
	assert.EqualError(t, err, "observed.json: observe.traffic: false: the cluster had no traffic in the observed window, so the snapshot has no rates")
	_, err = ParseRatesFile([]byte(`{"version":1,"partitions":[]}`), "layout.json")
	assert.EqualError(t, err, "layout.json: observe_schema: missing: not a snapshot of kplan observe (--out)")
}

func FuzzParseRates(f *testing.F) {
	for _, s := range []string{"a=100MB/s,b=20MB/s", "A=3,B=1,*=0.5", "x=1.5GB/s", "a=", "=", ",,", "a=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRates(s)
		if err != nil {
			return
		}
		for topic, v := range r.ByTopic {
			if !(v >= 0) || topic == "" {
				t.Fatalf("%q: topic %q rate %v", s, topic, v)
			}
		}
	})
}

// TestNoColumnRepeatsAnother: each partitioner is predicted once or named
// once as equal to a predicted one, and on the thesis's §6.4 layout no two
// predicted columns are the same (the "sticky" column was a copy of round
// robin).
func TestNoColumnRepeatsAnother(t *testing.T) {
	ps := Predict(loadLayout(t, "thesis-6.4.json"), EqualRates())
	names := map[string]bool{}
	for i, p := range ps {
		assert.False(t, names[p.Partitioner], "%s predicted twice", p.Partitioner)
		names[p.Partitioner] = true
		for _, q := range ps[:i] {
			assert.NotEqual(t, q.Brokers, p.Brokers, "%s repeats %s", p.Partitioner, q.Partitioner)
		}
	}
	seen := map[string]bool{}
	for _, e := range Equivalents {
		assert.False(t, names[e.Partitioner], "%s is predicted and said to equal %s", e.Partitioner, e.Equals)
		assert.False(t, seen[e.Partitioner], "%s named twice", e.Partitioner)
		seen[e.Partitioner] = true
		assert.True(t, names[e.Equals], "%s equals %s, which is not predicted", e.Partitioner, e.Equals)
		assert.NotEmpty(t, e.Why)
	}
}
