package reassign

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/topology"
)

// lostNotes warns about partitions with no replica left on a target
// broker: every copy of their data is on brokers the plan drains, so the
// reassignment can only copy them from there. When all of those brokers
// are down (Missing) or the partition has no leader, the copy cannot happen
// (Kafka's reassignment waits for it) and, with the broker dead, the data
// is gone: a replication-factor-1 partition on a dead broker is the usual
// case. Drain plans used to include them without a word.
func (w *work) lostNotes() []string {
	c := w.c
	if !slices.Contains(w.target, false) {
		return nil // nothing drained
	}
	missing := make([]bool, w.n())
	for _, b := range c.Brokers {
		missing[w.pos[b.ID]] = b.Missing
	}
	var gone, only []string
	nGone, nOnly := 0, 0
	for i := range c.Partitions {
		p := &c.Partitions[i]
		kept, down := false, true
		for _, r := range p.Replicas {
			b := w.pos[r]
			kept = kept || w.target[b]
			down = down && missing[b]
		}
		if kept {
			continue
		}
		desc := fmt.Sprintf("%s on %s", p.Key(), joinIDs(p.Replicas))
		if down || c.Live && p.Leader == topology.NoLeader {
			if nGone++; len(gone) < 3 {
				gone = append(gone, desc)
			}
		} else if nOnly++; len(only) < 3 {
			only = append(only, desc)
		}
	}
	var out []string
	if nGone > 0 {
		out = append(out, fmt.Sprintf("%s every replica on a down broker or no leader (%s): the plan cannot copy them while those brokers are down, and if they are dead their data is gone (recreate them, or bring the broker back first)",
			countPhrase(nGone, "partition has", "partitions have"), more(gone, nGone)))
	}
	if nOnly > 0 {
		out = append(out, fmt.Sprintf("%s no replica on a target broker (%s): their only copies are on drained brokers, which must stay up until the move completes",
			countPhrase(nOnly, "partition has", "partitions have"), more(only, nOnly)))
	}
	return out
}

func countPhrase(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func more(shown []string, n int) string {
	s := strings.Join(slices.Clone(shown), "; ")
	if n > len(shown) {
		s += "; ..."
	}
	return s
}
