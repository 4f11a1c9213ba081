package chaos

import (
	"context"
	"errors"
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
	var rep ISRReport
	var last error
	err = clock.Poll(ctx, nil, 200*time.Millisecond, wait, func(ctx context.Context) (bool, error) {
		m, err := fetchMeta(ctx, cl, nil)
		last = err
		if err != nil {
			return false, nil
		}
		rep = isrReport(brokers, m)
		return rep.Whole(), nil
	})
	switch {
	case err == nil:
		return rep, nil
	case !errors.Is(err, clock.ErrTimeout):
		return rep, err
	case last != nil && rep.Partitions == 0:
		return rep, errkind.Wrap(errkind.Runtime, "", fmt.Errorf("reading the ISRs: %w", last))
	}
	return rep, errkind.New(errkind.Runtime, "", "not every broker is back in every ISR after %v: %s", wait, rep)
}

// newTopicsSyncWait bounds Run's wait for the topics it created to have
// every replica in sync before the experiment starts.
const newTopicsSyncWait = 30 * time.Second

// syncNewTopics waits, for at most newTopicsSyncWait, until every partition
// of the topics Run has just created has all its replicas in its ISR. A
// topic is created with the brokers that are live at that instant as its
// ISR: a broker that a loaded machine let miss its session for a moment
// (the lab fences after 3 s) joins only once it has caught up, and the
// safety check before the kill would then refuse the experiment over
// partitions it made itself. It waits only where that check will run (a
// real cluster, a kill, no AllowUnavailable), shows the wait on the
// progress line and in the result's notes, and leaves the refusal to the
// safety check when the topics are still short after the wait.
func (r *runner) syncNewTopics(ctx context.Context, created []string) error {
	if len(created) == 0 || !r.c.Real() || r.cfg.AllowUnavailable || r.cfg.Target.Kind == TargetNone {
		return nil
	}
	start := r.now()
	tick := func([]string) {}
	if r.cfg.Progress != nil {
		tick = func([]string) { r.cfg.Progress(Progress{Phase: phaseSync, Elapsed: r.now().Sub(start)}) }
	}
	fetch := func(ctx context.Context) (*clusterMeta, error) { return fetchMeta(ctx, r.admin, created) }
	short, polls, err := waitInSync(ctx, fetch, created, newTopicsSyncWait, 200*time.Millisecond, r.now, tick)
	if err != nil {
		return fmt.Errorf("waiting for the new experiment topics to be in sync: %w", err)
	}
	switch {
	case len(short) > 0:
		r.notes = append(r.notes, fmt.Sprintf("%d partitions of the new experiment topics were still under-replicated %v after their creation (%s)",
			len(short), newTopicsSyncWait, head(short)))
	case polls > 1:
		r.notes = append(r.notes, fmt.Sprintf("the new experiment topics had every replica in sync %v after their creation",
			r.now().Sub(start).Round(100*time.Millisecond)))
	}
	return nil
}

// phaseSync is the progress line's phase while Run waits for the
// topics it created to have every replica in sync.
const phaseSync = "sync"

// waitInSync reads fetch every `every` until every partition of topics has
// all its replicas in its ISR, or wait has passed. It returns the
// partitions (TOPIC/P) still short, nil once all are in sync, and the
// number of answers read; tick is called with the short ones after each
// answer that is not in sync yet. A failed read is retried; the last error
// is returned when no answer came before the deadline.
func waitInSync(ctx context.Context, fetch func(context.Context) (*clusterMeta, error), topics []string, wait, every time.Duration,
	now func() time.Time, tick func(short []string)) ([]string, int, error) {
	deadline := now().Add(wait)
	polls := 0
	var short []string
	for {
		m, err := fetch(ctx)
		if err == nil {
			polls++
			short = shortISR(m, topics)
			if len(short) == 0 {
				return nil, polls, nil
			}
			tick(short)
		}
		if !now().Before(deadline) {
			if polls == 0 {
				return nil, polls, err
			}
			return short, polls, nil
		}
		if err := clock.Sleep(ctx, every); err != nil {
			return short, polls, err
		}
	}
}

// shortISR lists the partitions of topics whose ISR lacks a replica, or
// that the answer does not show yet.
func shortISR(m *clusterMeta, topics []string) []string {
	var short []string
	for _, t := range topics {
		parts, ok := m.topics[t]
		if !ok || len(parts) == 0 {
			short = append(short, t)
			continue
		}
		for p, pm := range parts {
			for _, id := range pm.replicas {
				if !slices.Contains(pm.isr, id) {
					short = append(short, fmt.Sprintf("%s/%d", t, p))
					break
				}
			}
		}
	}
	return short
}
