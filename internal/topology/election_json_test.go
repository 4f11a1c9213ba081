package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The election file is what kafka-leader-election --path-to-json-file
// reads: one partition a line, in the order given, valid JSON.
func TestWriteElection(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []Key
		want string
	}{
		{"none", nil, "{\"partitions\":[]}\n"},
		{"one", []Key{{"t", 3}}, "{\"partitions\":[\n  {\"topic\":\"t\",\"partition\":3}\n]}\n"},
		{"order kept", []Key{{"b", 1}, {"a", 0}}, "{\"partitions\":[\n  {\"topic\":\"b\",\"partition\":1},\n  {\"topic\":\"a\",\"partition\":0}\n]}\n"},
		{"escaped", []Key{{"x\"y", 0}}, "{\"partitions\":[\n  {\"topic\":\"x\\\"y\",\"partition\":0}\n]}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, WriteElection(&b, tc.keys))
			assert.Equal(t, tc.want, b.String())
			var doc struct {
				Partitions []struct {
					Topic     string `json:"topic"`
					Partition int32  `json:"partition"`
				} `json:"partitions"`
			}
			require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
			require.Len(t, doc.Partitions, len(tc.keys))
			for i, k := range tc.keys {
				assert.Equal(t, k, Key{doc.Partitions[i].Topic, doc.Partitions[i].Partition})
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteElectionWriteError(t *testing.T) {
	assert.ErrorContains(t, WriteElection(failWriter{}, []Key{{"t", 0}}), "disk full")
}
