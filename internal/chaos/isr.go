package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// ISRReport is the cluster's state when WaitFullISR returned: every broker
// it knows, the live ones, and the partitions (TOPIC/P) whose in-sync
// replicas are not all their replicas.
type ISRReport struct {
	Brokers    []int32
	Live       []int32
	Partitions int
	Short      []string
}

// Whole reports whether every broker is live and in every ISR.
func (r ISRReport) Whole() bool {
	return len(r.Short) == 0 && len(r.Live) >= len(r.Brokers)
}

// String says what the report found in one line.
func (r ISRReport) String() string {
	if r.Whole() {
		return fmt.Sprintf("every broker (%v) is back in every ISR (%d partitions)", r.Brokers, r.Partitions)
	}
	var down []int32
	for _, id := range r.Brokers {
		if !slices.Contains(r.Live, id) {
			down = append(down, id)
		}
	}
	var says []string
	if len(down) > 0 {
		says = append(says, fmt.Sprintf("brokers %v are not in the metadata", down))
	}
	if len(r.Short) > 0 {
		says = append(says, fmt.Sprintf("%d of %d partitions are under-replicated (%s)", len(r.Short), r.Partitions, head(r.Short)))
	}
	return strings.Join(says, "; ")
}

// isrReport reads the state of every topic from m.
func isrReport(brokers []int32, m *clusterMeta) ISRReport {
	rep := ISRReport{Brokers: brokers, Live: m.brokers}
	for t, parts := range m.topics {
		for p, pm := range parts {
			rep.Partitions++
			for _, id := range pm.replicas {
				if !slices.Contains(pm.isr, id) {
					rep.Short = append(rep.Short, fmt.Sprintf("%s/%d", t, p))
					break
				}
			}
		}
	}
	slices.Sort(rep.Short)
	return rep
}

// WaitFullISR waits, for at most wait, until every broker of c is live and
// in the ISR of every partition of every topic, as a metadata answer says.
// A restarted broker catches up on what it missed first: a soak checks this
// between kills (the next kill's safety check would refuse otherwise) and at
// the end. It returns the last report, and a runtime error (errkind.Runtime)
// when the cluster is still not whole after wait.
func WaitFullISR(ctx context.Context, c Cluster, conn kafka.ConnOptions, version string, wait time.Duration) (ISRReport, error) {
	brokers, err := c.Brokers(ctx)
	if err != nil {
		return ISRReport{}, err
	}
	cl, err := kafka.NewClient(conn.WithSeeds(c.Seeds()), version, kgo.RetryTimeout(10*time.Second))
	if err != nil {
		return ISRReport{}, fmt.Errorf("metadata client: %w", err)
	}
	defer cl.Close()
	deadline := time.Now().Add(wait)
	var rep ISRReport
	var last error
	for {
		m, err := fetchMeta(ctx, cl, nil)
		if err == nil {
			rep = isrReport(brokers, m)
			if rep.Whole() {
				return rep, nil
			}
		}
		last = err
		if time.Now().After(deadline) {
			if last != nil && rep.Partitions == 0 {
				return rep, errkind.Wrap(errkind.Runtime, "", fmt.Errorf("reading the ISRs: %w", last))
			}
			return rep, errkind.New(errkind.Runtime, "", "not every broker is back in every ISR after %v: %s", wait, rep)
		}
		if err := clock.Sleep(ctx, 200*time.Millisecond); err != nil {
			return rep, err
		}
	}
}
