package observe

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadSnapshot(t *testing.T) {
	data, err := os.ReadFile("../cli/audit/testdata/observed-lab.json")
	require.NoError(t, err)
	r, err := ReadSnapshot(data, "lab.json")
	require.NoError(t, err)
	require.NotNil(t, r)
	assert.True(t, r.Traffic)
	assert.NotEmpty(t, r.Partitions)
	assert.NotEmpty(t, r.Brokers)

	r, err = ReadSnapshot([]byte(`{"version":1,"partitions":[]}`), "layout.json")
	require.NoError(t, err)
	assert.Nil(t, r, "a plain layout is no snapshot")

	for _, tc := range []struct{ body, field string }{
		{`{"observe_schema":2}`, "observe_schema"},
		{`{"observe_schema":1}`, "observe"},
		{`{"observe_schema":1,"observe":{"window_seconds":0}}`, "observe.window_seconds"},
		{`{"observe_schema":1,"observe":{"window_seconds":5,"partitions":[{"topic":"a","consumer_bytes_per_second":-1}]}}`, "observe.partitions[0].consumer_bytes_per_second"},
		{`{"observe_schema":1,"observe":{"window_seconds":5,"partitions":[{"topic":""}]}}`, "observe.partitions[0].topic"},
		{`{"observe_schema":"x"}`, "observe_schema"},
		{`{"observe_schema":1,`, ""},
	} {
		_, err := ReadSnapshot([]byte(tc.body), "s.json")
		var se *SnapshotError
		require.True(t, errors.As(err, &se), "%s: %v", tc.body, err)
		assert.Equal(t, tc.field, se.Field, tc.body)
		assert.True(t, strings.HasPrefix(err.Error(), "s.json: "), err.Error())
		assert.NotContains(t, err.Error(), "\n")
	}
}

func FuzzReadSnapshot(f *testing.F) {
	if data, err := os.ReadFile("../cli/audit/testdata/observed-lab.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"observe_schema":1,"observe":{"window_seconds":5,"partitions":[{"topic":"a"}]}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ReadSnapshot(data, "f.json")
		if err != nil {
			var se *SnapshotError
			if !errors.As(err, &se) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("two lines: %q", err.Error())
			}
			return
		}
		if r != nil && !(r.WindowSeconds > 0) {
			t.Fatalf("accepted window %v", r.WindowSeconds)
		}
	})
}
