package dist

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func assertField(t *testing.T, err error, field string) {
	t.Helper()
	assert.Equal(t, errkind.Usage, errkind.KindOf(err), "%v", err)
	assert.Equal(t, field, errkind.FieldOf(err), "%v", err)
	assert.NotContains(t, err.Error(), "\n")
}

func sampleMessages(t *testing.T) []Message {
	p := testPlan(3, "roundrobin", "node")
	r := report(t, p, 1, 0, "before", []rec{{seq: 0, broker: 2, part: 1, bytes: 100, lat: 3 * time.Millisecond, acked: true}, {seq: 1, failed: true}})
	return []Message{
		{Kind: KindPlan, Run: "r1", Plan: p},
		{Kind: KindPhase, Run: "r1", Phase: &PhaseStart{Name: "after", Start: t0.Add(5 * time.Second)}},
		{Kind: KindHeartbeat, Run: "r1", Heartbeat: &Heartbeat{Worker: Coordinator, At: t0}},
		{Kind: KindEnd, Run: "r1", End: &End{At: t0.Add(9 * time.Second), Reason: "done"}},
		{Kind: KindResult, Run: "r1", Result: &r},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range sampleMessages(t) {
		b, err := Encode(m)
		require.NoError(t, err, m.Kind)
		got, err := Decode(b)
		require.NoError(t, err, m.Kind)
		m.Schema = Schema
		assert.Equal(t, m, got, m.Kind)
	}
}

// TestDecodeErrors: each bad message gets one error naming its field.
func TestDecodeErrors(t *testing.T) {
	plan := func(edit func(p *Plan)) string {
		p := testPlan(2, "roundrobin")
		edit(p)
		b, err := json.Marshal(Message{Schema: Schema, Kind: KindPlan, Run: "r", Plan: p})
		require.NoError(t, err)
		return string(b)
	}
	tests := []struct {
		name, in, field string
	}{
		{"not json", `{"schema":`, "message"},
		{"trailing", `{"schema":"kplan.chaos-dist/v1","kind":"end","run":"r","end":{"at":"2026-11-26T12:00:00Z"}} {}`, "message"},
		{"other schema", `{"schema":"kplan.chaos-dist/v2","kind":"end","run":"r","end":{"at":"2026-11-26T12:00:00Z"}}`, "schema"},
		{"no run", `{"schema":"kplan.chaos-dist/v1","kind":"end","end":{"at":"2026-11-26T12:00:00Z"}}`, "run"},
		{"run id", `{"schema":"kplan.chaos-dist/v1","kind":"end","run":"a/b","end":{"at":"2026-11-26T12:00:00Z"}}`, "run"},
		{"stick", plan(func(p *Plan) { p.Stick = 0 }), "plan.stick"},
		{"bad kind", `{"schema":"kplan.chaos-dist/v1","kind":"hello","run":"r"}`, "kind"},
		{"kind without body", `{"schema":"kplan.chaos-dist/v1","kind":"end","run":"r"}`, "end"},
		{"two bodies", `{"schema":"kplan.chaos-dist/v1","kind":"end","run":"r","end":{"at":"2026-11-26T12:00:00Z"},"plan":{}}`, "plan"},
		{"type", `{"schema":"kplan.chaos-dist/v1","kind":"heartbeat","run":"r","heartbeat":{"worker":"x"}}`, "heartbeat.worker"},
		{"end at", `{"schema":"kplan.chaos-dist/v1","kind":"end","run":"r","end":{}}`, "end.at"},
		{"workers", plan(func(p *Plan) { p.Workers = 0 }), "plan.workers"},
		{"too many producers", plan(func(p *Plan) { p.Workers = 257 }), "plan.workers"},
		{"acks", plan(func(p *Plan) { p.Acks = "0" }), "plan.acks"},
		{"stream topic", plan(func(p *Plan) { p.Streams[0].Topic = "" }), "plan.streams[0].topic"},
		{"rate", plan(func(p *Plan) { p.Streams[0].RateBytesPerS = -1 }), "plan.streams[0].rate_bytes_per_s"},
		{"phase order", plan(func(p *Plan) { p.Phases[1].Start = t0.Add(-time.Second) }), "plan.phases[1].start"},
		{"guard", plan(func(p *Plan) { p.GuardNS = 0 }), "plan.guard_ns"},
		{"results topic", plan(func(p *Plan) { p.ResultsTopic = "" }), "plan.results_topic"},
		{"clock uncertainty", plan(func(p *Plan) { p.ClockKnown, p.ClockUncertaintyNS = true, -1 }), "plan.clock_uncertainty_ns"},
		{"report clock uncertainty", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","clock_known":true,"clock_uncertainty_ns":-5}}`, "result.clock_uncertainty_ns"},
		{"acked over sent", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":2}}`, "result.acked"},
		{"per broker sum", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":2,"acked":2,"acked_bytes":2,"per_broker":{"1":{"records":1,"bytes":1}}}}`, "result.per_broker"},
		{"broker key", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":1,"acked_bytes":1,"per_broker":{"b1":{"records":1,"bytes":1}}}}`, "result.per_broker"},
		{"ranges", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":1,"acked_bytes":1,"per_broker":{"1":{"records":1,"bytes":1}},"acked_seqs":[{"from":3,"to":3}]}}`, "result.acked_seqs[0]"},
		{"range count", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":1,"acked_bytes":1,"per_broker":{"1":{"records":1,"bytes":1}},"acked_seqs":[{"from":0,"to":2}]}}`, "result.acked_seqs"},
		{"bucket sum", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":1,"acked_bytes":1,"per_broker":{"1":{"records":1,"bytes":1}},"bucket_ns":100000000,"acked_bytes_buckets":[2]}}`, "result.acked_bytes_buckets"},
		{"bucket width", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":1,"acked_bytes":1,"per_broker":{"1":{"records":1,"bytes":1}},"acked_bytes_buckets":[1]}}`, "result.bucket_ns"},
		{"negative bucket", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":1,"acked_bytes":1,"per_broker":{"1":{"records":1,"bytes":1}},"bucket_ns":1,"acked_bytes_buckets":[2,-1]}}`, "result.acked_bytes_buckets"},
		{"latency", `{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":1,"acked_bytes":1,"per_broker":{"1":{"records":1,"bytes":1}},"acked_seqs":[{"from":0,"to":1}]}}`, "result.latency"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			require.Error(t, err)
			assertField(t, err, tc.field)
		})
	}
}

// FuzzDecode: any input decodes to a valid message that survives a round
// trip, or fails with one usage error naming a field; never a panic.
func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages(&testing.T{}) {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"kplan.chaos-dist/v1","kind":"result","run":"r","result":{"worker":0,"stream":0,"phase":"before","sent":1,"acked":1,"acked_bytes":1,"per_broker":{"1":{"records":1,"bytes":1}},"acked_seqs":[{"from":0,"to":1}],"latency":"HISTFAAAABx4nJNpmSzMwMDAyQABzFCaEUzOmNZg/wEidYmOgYmVhYFgBwA="}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.NotEmpty(t, errkind.FieldOf(err), "%v", err)
			assert.False(t, strings.Contains(err.Error(), "\n"), "%v", err)
			return
		}
		enc, err := Encode(m)
		require.NoError(t, err)
		again, err := Decode(enc)
		require.NoError(t, err)
		assert.Equal(t, m.Kind, again.Kind)
		if m.Kind == KindPlan {
			// A plan a worker accepts can be merged (with no reports).
			_, err := Merge(Input{Plan: m.Plan})
			require.NoError(t, err)
		}
	})
}
