package topology

import "slices"

// ElectAfterLoss returns the leader Kafka's controller elects for p when the
// brokers for which dead returns true are gone: the first replica in
// assignment order that is alive, in the ISR and not offline (Kafka's
// clean election; unclean election is off by default). It returns NoLeader
// when no such replica exists, i.e. the partition goes offline. A leader
// that is still alive keeps its leadership. This is the one place kplan
// writes the rule: audit's what-if and the embedded chaos cluster both call
// it.
func ElectAfterLoss(p *Partition, dead func(int32) bool) int32 {
	if p.Leader != NoLeader && !dead(p.Leader) {
		return p.Leader
	}
	for _, r := range p.Replicas {
		if !dead(r) && p.InSync(r) && !slices.Contains(p.Offline, r) {
			return r
		}
	}
	return NoLeader
}
