package reassign

import (
	"fmt"
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Check is the last line of defence before a plan reaches Kafka: every
// changed partition has a non-empty replica list of distinct target brokers
// (o.Brokers, or c's live brokers when empty), and keeps its replication factor
// unless o.ReplicationFactor sets one. A failure means a planner bug, so
// its error is a runtime error.
func Check(c *topology.Cluster, p *Plan, o Options) error {
	target := map[int32]bool{}
	brokers := o.Brokers
	if len(brokers) == 0 {
		brokers = LiveBrokers(c)
	}
	for _, b := range brokers {
		target[b.ID] = true
	}
	for _, ch := range p.Changes {
		k := ch.New.Key()
		for _, r := range ch.New.Replicas {
			if slices.Contains(o.Cordon, r) && !slices.Contains(ch.Old.Replicas, r) {
				return fmt.Errorf("%s: cordoned broker %d receives a replica", k, r)
			}
		}
		switch {
		case len(ch.New.Replicas) == 0:
			return fmt.Errorf("%s: empty replica list", k)
		case o.ReplicationFactor == 0 && len(ch.New.Replicas) != len(ch.Old.Replicas):
			return fmt.Errorf("%s: replication factor %d -> %d, and no replication factor was asked for", k, len(ch.Old.Replicas), len(ch.New.Replicas))
		case o.ReplicationFactor > 0 && len(ch.New.Replicas) != o.ReplicationFactor:
			return fmt.Errorf("%s: replication factor %d, not the %d asked for", k, len(ch.New.Replicas), o.ReplicationFactor)
		}
		if err := checkDirs(ch, o.Dirs); err != nil {
			return err
		}
		for j, r := range ch.New.Replicas {
			if !target[r] {
				return fmt.Errorf("%s: broker %d is not a target broker", k, r)
			}
			if slices.Contains(ch.New.Replicas[:j], r) {
				return fmt.Errorf("%s: broker %d twice", k, r)
			}
		}
	}
	return nil
}

// checkDirs checks a change's log_dirs: one per replica, each "any" or a
// dir of its broker that is not cordoned (a replica staying in a cordoned
// dir has "any").
func checkDirs(ch Change, l *DirLayout) error {
	k := ch.New.Key()
	if len(ch.New.LogDirs) == 0 {
		return nil
	}
	if len(ch.New.LogDirs) != len(ch.New.Replicas) {
		return fmt.Errorf("%s: %d log dirs for %d replicas", k, len(ch.New.LogDirs), len(ch.New.Replicas))
	}
	if l == nil {
		return nil
	}
	for j, d := range ch.New.LogDirs {
		if d == AnyDir {
			continue
		}
		r := ch.New.Replicas[j]
		bd, ok := l.Brokers[r]
		if !ok {
			continue // dirs known only through replicas: planDirs named one of them
		}
		if !slices.Contains(bd.Dirs, d) {
			return fmt.Errorf("%s: broker %d has no log dir %s", k, r, d)
		}
		if slices.Contains(bd.Cordoned, d) {
			return fmt.Errorf("%s: cordoned log dir %s of broker %d receives a replica", k, d, r)
		}
	}
	return nil
}
