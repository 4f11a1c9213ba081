package measure

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnavailSetElectionTime(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"replace", "throughput: 1MB/s\nelection-time: 25ms              # u\nmax-unavailability: 2s\n",
			"throughput: 1MB/s\nelection-time: 850us          # measured\nmax-unavailability: 2s\n"},
		{"append", "throughput: 1MB/s\n", "throughput: 1MB/s\nelection-time: 850us          # measured\n"},
		{"append without newline", "throughput: 1MB/s", "throughput: 1MB/s\nelection-time: 850us          # measured\n"},
		{"indented key is not the plan's", "x:\n  election-time: 1ms\n", "x:\n  election-time: 1ms\nelection-time: 850us          # measured\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetElectionTime([]byte(tc.in), "850us", "measured")
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	_, err := SetElectionTime([]byte("election-time: 1ms\nelection-time: 2ms\n"), "1ms", "")
	assert.ErrorContains(t, err, "set 2 times")
}
