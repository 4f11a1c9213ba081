package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
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

// TestLabConn: a secured lab's client properties are used unless the
// caller gave its own; a plaintext lab adds none.
func TestLabConn(t *testing.T) {
	secured := &localkafka.State{Security: &localkafka.Security{Mode: "sasl_ssl", ClientConfig: "/lab/client.properties"}}
	plain := &localkafka.State{}
	for _, tc := range []struct {
		name  string
		state *localkafka.State
		given string
		want  string
	}{
		{"secured lab, no --command-config", secured, "", "/lab/client.properties"},
		{"secured lab, explicit --command-config", secured, "/mine.properties", "/mine.properties"},
		{"plaintext lab", plain, "", ""},
		{"plaintext lab, explicit", plain, "/mine.properties", "/mine.properties"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := labConn(tc.state, kafka.ConnOptions{BootstrapServers: "x:1", CommandConfig: tc.given})
			assert.Equal(t, tc.want, got.CommandConfig)
			assert.Equal(t, "x:1", got.BootstrapServers)
		})
	}
}
