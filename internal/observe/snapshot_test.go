package observe

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/topology"
)

func snapshotOf(t *testing.T, samples []Sample) []byte {
	t.Helper()
	c := layout1()
	r, err := Compute(c, samples)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteSnapshot(&b, c, r))
	return b.Bytes()
}

// TestSnapshotLoadsAsLayout: the snapshot is a layout kplan's loader reads,
// with each partition's size, leaders and ISR.
func TestSnapshotLoadsAsLayout(t *testing.T) {
	data := snapshotOf(t, []Sample{at(0, 0, 0, 0, 0, nil), at(10, 0, 0, 1000, 100_000, nil)})
	c, err := topology.Load(bytes.NewReader(data), "snap.json")
	require.NoError(t, err)
	want := layout1()
	want.Partitions[0].SizeBytes = 100_000
	assert.Equal(t, want, c)
}

func TestParseSnapshotRates(t *testing.T) {
	data := snapshotOf(t, []Sample{at(0, 0, 0, 0, 0, nil), at(10, 0, 0, 1000, 100_000, nil)})
	tr, err := ParseSnapshotRates(data, "snap.json")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"t": 10_000}, tr.BytesPerSecond)
	assert.InDelta(t, 10, tr.WindowSeconds, 1e-9)

	idle := snapshotOf(t, []Sample{at(0, 0, 0, 5, 500, nil), at(10, 0, 0, 5, 500, nil)})
	_, err = ParseSnapshotRates(idle, "idle.json")
	assert.EqualError(t, err, "idle.json: observe.traffic: false: the cluster had no traffic in the observed window, so the snapshot has no rates")
}

func TestParseSnapshotRatesErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"version":1,"partitions":[]}`, "s.json: observe_schema: missing: not a snapshot of kplan observe (--out)"},
		{`{"observe_schema":2}`, "s.json: observe_schema: unsupported version 2 (want 1)"},
		{`{"observe_schema":1}`, "s.json: observe: missing"},
		{`{"observe_schema":1,"observe":{}}`, "s.json: observe.traffic: missing"},
		{`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":0}}`, "s.json: observe.window_seconds: want a positive number of seconds"},
		{`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":1,"topics":[{"topic":""}]}}`, "s.json: observe.topics[0].topic: missing or empty"},
		{`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":1,"topics":[{"topic":"a"}]}}`, "s.json: observe.topics[0].produce.bytes_per_second.mean: missing"},
		{`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":1,"topics":[{"topic":"a","produce":{"bytes_per_second":{"mean":-1}}}]}}`, "s.json: observe.topics[0].produce.bytes_per_second.mean: -1 is not a rate in bytes/s (0 or more)"},
		{`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":1,"topics":[]}}`, "s.json: observe.topics: no topic"},
		{`{"observe_schema":"1"}`, "s.json: observe_schema: want int, got JSON string"},
		{`{"observe_schema":1,`, "s.json: malformed JSON: unexpected end of JSON input"},
	} {
		_, err := ParseSnapshotRates([]byte(tc.in), "s.json")
		assert.EqualError(t, err, tc.want, tc.in)
	}
}

// FuzzParseSnapshotRates: a snapshot never panics the parser; an error is
// one line naming the file; what parses has named topics and rates >= 0.
func FuzzParseSnapshotRates(f *testing.F) {
	f.Add(`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":10,"topics":[{"topic":"a","produce":{"bytes_per_second":{"mean":5}}}]}}`)
	f.Add(`{"observe_schema":1,"observe":{"traffic":false}}`)
	f.Add(`{"version":1,"partitions":[]}`)
	f.Add(`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":1e400}}`)
	f.Fuzz(func(t *testing.T, body string) {
		tr, err := ParseSnapshotRates([]byte(body), "s.json")
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "s.json: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			return
		}
		for topic, v := range tr.BytesPerSecond {
			if topic == "" || !(v >= 0) {
				t.Fatalf("topic %q rate %v", topic, v)
			}
		}
	})
}

// TestParseSnapshotLoads: per partition, the produce bytes/s and the
// consumer groups' fetch bytes/s, as Compute observed them; a snapshot
// without traffic is refused.
func TestParseSnapshotLoads(t *testing.T) {
	data := snapshotOf(t, []Sample{at(0, 0, 0, 0, 0, nil), at(10, 0, 0, 1000, 100_000, nil)})
	sl, err := ParseSnapshotLoads(data, "snap.json")
	require.NoError(t, err)
	r, err := Compute(layout1(), []Sample{at(0, 0, 0, 0, 0, nil), at(10, 0, 0, 1000, 100_000, nil)})
	require.NoError(t, err)
	want := map[topology.Key]PartitionRates{}
	for _, p := range r.Partitions {
		want[topology.Key{Topic: p.Topic, Partition: p.Partition}] = PartitionRates{ProduceBytesPerSecond: p.Produce.BytesPerSecond.Mean, ConsumerBytesPerSecond: p.ConsumerBytesPerSecond}
	}
	assert.Equal(t, want, sl.Partitions)
	assert.Equal(t, 10_000.0, sl.Partitions[topology.Key{Topic: "t", Partition: 0}].ProduceBytesPerSecond)
	assert.InDelta(t, 10, sl.WindowSeconds, 1e-9)

	idle := snapshotOf(t, []Sample{at(0, 0, 0, 5, 500, nil), at(10, 0, 0, 5, 500, nil)})
	_, err = ParseSnapshotLoads(idle, "idle.json")
	assert.EqualError(t, err, "idle.json: observe.traffic: false: the cluster had no traffic in the observed window, so the snapshot has no rates")
}

func TestParseSnapshotLoadsErrors(t *testing.T) {
	const head = `{"observe_schema":1,"observe":{"traffic":true,"window_seconds":1,"partitions":`
	for _, tc := range []struct{ in, want string }{
		{`{"version":1,"partitions":[]}`, "s.json: observe_schema: missing: not a snapshot of kplan observe (--out)"},
		{`{"observe_schema":1,"observe":{"traffic":false}}`, "s.json: observe.traffic: false: the cluster had no traffic in the observed window, so the snapshot has no rates"},
		{head + `[{"partition":0}]}}`, "s.json: observe.partitions[0].topic: missing or empty"},
		{head + `[{"topic":"a"}]}}`, "s.json: observe.partitions[0].partition: missing or negative"},
		{head + `[{"topic":"a","partition":0}]}}`, "s.json: observe.partitions[0].produce.bytes_per_second.mean: missing"},
		{head + `[{"topic":"a","partition":0,"produce":{"bytes_per_second":{"mean":1}}}]}}`, "s.json: observe.partitions[0].consumer_bytes_per_second: missing"},
		{head + `[{"topic":"a","partition":0,"produce":{"bytes_per_second":{"mean":1}},"consumer_bytes_per_second":-2}]}}`, "s.json: observe.partitions[0].consumer_bytes_per_second: -2 is not a rate in bytes/s (0 or more)"},
		{head + `[{"topic":"a","partition":0,"produce":{"bytes_per_second":{"mean":1}},"consumer_bytes_per_second":0},{"topic":"a","partition":0,"produce":{"bytes_per_second":{"mean":1}},"consumer_bytes_per_second":0}]}}`, "s.json: observe.partitions[1]: a-0 listed twice"},
		{head + `[]}}`, "s.json: observe.partitions: no partition"},
	} {
		_, err := ParseSnapshotLoads([]byte(tc.in), "s.json")
		assert.EqualError(t, err, tc.want, tc.in)
	}
}

// FuzzParseSnapshotLoads: a snapshot never panics the parser; an error is
// one line naming the file; what parses has named partitions and rates
// >= 0.
func FuzzParseSnapshotLoads(f *testing.F) {
	f.Add(`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":10,"partitions":[{"topic":"a","partition":0,"produce":{"bytes_per_second":{"mean":5}},"consumer_bytes_per_second":10}]}}`)
	f.Add(`{"observe_schema":1,"observe":{"traffic":false}}`)
	f.Add(`{"observe_schema":1,"observe":{"traffic":true,"window_seconds":1,"partitions":[{"topic":"a","partition":-1}]}}`)
	f.Fuzz(func(t *testing.T, body string) {
		sl, err := ParseSnapshotLoads([]byte(body), "s.json")
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "s.json: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			return
		}
		for k, v := range sl.Partitions {
			if k.Topic == "" || k.Partition < 0 || !(v.ProduceBytesPerSecond >= 0) || !(v.ConsumerBytesPerSecond >= 0) {
				t.Fatalf("%v: %+v", k, v)
			}
		}
	})
}
