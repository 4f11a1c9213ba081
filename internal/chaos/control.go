package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// Control is the coordinator's side of a distributed run's topics
// (dist.ControlTopic, dist.ResultsTopic): it creates them, publishes the
// plan, phase starts, heartbeats and the end, reads the workers' reports
// and heartbeats (both on the results topic) and deletes the topics it
// created.
type Control struct {
	run     string
	now     func() time.Time
	cl      *kgo.Client // producing to the control topic
	results *kgo.Client // consuming the results topic
	created []string

	mu      sync.Mutex
	reports []dist.PhaseReport
	seen    map[int]time.Time // when each worker's last heartbeat was read
	skipped int               // results records that were not valid reports
	probes  chan dist.ClockSample
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
}

// resultsMaxBytes is the results topic's max.message.bytes: a report's
// acknowledged ranges grow with every failed record in its phase.
const resultsMaxBytes = 8 << 20

// NewControl creates run's control and results topics (one partition each,
// replicated on up to 3 brokers, led by a broker not in avoid when there is
// one: the brokers the run will kill or fault, whose loss would hold up
// the phase announcements for a failover) and starts reading the results
// topic; now (nil: time.Now) times the workers' heartbeats. Close deletes
// what it created.
func NewControl(ctx context.Context, conn kafka.ConnOptions, version, run string, avoid []int32, now func() time.Time) (*Control, error) {
	if now == nil {
		now = time.Now
	}
	if err := dist.CheckRunID(run); err != nil {
		return nil, err
	}
	// Not idempotent: a repeated control message is harmless (workers take
	// a plan and each phase once), and a just-started cluster answers
	// InitProducerId with COORDINATOR_LOAD_IN_PROGRESS for a few seconds,
	// which failed the plan's publish once on a fresh lab.
	cl, err := kafka.NewClient(conn, version, kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(resultsMaxBytes), kgo.DisableIdempotentWrite())
	if err != nil {
		return nil, fmt.Errorf("control client: %w", err)
	}
	c := &Control{run: run, cl: cl, seen: map[int]time.Time{}, now: now, probes: make(chan dist.ClockSample, 16)}
	adm := kadm.NewClient(cl)
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("list brokers: %w", err)
	}
	replicas := runReplicas(brokers.NodeIDs(), avoid)
	maxBytes := fmt.Sprint(resultsMaxBytes)
	// The brokers stamp every record: a probe read back tells its sender's
	// clock offset (dist.EstimateOffset).
	logAppend := "LogAppendTime"
	for i, t := range []string{dist.ControlTopic(run), dist.ResultsTopic(run)} {
		// The two topics start at different brokers, so that their leaders
		// differ where they can.
		reps := slices.Clone(replicas)
		k := i % len(reps)
		reps[0], reps[k] = reps[k], reps[0]
		err := kafka.CreateTopic(ctx, cl, t, [][]int32{reps}, map[string]*string{"max.message.bytes": &maxBytes, "message.timestamp.type": &logAppend})
		if err != nil {
			_ = c.deleteCreated(ctx)
			cl.Close()
			if errors.Is(err, kerr.TopicAlreadyExists) {
				return nil, fmt.Errorf("topic %s: %w (another run with id %s, or leftovers of one: choose another --run or delete it)", t, err, run)
			}
			return nil, fmt.Errorf("create topic %s: %w", t, err)
		}
		c.created = append(c.created, t)
	}
	if err := kafka.WaitLeaders(ctx, cl, 30*time.Second, c.created...); err != nil {
		_ = c.Close(ctx)
		return nil, fmt.Errorf("run topics not ready: %w", err)
	}
	c.results, err = kafka.NewClient(conn, version,
		kgo.ConsumeTopics(dist.ResultsTopic(run)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.FetchMaxPartitionBytes(resultsMaxBytes),
	)
	if err != nil {
		_ = c.Close(ctx)
		return nil, fmt.Errorf("results client: %w", err)
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	c.stop = stop
	c.wg.Go(func() { c.read(rctx) })
	return c, nil
}

// Run is the run's id.
func (c *Control) Run() string { return c.run }

// runReplicas are the run topics' replicas: up to 3 brokers not in avoid
// (in id order), so that losing one the run kills or faults neither moves
// their leader nor holds up an acks=all publish until the ISR shrinks; the
// brokers in avoid only when no other is left.
func runReplicas(brokers, avoid []int32) []int32 {
	brokers = slices.Sorted(slices.Values(brokers))
	var safe []int32
	for _, b := range brokers {
		if !slices.Contains(avoid, b) {
			safe = append(safe, b)
		}
	}
	if len(safe) == 0 {
		safe = brokers
	}
	return safe[:min(3, len(safe))]
}

func (c *Control) read(ctx context.Context) {
	for ctx.Err() == nil {
		fs := c.results.PollFetches(ctx)
		fs.EachRecord(func(rec *kgo.Record) {
			m, err := dist.Decode(rec.Value)
			c.mu.Lock()
			defer c.mu.Unlock()
			switch {
			case err != nil || m.Run != c.run:
				c.skipped++
			case m.Kind == dist.KindResult:
				c.reports = append(c.reports, *m.Result)
			case m.Kind == dist.KindHeartbeat && m.Heartbeat.Worker >= 0:
				c.seen[m.Heartbeat.Worker] = c.now()
			case m.Kind == dist.KindHeartbeat:
				// The coordinator's own clock probe (ProbeClock).
				select {
				case c.probes <- dist.ClockSample{Sent: m.Heartbeat.At, Broker: rec.Timestamp}:
				default:
				}
			default:
				c.skipped++
			}
		})
	}
}

// Seen returns the workers whose heartbeat was read, in order.
func (c *Control) Seen() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.seen))
}

// Publish writes m (its Run set to the run's) on the control topic and
// waits for its acknowledgement.
func (c *Control) Publish(ctx context.Context, m dist.Message) error {
	return c.produce(ctx, dist.ControlTopic(c.run), m)
}

func (c *Control) produce(ctx context.Context, topic string, m dist.Message) error {
	m.Run = c.run
	b, err := dist.Encode(m)
	if err != nil {
		return err
	}
	if err := c.cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: b}).FirstErr(); err != nil {
		return fmt.Errorf("publish %s on %s: %w", m.Kind, topic, err)
	}
	return nil
}

// clockProbes is how many probes measure a clock; probeTimeout bounds the
// wait for each one's read-back.
const (
	clockProbes  = 5
	probeTimeout = 5 * time.Second
)

// ProbeClock measures the coordinator's clock against the brokers': it
// publishes clockProbes heartbeats on the results topic (whose records
// carry the broker's log-append time) and reads each back. ok is false
// when no probe came back.
func (c *Control) ProbeClock(ctx context.Context) (dist.Offset, bool) {
	return probeClock(ctx, c.now, c.probes, func(ctx context.Context, sent time.Time) error {
		return c.produce(ctx, dist.ResultsTopic(c.run), dist.Message{Kind: dist.KindHeartbeat, Heartbeat: &dist.Heartbeat{Worker: dist.Coordinator, At: sent}})
	})
}

// probeClock sends clockProbes probes (send publishes one stamped sent on
// a LogAppendTime topic), waits for each to come back on probes and
// estimates the clock's offset from them.
func probeClock(ctx context.Context, now func() time.Time, probes <-chan dist.ClockSample, send func(context.Context, time.Time) error) (dist.Offset, bool) {
	var samples []dist.ClockSample
	for range clockProbes {
		sent := now()
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := send(pctx, sent)
		acked := now()
		if err == nil {
			if s, ok := awaitProbe(pctx, probes, sent); ok {
				s.Acked = acked
				samples = append(samples, s)
			}
		}
		cancel()
	}
	return dist.EstimateOffset(samples)
}

// awaitProbe waits for the probe sent at sent to be read back; earlier
// probes read late are dropped.
func awaitProbe(ctx context.Context, probes <-chan dist.ClockSample, sent time.Time) (dist.ClockSample, bool) {
	for {
		select {
		case <-ctx.Done():
			return dist.ClockSample{}, false
		case s := <-probes:
			if s.Sent.Equal(sent) {
				return s, true
			}
		}
	}
}

// Heartbeats publishes the coordinator's heartbeat every interval until
// the returned function is called (best effort: a failed one is retried at
// the next tick).
func (c *Control) Heartbeats(ctx context.Context, now func() time.Time, every time.Duration) (stop func()) {
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			pctx, pcancel := context.WithTimeout(hctx, every)
			_ = c.Publish(pctx, dist.Message{Kind: dist.KindHeartbeat, Heartbeat: &dist.Heartbeat{Worker: dist.Coordinator, At: now()}})
			pcancel()
			select {
			case <-hctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// Reports returns the reports read so far (a copy) and how many results
// records were not valid reports of this run.
func (c *Control) Reports() ([]dist.PhaseReport, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]dist.PhaseReport(nil), c.reports...), c.skipped
}

// WaitReports waits until every worker either reported every stream of
// every phase in ran (a report saying Missed counts) or fell silent (no
// heartbeat read for silent: a worker that died reports nothing more), or
// timeout passed, and returns the reports read.
func (c *Control) WaitReports(ctx context.Context, workers, streams int, ran []string, timeout, silent time.Duration) []dist.PhaseReport {
	type key struct {
		w, s  int
		phase string
	}
	_ = clock.Poll(ctx, clock.WithNow(c.now), 50*time.Millisecond, timeout, func(context.Context) (bool, error) {
		reps, _ := c.Reports()
		have := map[key]bool{}
		for _, r := range reps {
			have[key{r.Worker, r.Stream, r.Phase}] = true
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for w := range workers {
			if last, ok := c.seen[w]; !ok || c.now().Sub(last) > silent {
				continue
			}
			for s := range streams {
				for _, ph := range ran {
					if !have[key{w, s, ph}] {
						return false, nil
					}
				}
			}
		}
		return true, nil
	})
	reps, _ := c.Reports()
	return reps
}

// Close stops reading and deletes the topics the Control created, on a
// context of its own (bounded: 30 s) so that it runs after a Ctrl-C. A
// second call does nothing.
func (c *Control) Close(ctx context.Context) error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.stop != nil {
		c.stop()
		c.wg.Wait()
	}
	if c.results != nil {
		c.results.Close()
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := c.deleteCreated(dctx)
	c.cl.Close()
	return err
}

// deleteCreated deletes the topics the Control created. A refusal that a
// fresh look at the cluster may cure (a controller that moved during the
// run's kill: NOT_CONTROLLER) is retried twice.
func (c *Control) deleteCreated(ctx context.Context) error {
	if len(c.created) == 0 {
		return nil
	}
	var err error
	for try := range 3 {
		if try > 0 {
			c.cl.ForceMetadataRefresh()
			if clock.Sleep(ctx, 500*time.Millisecond) != nil {
				break
			}
		}
		if _, err = kafka.DeleteTopicsAndWait(ctx, c.cl, c.created...); err == nil || !kerr.IsRetriable(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("delete the run's topics: %w", err)
	}
	c.created = nil
	return nil
}
