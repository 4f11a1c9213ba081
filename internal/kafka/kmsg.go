package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func kmsgApiVersions() kmsg.Request { return kmsg.NewPtrApiVersionsRequest() }

func kmsgCreateTopic(topic string, assignment [][]int32, configs map[string]*string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = topic
	t.NumPartitions = -1
	t.ReplicationFactor = -1
	for p, reps := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition = int32(p)
		a.Replicas = reps
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, v
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// kmsgListReassignments asks for every ongoing reassignment (no topics).
func kmsgListReassignments() *kmsg.ListPartitionReassignmentsRequest {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 15000
	return req
}

func kerrErr(code int16) error { return kerr.ErrorForCode(code) }
