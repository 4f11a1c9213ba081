package observe

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMayBeSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want bool
	}{
		{"layout", `{"version":1,"partitions":[{"topic":"a_b","partition":0,"replicas":[1]}]}`, false},
		{"snapshot", `{"observe_schema":1,"observe":{}}`, true},
		{"upper case", `{"OBSERVE_SCHEMA":1}`, true},
		{"mixed case", `{"Observe_Schema":1}`, true},
		{"escaped", `{"observe\u005fschema":1}`, true},
		{"non-ASCII", `{"obſerve_schema":1}`, true},
		{"key at the start", `{"observe_schema":1}`, true},
		{"underscore first", `_`, false},
		{"short", `{"e_s":1}`, false},
		{"empty", ``, false},
		{"in a value", `{"topic":"observe_schema"}`, true}, // false positives only cost the full decode
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, MayBeSnapshot([]byte(tc.data)))
		})
	}
}

// FuzzMayBeSnapshot: whatever encoding/json takes for an observe_schema
// key, MayBeSnapshot says may be one.
func FuzzMayBeSnapshot(f *testing.F) {
	for _, s := range []string{`{"observe_schema":1}`, `{"OBSERVE_schema":2}`, `{"obſerve_schema":1}`, `{"observe\u005fschema":1}`, `{"version":1}`, `{"a_b":[1,{"c_d":2}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s struct {
			Schema *json.RawMessage `json:"observe_schema"`
		}
		if json.Unmarshal(data, &s) != nil || s.Schema == nil {
			return
		}
		if !MayBeSnapshot(data) {
			t.Fatalf("%q has observe_schema for encoding/json, MayBeSnapshot says no", data)
		}
	})
}
