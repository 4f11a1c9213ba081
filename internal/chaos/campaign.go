package chaos

import (
	"context"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// DefaultISRWait bounds a campaign's wait for a restarted broker to be back
// in every ISR when Campaign.ISRWait is 0.
const DefaultISRWait = 2 * time.Minute

// Campaign is a workflow over experiments (the action behind `kplan
// chaos`): one run, Repeat runs of the same kill (a soak on a real
// cluster), or one run per broker killing each in turn (EachBroker). It
// opens the cluster of each run, fills in what only the cluster knows (the
// ring assignment, the existing topics), puts a killed broker back between
// runs on a real cluster and waits until it is in every ISR, and returns
// the runs; it prints nothing (OnRun reports progress).
type Campaign struct {
	// Config is the experiment of every run. Its Target TargetEach kills
	// every broker of the cluster in turn, one run each, restoring it and
	// waiting for full ISRs and preferred leaders before the next kill on a
	// real cluster. With no Assignment and no
	// Workload, each run writes topics with RingAssignment over the
	// cluster's brokers (Partitions, ReplicationFactor). With Existing and
	// no Workload, the topics are listed once by Existing.
	Config                        Config
	Partitions, ReplicationFactor int
	// Repeat runs the experiment this many times (1 to 1000); the order of
	// a sequential run's partitioners rotates each time.
	Repeat int
	// Open opens the cluster of one run; it may set cfg.Conn (a secured
	// lab's client properties). With Shared, Open is called once and the
	// campaign never closes the cluster (its owner does).
	Open   func(ctx context.Context, cfg *Config) (Cluster, error)
	Shared bool
	// Existing lists the workload of Config.Existing on the cluster.
	Existing func(ctx context.Context, c Cluster, cfg Config) ([]WorkloadTopic, error)
	// CheckBrokers checks, before the first run, that the workload's
	// assignments name only brokers the cluster has.
	CheckBrokers bool
	// ISRWait bounds each wait for full ISRs; 0 means DefaultISRWait.
	ISRWait time.Duration
	// OnRun, when set, is called after each run with its number from 1,
	// the number of runs and its result (nil when it produced none).
	OnRun func(i, n int, res *Result)
}

// CampaignResult is what a campaign ran.
type CampaignResult struct {
	// Runs are the results in order, also of a run that failed part way.
	Runs []*Result
	// Summary sums up Repeat > 1 runs of the same kill.
	Summary *Summary
	// Kills is the per-kill report of EachBroker.
	Kills *KillEach
	// ISR is the cluster's state after runs that killed and restored
	// brokers of a real cluster (every broker back in every ISR).
	ISR *ISRReport
}

// each reports whether the campaign kills every broker in turn.
func (c *Campaign) each() bool { return c.Config.Target.Kind == TargetEach }

// Validate checks what can be checked before the cluster is reached: the
// campaign's own settings and Config.Validate's, leaving out the
// assignment the campaign builds over the cluster's brokers and the
// existing topics it lists. Errors name the field.
func (c *Campaign) Validate() error {
	if c.Repeat < 1 || c.Repeat > 1000 {
		return errkind.Usagef("repeat", "want 1 to 1000, got %d", c.Repeat)
	}
	ring := c.Config.Assignment == nil && len(c.Config.Workload) == 0 && !c.Config.Existing
	if ring {
		if c.Partitions < 1 || c.Partitions > 10000 {
			return errkind.Usagef("partitions", "want 1 to 10000 partitions, got %d", c.Partitions)
		}
		if c.ReplicationFactor < 1 {
			return errkind.Usagef(FieldReplicationFactor, "must be at least 1, got %d", c.ReplicationFactor)
		}
	}
	if c.each() && c.Repeat > 1 {
		return errkind.Usagef("repeat", "not with the target each (each broker is killed once)")
	}
	return c.Config.validate(ring, c.Config.Existing && len(c.Config.Workload) == 0, true)
}

// KillerNeeded says what needs a killer on a cluster kplan does not run
// (the flag, for a message "required with ..."), "" when the campaign
// neither kills nor injects a fault.
func (c *Campaign) KillerNeeded() string {
	switch {
	case c.Config.Fault != nil && c.Config.Slow:
		return "--slow on a --bootstrap-server cluster (chaos-mesh injects it as a NetworkChaos)"
	case c.Config.Fault != nil:
		return "--fault on a --bootstrap-server cluster (chaos-mesh injects it as a NetworkChaos)"
	case c.Config.Target.Kind != TargetNone:
		return "--bootstrap-server (chaos-mesh, docker or exec)"
	}
	return ""
}

// RestoreNeeded says what needs every kill undone on a cluster kplan does
// not run (for a message "required with ..."), "" when nothing does.
func (c *Campaign) RestoreNeeded() string {
	cfg := &c.Config
	switch {
	case cfg.Target.Kind == TargetNone:
		return ""
	case cfg.Restore:
		return "--restore"
	case cfg.Target.Kind == TargetEach:
		return "--kill each (each kill is undone before the next)"
	case c.Repeat > 1:
		return "--repeat (each run needs the broker back)"
	case cfg.Sequential && len(cfg.Partitioners) > 1:
		return "--sequential (each partitioner's leg needs the broker back)"
	}
	return ""
}

// Run runs the campaign. On an error it returns the runs so far with it;
// a Ctrl-C (ctx cancelled) ends it after the run in progress, whose
// partial result is kept.
func (c *Campaign) Run(ctx context.Context) (CampaignResult, error) {
	var out CampaignResult
	cfg := c.Config
	var shared Cluster
	if c.Shared {
		var err error
		if shared, err = c.Open(ctx, &cfg); err != nil {
			return out, err
		}
	}
	victims := []int32{cfg.Target.Broker}
	n := c.Repeat
	var restored []bool
	var runErr error
	for i := 0; i < n; i++ {
		cl := shared
		if cl == nil {
			var err error
			if cl, err = c.Open(ctx, &cfg); err != nil {
				return out, err
			}
		}
		if i == 0 {
			err := c.prepare(ctx, cl, &cfg)
			if err == nil && c.each() {
				victims, err = cl.Brokers(ctx)
				n = len(victims)
			}
			if err != nil {
				c.close(cl)
				return out, err
			}
		}
		rc, err := c.runConfig(ctx, cl, cfg, i)
		if err != nil {
			c.close(cl)
			return out, err
		}
		if c.each() {
			rc.Target = Target{Kind: TargetBroker, Broker: victims[i]}
		}
		if i > 0 && c.soak(cl) {
			// The previous cycle's broker catches up first: the kill's
			// safety check refuses an under-replicated cluster.
			if _, err := c.whole(ctx, cl, cfg); err != nil {
				c.close(cl)
				restored[len(restored)-1] = false
				runErr = err
				break
			}
		}
		res, err := Run(ctx, cl, rc)
		if err == nil && res.KilledBroker >= 0 && cl.Real() && !rc.Restore && (i < n-1 || c.each()) {
			// The next run needs every broker back (and every kill of
			// --kill each is undone).
			if err = cl.Restart(ctx, res.KilledBroker); err == nil {
				err = cl.ElectPreferred(ctx)
			}
		}
		c.close(cl)
		if c.OnRun != nil {
			c.OnRun(i+1, n, res)
		}
		if res != nil {
			out.Runs = append(out.Runs, res)
			restored = append(restored, err == nil)
		}
		if err != nil {
			runErr = err
			break
		}
	}
	if runErr == nil && len(out.Runs) > 0 && (cfg.Restore || c.each()) && out.Runs[len(out.Runs)-1].KilledBroker >= 0 {
		// Kafka's promise holds while an in-sync replica survives: after
		// the last restore every broker must be back in every ISR.
		rep, ok, err := c.checkWhole(ctx, shared, cfg)
		if ok {
			out.ISR = &rep
		}
		if err != nil {
			runErr = err
			restored[len(restored)-1] = false
		}
	}
	if len(out.Runs) == 0 {
		return out, runErr
	}
	if c.each() {
		out.Kills = NewKillEach(out.Runs, restored)
	} else if len(out.Runs) > 1 {
		sum, err := Summarize(out.Runs)
		if err != nil {
			return out, err
		}
		out.Summary = sum
	}
	return out, runErr
}

// prepare fills in, from the first run's cluster, what the campaign lists
// once: the existing topics, and checks the workload's brokers.
func (c *Campaign) prepare(ctx context.Context, cl Cluster, cfg *Config) error {
	if cfg.Existing && len(cfg.Workload) == 0 {
		w, err := c.Existing(ctx, cl, *cfg)
		if err != nil {
			return err
		}
		cfg.Workload = w
		cfg.Rate = TotalRate(w)
	}
	if c.CheckBrokers && len(cfg.Workload) > 0 && !cfg.Existing {
		brokers, err := cl.Brokers(ctx)
		if err != nil {
			return err
		}
		return CheckWorkloadBrokers(cfg.Workload, brokers)
	}
	return nil
}

// runConfig is run i's experiment: its seed, the rotated order of a
// sequential run's partitioners, and the ring assignment over cl's brokers.
func (c *Campaign) runConfig(ctx context.Context, cl Cluster, cfg Config, i int) (Config, error) {
	rc := cfg
	rc.Seed = cfg.Seed + uint64(i)
	if rc.Sequential && len(cfg.Partitioners) > 1 {
		// Rotate the order each repetition: a later leg runs against
		// brokers holding more data and a producer process holding more
		// state, so a fixed order would favour the first partitioner.
		k := i % len(cfg.Partitioners)
		rc.Partitioners = append(slices.Clone(cfg.Partitioners[k:]), cfg.Partitioners[:k]...)
	}
	if rc.Assignment == nil && len(rc.Workload) == 0 {
		brokers, err := cl.Brokers(ctx)
		if err != nil {
			return rc, err
		}
		if rc.Assignment, err = c.ring(brokers); err != nil {
			return rc, err
		}
	}
	return rc, nil
}

// ring is the ring assignment of Partitions and ReplicationFactor over
// brokers.
func (c *Campaign) ring(brokers []int32) ([][]int32, error) {
	if c.ReplicationFactor > len(brokers) {
		return nil, errkind.Usagef(FieldReplicationFactor, "%d is more than the cluster's %d brokers", c.ReplicationFactor, len(brokers))
	}
	return RingAssignment(brokers, c.Partitions, c.ReplicationFactor), nil
}

// Complete fills in Config on cl before a plan is made of it (PlanRun):
// the existing topics listed (Existing), the workload's and the
// assignment's brokers checked against cl's, or the ring assignment built
// over them. Errors name the field.
func (c *Campaign) Complete(ctx context.Context, cl Cluster) error {
	cfg := &c.Config
	brokers, err := cl.Brokers(ctx)
	if err != nil {
		return err
	}
	if cfg.Existing && len(cfg.Workload) == 0 {
		if cfg.Workload, err = c.Existing(ctx, cl, *cfg); err != nil {
			return err
		}
		cfg.Rate = TotalRate(cfg.Workload)
	}
	if err := CheckWorkloadBrokers(cfg.Workload, brokers); err != nil {
		return err
	}
	for p, reps := range cfg.Assignment {
		for _, id := range reps {
			if !slices.Contains(brokers, id) {
				return errkind.Usagef("assignment", "partition %d is assigned to broker %d, which the cluster does not have (brokers %v)", p, id, brokers)
			}
		}
	}
	if cfg.Assignment == nil && len(cfg.Workload) == 0 {
		cfg.Assignment, err = c.ring(brokers)
	}
	return err
}

// soak reports whether runs repeat kills on a real cluster: each run waits
// for the previous one's broker to be back in every ISR.
func (c *Campaign) soak(cl Cluster) bool {
	kills := c.each() || (c.Repeat > 1 && c.Config.Restore && c.Config.Target.Kind != TargetNone)
	return kills && cl.Real()
}

// whole waits until every broker is back in every ISR and, for --kill
// each, leads its preferred partitions again.
func (c *Campaign) whole(ctx context.Context, cl Cluster, cfg Config) (ISRReport, error) {
	wait := c.ISRWait
	if wait <= 0 {
		wait = DefaultISRWait
	}
	rep, err := WaitFullISR(ctx, cl, cfg.Conn, cfg.Version, wait)
	if err != nil || !c.each() {
		return rep, err
	}
	return rep, WaitPreferredLeaders(ctx, cl, cfg.Conn, cfg.Version, wait)
}

// checkWhole waits, after the last run, until a real cluster is whole
// again; ok is false on a simulated cluster (nothing to check).
func (c *Campaign) checkWhole(ctx context.Context, shared Cluster, cfg Config) (ISRReport, bool, error) {
	cl := shared
	if cl == nil {
		var err error
		if cl, err = c.Open(ctx, &cfg); err != nil {
			return ISRReport{}, false, err
		}
		defer cl.Close()
	}
	if !cl.Real() {
		return ISRReport{}, false, nil
	}
	rep, err := c.whole(ctx, cl, cfg)
	return rep, err == nil, err
}

// close closes a cluster the campaign opened for one run.
func (c *Campaign) close(cl Cluster) {
	if !c.Shared {
		cl.Close()
	}
}

// TotalRate is the total of a workload's topic rates, what Config.Rate
// (and the result's rate_bytes_per_s) reports for a workload; 0 when any
// topic is written as fast as it can.
func TotalRate(ws []WorkloadTopic) int64 {
	var sum int64
	for _, w := range ws {
		if w.Rate <= 0 {
			return 0
		}
		sum += w.Rate
	}
	return sum
}

// CheckWorkloadBrokers refuses (errkind.Usage, field layout) a workload
// whose assignments name a broker the cluster does not have.
func CheckWorkloadBrokers(ws []WorkloadTopic, brokers []int32) error {
	for _, w := range ws {
		for p, reps := range w.Assignment {
			for _, id := range reps {
				if !slices.Contains(brokers, id) {
					return errkind.Usagef("layout", "%s/%d is assigned to broker %d, which the cluster does not have (brokers %v)", w.Name, p, id, brokers)
				}
			}
		}
	}
	return nil
}
