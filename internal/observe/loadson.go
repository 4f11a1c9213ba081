package observe

import (
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// LoadsOn is the load per broker that the observed partitions would put on
// layout, which may differ from the layout observed (another leader, a
// plan's replica sets, a broker lost): each partition's leader takes its
// produce bytes, serves its consumers and replicates to its followers; each
// follower takes the produce bytes again. A replica's disk is the bytes
// observed on that broker, or the partition's size where the observation
// had none (a new replica). Partitions of layout that were not observed
// carry no load. Every live broker of layout is listed, in id order.
func LoadsOn(layout *topology.Cluster, parts []PartitionLoad) []BrokerLoad {
	byKey := make(map[topology.Key]*PartitionLoad, len(parts))
	for i := range parts {
		byKey[topology.Key{Topic: parts[i].Topic, Partition: parts[i].Partition}] = &parts[i]
	}
	aligned := make([]PartitionLoad, len(layout.Partitions))
	for i := range layout.Partitions {
		p := &layout.Partitions[i]
		pl, ok := byKey[p.Key()]
		if !ok {
			aligned[i] = PartitionLoad{Topic: p.Topic, Partition: p.Partition, Idle: true}
			continue
		}
		a := *pl
		a.Replicas = make([]Replica, 0, len(p.Replicas))
		for _, r := range p.Replicas {
			k := slices.IndexFunc(pl.Replicas, func(x Replica) bool { return x.Broker == r })
			switch {
			case k >= 0:
				a.Replicas = append(a.Replicas, pl.Replicas[k])
			case pl.SizeBytes > 0:
				a.Replicas = append(a.Replicas, Replica{Broker: r, Bytes: pl.SizeBytes})
			}
		}
		aligned[i] = a
	}
	return brokerLoads(layout, aligned)
}
