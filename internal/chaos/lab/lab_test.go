package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kadm"
)

func TestPreferredLed(t *testing.T) {
	md := func(leader int32) kadm.Metadata {
		return kadm.Metadata{Topics: kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{
			0: {Partition: 0, Leader: 1, Replicas: []int32{1, 2}},
			1: {Partition: 1, Leader: leader, Replicas: []int32{2, 3}},
		}}}}
	}
	assert.True(t, preferredLed(md(2)))
	assert.False(t, preferredLed(md(3)), "partition 1 is led by its second replica")
	assert.True(t, preferredLed(kadm.Metadata{}), "nothing to elect")
}
