package partitioner

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	pub "github.com/kplan-dev/kplan/partitioner"
)

// fixed is a LeaderSource over a fixed table (the partitioners themselves
// are tested in the public package).
func fixed(leaders ...int32) LeaderSource {
	return func(_ string, p int32) (int32, int32, bool) {
		if int(p) >= len(leaders) || leaders[p] < 0 {
			return -1, -1, false
		}
		return leaders[p], 0, true
	}
}

func TestNewAndNames(t *testing.T) {
	names := Names()
	require.Equal(t, []string{"default", "hash", "kip794", "leastbackup", "node", "random", "roundrobin", "sqf", "sqf-shared"}, names)
	for _, n := range names {
		p, err := New(n, WithLeaders(fixed(1, 2, 3)), WithRand(rand.New(rand.NewSource(1))), WithInflight(NewInflight()))
		require.NoError(t, err, n)
		require.NotNil(t, p.ForTopic("t"), n)
		assert.NotEmpty(t, Describe(n), n)
		assert.Equal(t, n == "node" || n == "sqf" || n == SQFShared || n == KIP794, BrokerAware(n), n)
	}
	for _, tt := range []struct {
		name string
		opts []Option
		want string
	}{
		{"nope", nil, `unknown partitioner "nope"`},
		{"node", nil, "leader source"},
		{"sqf", nil, "leader source"},
		{KIP794, nil, "leader source"},
		{"random", nil, "random source"},
		{SQFShared, []Option{WithLeaders(fixed(1))}, "shared tracker"},
	} {
		_, err := New(tt.name, tt.opts...)
		require.ErrorContains(t, err, tt.want, tt.name)
	}
}

// The registry passes its options on: sqf's slack and unit, node's and
// sqf's runs, kip794's timeout, the tracker.
func TestOptionsReachThePartitioners(t *testing.T) {
	src := fixed(1, 2, 3)
	p, err := New("sqf", WithLeaders(src), WithSlack(5))
	require.NoError(t, err)
	assert.Equal(t, int64(5), p.(*pub.SQF).Slack())
	p, err = New("sqf", WithLeaders(src), WithBytes())
	require.NoError(t, err)
	assert.Equal(t, int64(pub.DefaultSlackBytes), p.(*pub.SQF).Slack())
	in := NewInflight()
	p, err = New("sqf", WithLeaders(src), WithInflight(in))
	require.NoError(t, err)
	assert.Same(t, in, p.(*pub.SQF).Inflight())

	for _, name := range []string{"node", "sqf"} {
		p, err := New(name, WithLeaders(src), WithStick(4))
		require.NoError(t, err)
		tp := p.ForTopic("t")
		var seq []int
		for range 12 {
			seq = append(seq, tp.Partition(&kgo.Record{}, 3))
		}
		for i := 0; i < len(seq); i += 4 {
			assert.Equal(t, []int{seq[i], seq[i], seq[i], seq[i]}, seq[i:i+4], "%s run %d", name, i/4)
		}
	}

	// kip794 with a timeout: broker 3's partition has a batch in flight and
	// broker 3 never answers, so once the timeout passed it gets nothing.
	in = NewInflight()
	in.OnProduceRecordPartitioned(&kgo.Record{Topic: "t", Partition: 2, Value: make([]byte, 100)}, 3)
	p, err = New(KIP794, WithLeaders(src), WithInflight(in), WithRand(rand.New(rand.NewSource(3))), WithAvailabilityTimeout(time.Nanosecond))
	require.NoError(t, err)
	tp := p.ForTopic("t")
	big := &kgo.Record{Value: make([]byte, pub.DefaultBatchBytes)} // one record per batch
	tp.Partition(big, 3)                                           // first sight of broker 3's stall
	time.Sleep(time.Millisecond)
	got := map[int]int{}
	for range 300 {
		got[tp.Partition(big, 3)]++
	}
	assert.Zero(t, got[2], "records to the stalled broker's partition: %v", got)
	assert.Positive(t, got[0])
	assert.Positive(t, got[1])
}

// TestSQFSharedFromRegistry: two producers over one tracker, topic A
// led by brokers 1 and 2, topic B by broker 2 only. Broker 2's queue carries
// B's records, so the shared sqf sends A's to broker 1; a tracker per
// producer would split A evenly.
func TestSQFSharedFromRegistry(t *testing.T) {
	in := NewInflight()
	pa, err := New(SQFShared, WithLeaders(fixed(1, 2)), WithInflight(in), WithSlack(0))
	require.NoError(t, err)
	in.Add(2, 1000, 100000) // B's backlog on broker 2
	tp := pa.ForTopic("A")
	perPart := map[int]int{}
	for range 100 {
		perPart[tp.Partition(&kgo.Record{Topic: "A", Value: []byte("x")}, 2)]++
	}
	assert.Equal(t, 100, perPart[0], "every A record goes to broker 1, without B's backlog")
}

func TestRandomUsesInjectedSource(t *testing.T) {
	a, err := New("random", WithRand(rand.New(rand.NewSource(7))))
	require.NoError(t, err)
	b, err := New("random", WithRand(rand.New(rand.NewSource(7))))
	require.NoError(t, err)
	ta, tb := a.ForTopic("t"), b.ForTopic("t")
	counts := make([]int, 5)
	for range 5000 {
		pa := ta.Partition(nil, 5)
		require.Equal(t, pa, tb.Partition(nil, 5), "same seed, same sequence")
		counts[pa]++
	}
	for p, c := range counts {
		assert.InDelta(t, 1000, c, 150, "partition %d", p)
	}
	assert.False(t, ta.RequiresConsistency(nil))
}

func TestHashIsKafkaMurmur2(t *testing.T) {
	// Kafka's DefaultPartitioner: toPositive(murmur2(key)) % n. Known values
	// from Kafka's own tests (Utils.murmur2("21") = -973932308, etc.).
	// kip794 hashes keys the same way.
	murmur := int32(-973932308)
	for _, name := range []string{"hash", KIP794} {
		p, err := New(name, WithLeaders(fixed(1)))
		require.NoError(t, err)
		tp := p.ForTopic("t")
		r := &kgo.Record{Key: []byte("21")}
		require.True(t, tp.RequiresConsistency(r))
		assert.Equal(t, int(uint32(murmur)&0x7fffffff)%100, tp.Partition(r, 100), fmt.Sprint(name))
	}
}
