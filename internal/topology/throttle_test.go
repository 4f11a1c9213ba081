package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The throttle Kafka's own tool would set: current replicas of a moving
// partition lead the copy, replicas being added follow, and the rate goes on
// every broker holding either.
func TestThrottleFor(t *testing.T) {
	moves := []Partition{
		{Topic: "a", Partition: 0, Replicas: []int32{2, 3}},
		{Topic: "a", Partition: 1, Replicas: []int32{4, 1}},
		{Topic: "b", Partition: 2, Replicas: []int32{2, 1}}, // reorder only
	}
	current := map[Key][]int32{
		{Topic: "a", Partition: 0}: {1, 2},
		{Topic: "a", Partition: 1}: {1, 2},
		{Topic: "b", Partition: 2}: {1, 2},
	}
	got := ThrottleFor(5_000_000, moves, current)
	assert.Equal(t, int64(5_000_000), got.Rate)
	assert.Equal(t, []int32{1, 2, 3, 4}, got.Brokers)
	assert.Equal(t, map[string][]string{"a": {"0:1", "0:2", "1:1", "1:2"}, "b": {"2:1", "2:2"}}, got.Leaders)
	assert.Equal(t, map[string][]string{"a": {"0:3", "1:4"}}, got.Followers)
	assert.Equal(t, []string{"a", "b"}, got.Topics())
}

// A topic whose moves only add replicas (no current replica known) still
// appears once in Topics.
func TestThrottleTopicsFollowersOnly(t *testing.T) {
	got := ThrottleFor(1, []Partition{{Topic: "c", Partition: 0, Replicas: []int32{1}}, {Topic: "a", Partition: 0, Replicas: []int32{2}}},
		map[Key][]int32{{Topic: "a", Partition: 0}: {3}})
	assert.Equal(t, []string{"a", "c"}, got.Topics())
	assert.Equal(t, []int32{1, 2, 3}, got.Brokers)
}
