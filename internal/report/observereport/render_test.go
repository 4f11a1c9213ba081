package observereport

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
	"github.com/kplan-dev/kplan/internal/topology"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// fixture is three brokers (two log dirs on broker 1), a busy topic of two
// partitions read by two groups, a tiered topic whose size shrank, and a
// quiet topic, sampled three times over 10 s; traffic false gives the
// same layout with nothing written.
func fixture(t *testing.T, traffic bool) *observe.Result {
	t.Helper()
	c := &topology.Cluster{Live: true, Brokers: []topology.Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "b"}, {ID: 3, Rack: "c"}}, Partitions: []topology.Partition{
		{Topic: "orders", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1},
		{Topic: "orders", Partition: 1, Replicas: []int32{2, 3, 1}, Leader: 2},
		{Topic: "archive", Partition: 0, Replicas: []int32{3, 1}, Leader: 3},
		{Topic: "quiet", Partition: 0, Replicas: []int32{1, 2}, Leader: 1},
	}}
	c.Normalize()
	type part struct {
		topic            string
		p                int32
		start, local     int64
		end, bytes       [3]int64
		committedA, comB [3]int64
	}
	parts := []part{
		{topic: "orders", p: 0, end: [3]int64{0, 5_000, 12_000}, bytes: [3]int64{0, 5_000_000, 12_000_000}, committedA: [3]int64{0, 4_000, 11_000}, comB: [3]int64{-1, 1_000, 2_000}},
		{topic: "orders", p: 1, end: [3]int64{0, 100, 200}, bytes: [3]int64{0, 100_000, 200_000}, committedA: [3]int64{0, 100, 200}, comB: [3]int64{-1, -1, -1}},
		{topic: "archive", p: 0, start: 0, local: 40_000, end: [3]int64{50_000, 51_000, 52_000}, bytes: [3]int64{20_000_000, 20_500_000, 2_000_000}, committedA: [3]int64{-1, -1, -1}, comB: [3]int64{-1, -1, -1}},
		{topic: "quiet", p: 0, end: [3]int64{10, 10, 10}, bytes: [3]int64{2_000, 2_000, 2_000}, committedA: [3]int64{-1, -1, -1}, comB: [3]int64{-1, -1, -1}},
	}
	var samples []observe.Sample
	for i := range 3 {
		s := observe.Sample{At: t0.Add(time.Duration(i) * 5 * time.Second)}
		for _, p := range parts {
			j := i
			if !traffic {
				j = 0
			}
			s.Offsets = append(s.Offsets, observe.PartitionOffsets{Topic: p.topic, Partition: p.p, End: p.end[j], Start: p.start, LocalStart: max(p.local, p.start)})
			for _, b := range c.Partitions[c.Find(topology.Key{Topic: p.topic, Partition: p.p})].Replicas {
				dir := "/var/lib/kafka/data"
				if b == 1 && p.topic == "archive" {
					dir = "/var/lib/kafka/data2"
				}
				s.Replicas = append(s.Replicas, observe.ReplicaSize{Topic: p.topic, Partition: p.p, Broker: b, Dir: dir, Bytes: p.bytes[j]})
			}
			if p.committedA[j] >= 0 {
				s.Committed = append(s.Committed, observe.Committed{Group: "billing", Topic: p.topic, Partition: p.p, Offset: p.committedA[j]})
			}
			if p.comB[j] >= 0 {
				s.Committed = append(s.Committed, observe.Committed{Group: "audit-trail", Topic: p.topic, Partition: p.p, Offset: p.comB[j]})
			}
		}
		samples = append(samples, s)
	}
	r, err := observe.Compute(c, samples)
	require.NoError(t, err)
	return r
}

func render(t *testing.T, f report.Format, r *observe.Result) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, report.Render(&b, f, r, func() report.Document { return Document(r) }))
	return b.String()
}

func TestDocumentGolden(t *testing.T) {
	r := fixture(t, true)
	golden.AssertString(t, "observe.txt", render(t, report.Table, r))
	golden.AssertString(t, "observe.md", render(t, report.Markdown, r))
	golden.AssertString(t, "observe.json", render(t, report.JSON, r))
	golden.AssertString(t, "idle.txt", render(t, report.Table, fixture(t, false)))
}

func TestDocumentSaysNoTraffic(t *testing.T) {
	out := render(t, report.Table, fixture(t, false))
	assert.Contains(t, out, observe.NoTrafficNote)
	assert.NotContains(t, out, "0B/s", "no rate of zero is printed for an idle cluster")
}

func TestProgress(t *testing.T) {
	r0 := observe.Sample{At: t0, Offsets: []observe.PartitionOffsets{{Topic: "a", End: 10}, {Topic: "b", End: 5}}}
	r1 := observe.Sample{At: t0.Add(2500 * time.Millisecond), Offsets: []observe.PartitionOffsets{{Topic: "a", End: 30}, {Topic: "b", End: 5}},
		Replicas: []observe.ReplicaSize{{Topic: "a"}}, Committed: []observe.Committed{{Group: "g", Topic: "a"}, {Group: "g", Topic: "b"}}}
	assert.Equal(t, "observe: sample 1/3 at +0s: 2 partitions, 0 replicas, 0 groups", Progress(0, 3, r0, r0))
	assert.Equal(t, "observe: sample 2/3 at +2.5s: 2 partitions, 1 replicas, 1 groups; 20 records written since the first sample", Progress(1, 3, r0, r1))
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Bytes(0), "0B"}, {Bytes(999), "999B"}, {Bytes(1000), "1.00kB"}, {Bytes(12_345_678), "12.3MB"}, {Bytes(5e9), "5.00GB"},
		{Rate(2.5), "2.5B/s"}, {Rate(150_000), "150kB/s"},
		{Count(0), "0"}, {Count(3.14159), "3.14"}, {Count(42.42), "42.4"}, {Count(1234), "1234"}, {Count(56_789), "56.8k"},
	} {
		assert.Equal(t, tc.want, tc.got)
	}
}
