package kafka

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kplan-dev/kplan/internal/topology"
)

// The controller's answer: success and ELECTION_NOT_NEEDED are no
// refusal; any other error is, with Kafka's message; a partition without
// an answer is refused too.
func TestElectRefusals(t *testing.T) {
	k := func(p int32) topology.Key { return topology.Key{Topic: "t", Partition: p} }
	res := kadm.ElectLeadersResults{"t": {
		0: {Topic: "t", Partition: 0},
		1: {Topic: "t", Partition: 1, Err: kerr.ElectionNotNeeded, ErrMessage: "Leader is already the preferred one"},
		2: {Topic: "t", Partition: 2, Err: kerr.PreferredLeaderNotAvailable, ErrMessage: "Failed to elect leader for partition t-2"},
		3: {Topic: "t", Partition: 3, Err: kerr.UnknownTopicOrPartition},
	}}
	got := electRefusals([]topology.Key{k(0), k(1), k(2), k(3), k(4)}, res)
	assert.Len(t, got, 3)
	assert.ErrorIs(t, got[k(2)], kerr.PreferredLeaderNotAvailable)
	assert.ErrorContains(t, got[k(2)], "Failed to elect leader for partition t-2")
	assert.ErrorIs(t, got[k(3)], kerr.UnknownTopicOrPartition)
	assert.ErrorContains(t, got[k(4)], "no answer from the controller")
	assert.NotContains(t, got, k(0))
	assert.NotContains(t, got, k(1))
}
