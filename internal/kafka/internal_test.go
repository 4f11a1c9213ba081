package kafka

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A live snapshot with a topic filter (every CLI source passes one) used to
// drop Kafka's internal topics (metadata's IsInternal: __consumer_offsets,
// __transaction_state) whatever the filter said, so a live audit counted 17
// partitions where the same cluster's describe text had 67. A filter now
// sees them; without one they stay out, as before. (kfake lists no internal
// topic in metadata, so the rule is tested here and on real brokers in
// TestLabSnapshotKeepsInternalTopics.)
func TestSnapshotTopic(t *testing.T) {
	all := regexp.MustCompile("").MatchString
	orders := regexp.MustCompile("^orders$").MatchString
	for _, tc := range []struct {
		name     string
		filter   func(string) bool
		topic    string
		internal bool
		want     bool
	}{
		{"filter, internal", all, "__consumer_offsets", true, true},
		{"filter, internal by name only", all, "__transaction_state", false, true},
		{"filter, plain", all, "orders", false, true},
		{"filter rejects internal", orders, "__consumer_offsets", true, false},
		{"filter rejects", orders, "payments", false, false},
		{"no filter, internal", nil, "__consumer_offsets", true, false},
		{"no filter, __ name", nil, "__kplan", false, false},
		{"no filter, plain", nil, "orders", false, true},
	} {
		assert.Equal(t, tc.want, snapshotTopic(tc.filter, tc.topic, tc.internal), tc.name)
	}
}
