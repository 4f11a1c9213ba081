package sizing

import "fmt"

// Metadata is the cluster's metadata system.
type Metadata string

// The metadata systems with published partition guidance (seed 001).
const (
	KRaft     Metadata = "kraft"
	ZooKeeper Metadata = "zookeeper"
)

// Guidance from seed 001 (Brebner, 2024), used for warnings.
const (
	// ZooKeeperPartitionLimit is where ZooKeeper-based clusters were seen to break.
	ZooKeeperPartitionLimit = 80_000
	// KRaftReplicaLimit is the low end of the 1.9-2.25 million partition
	// replicas measured as KRaft's limit.
	KRaftReplicaLimit = 1_900_000
	// ReplicasPerCoreLimit is about where a broker core saturates.
	ReplicasPerCoreLimit = 46_000
	// ReplicasPerCoreUsable is about half of that, to stay usable.
	ReplicasPerCoreUsable = 23_000
	// DefaultMaxMapCount is Linux's default vm.max_map_count.
	DefaultMaxMapCount = 65_530
)

// ClusterCheck is the layout's cluster-level needs and warnings.
type ClusterCheck struct {
	PartitionReplicas int64    `json:"partition_replicas"`
	ReplicasPerBroker int64    `json:"replicas_per_broker"`
	MinOpenFiles      int64    `json:"min_open_files"`
	MinMaxMapCount    int64    `json:"min_vm_max_map_count"`
	Warnings          []string `json:"warnings,omitempty"`
}

// CheckCluster evaluates a solution against seed 001's guidance. cores is
// the cores per broker (0 when unknown).
func CheckCluster(in Input, res Result, md Metadata, cores int64) ClusterCheck {
	if !res.Feasible || res.Brokers == 0 {
		return ClusterCheck{}
	}
	reps := mulSat(res.Partitions, in.ReplicationFactor)
	per := ceilDiv(reps, 1, res.Brokers)
	cc := ClusterCheck{
		PartitionReplicas: reps,
		ReplicasPerBroker: per,
		// Each replica keeps at least a log segment and its index files
		// open and mapped; seed 001 asks for well above 2x replicas.
		MinOpenFiles:   2 * per,
		MinMaxMapCount: 2 * per,
	}
	switch md {
	case ZooKeeper:
		if res.Partitions > ZooKeeperPartitionLimit {
			cc.Warnings = append(cc.Warnings, fmt.Sprintf("%d partitions exceed the ~%d where ZooKeeper-based clusters were seen to break", res.Partitions, ZooKeeperPartitionLimit))
		}
	default:
		if reps > KRaftReplicaLimit {
			cc.Warnings = append(cc.Warnings, fmt.Sprintf("%d partition replicas exceed KRaft's measured limit of about %d", reps, KRaftReplicaLimit))
		}
	}
	if cores > 0 {
		switch {
		case per > cores*ReplicasPerCoreLimit:
			cc.Warnings = append(cc.Warnings, fmt.Sprintf("%d replicas per broker exceed the ~%d per core (%d cores) where a broker saturates", per, ReplicasPerCoreLimit, cores))
		case per > cores*ReplicasPerCoreUsable:
			cc.Warnings = append(cc.Warnings, fmt.Sprintf("%d replicas per broker exceed the ~%d per core (%d cores) that stay usable", per, ReplicasPerCoreUsable, cores))
		}
	}
	if cc.MinMaxMapCount > DefaultMaxMapCount {
		cc.Warnings = append(cc.Warnings, fmt.Sprintf("raise vm.max_map_count above %d (Linux default %d)", cc.MinMaxMapCount, DefaultMaxMapCount))
	}
	return cc
}
