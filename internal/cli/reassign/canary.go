package reassign

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/observereport"
	"github.com/kplan-dev/kplan/internal/stats"
	"github.com/kplan-dev/kplan/internal/units"
)

// This file is the guarded apply of `kplan reassign apply
// --latency-objective`: the flags, the canary (internal/loadgen) as the
// adaptive throttle's latency source, and what is said of them.

// canaryRecordSize is the size of the canary's records.
const canaryRecordSize = 1024

// guardFlags are the guarded apply's flags as typed.
type guardFlags struct {
	objective, canaryRate, minThrottle, maxThrottle string
	window, ramp                                    time.Duration
}

func addGuardFlags(fs *pflag.FlagSet, raw *guardFlags) {
	fs.StringVar(&raw.objective, "latency-objective", "", "guard the clients: run a canary and adapt the throttle to keep its produce p99 on every broker within this, e.g. p99=200ms (needs --throttle as the starting rate)")
	fs.StringVar(&raw.canaryRate, "canary-rate", "512KB/s", "the canary's rate in all, in records of 1 KiB (with --latency-objective)")
	fs.StringVar(&raw.minThrottle, "min-throttle", "1MB/s", "the adaptive throttle never goes below this (with --latency-objective)")
	fs.StringVar(&raw.maxThrottle, "max-throttle", "", "the adaptive throttle never goes above this (default: 4 times --throttle)")
	fs.DurationVar(&raw.window, "canary-window", apply.DefaultWindow, "the adaptive throttle judges the canary's p99 over windows this long")
	fs.DurationVar(&raw.ramp, "throttle-ramp", apply.DefaultRamp, "the adaptive throttle raises a rate (and reaches --throttle at the start, from --min-throttle) in steps over this long; keep it at the span brokers average their replication quota over (replication.quota.window.num x replication.quota.window.size.seconds, less one window); 0 raises at once")
}

// parseObjective reads --latency-objective: p99=DURATION, or a duration.
func parseObjective(s string) (time.Duration, error) {
	v := strings.TrimSpace(s)
	if q, d, ok := strings.Cut(v, "="); ok {
		if strings.TrimSpace(strings.ToLower(q)) != "p99" {
			return 0, fmt.Errorf("only p99 is guarded, got %q (want e.g. p99=200ms)", q)
		}
		v = strings.TrimSpace(d)
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want e.g. p99=200ms)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %v", d)
	}
	return d, nil
}

// completeGuard parses the guarded apply's flags into o.Rule and
// o.CanaryRate; without --latency-objective they must be left alone.
func (o *ApplyOptions) completeGuard(raw *guardFlags, set func(string) bool) error {
	if raw.objective == "" {
		for _, f := range []string{"canary-rate", "min-throttle", "max-throttle", "canary-window", "throttle-ramp"} {
			if set(f) {
				return errkind.Usagef("", "--%s: only with --latency-objective", f)
			}
		}
		return nil
	}
	if o.Mode != apply.ModeExecute {
		return errkind.Usagef("", "--latency-objective: only when executing, not with --verify or --cancel")
	}
	if o.NoWait {
		return errkind.Usagef("", "--latency-objective and --no-wait: the guard adapts the throttle while it waits; give one")
	}
	obj, err := parseObjective(raw.objective)
	if err != nil {
		return errkind.Usagef("", "--latency-objective: %w", err)
	}
	rate := func(flag, v string) (int64, error) {
		n, err := units.ParseRate(v)
		if err != nil {
			return 0, errkind.Usagef("", "--%s: %w", flag, err)
		}
		return n, nil
	}
	rule := apply.ThrottleRule{Objective: obj, Period: raw.window, Max: 4 * o.Throttle, Ramp: raw.ramp}
	if raw.window <= 0 {
		return errkind.Usagef("", "--canary-window: must be positive, got %v", raw.window)
	}
	switch {
	case raw.ramp < 0:
		return errkind.Usagef("", "--throttle-ramp: must be 0 or positive, got %v", raw.ramp)
	case raw.ramp == 0:
		rule.Ramp = -1 // raises at once
	}
	if rule.Min, err = rate("min-throttle", raw.minThrottle); err != nil {
		return err
	}
	if raw.maxThrottle != "" {
		if rule.Max, err = rate("max-throttle", raw.maxThrottle); err != nil {
			return err
		}
	}
	if o.CanaryRate, err = rate("canary-rate", raw.canaryRate); err != nil {
		return err
	}
	if o.CanaryRate < canaryRecordSize {
		return errkind.Usagef("", "--canary-rate: at least one record of %d bytes a second, got %d bytes/s", canaryRecordSize, o.CanaryRate)
	}
	if err := rule.Validate(o.Throttle); err != nil {
		return cmdutil.SpellFlag(err, nil)
	}
	o.Rule = &rule
	return nil
}

// canarySource is the adaptive throttle's latency source: a canary
// started on the brokers the throttle goes on.
type canarySource struct {
	conn    kafka.ConnOptions
	version string
	rate    int64
	canary  *loadgen.Canary
	topic   string
	// say reports the canary's start: its topic, leaders and rate.
	say func(topic string, brokers []int32, rate int64)
}

// Start implements apply.LatencySource.
func (s *canarySource) Start(ctx context.Context, brokers []int32) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	s.topic = "kplan-canary-" + hex.EncodeToString(b[:4])
	spec := loadgen.CanarySpec{
		Topic: s.topic, Leaders: brokers, Brokers: brokers, RF: 3,
		Rate: float64(s.rate), RecordSize: canaryRecordSize, Run: binary.BigEndian.Uint64(b[:]),
	}
	s.say(s.topic, brokers, s.rate)
	c, err := loadgen.StartCanary(ctx, s.conn, s.version, spec, nil)
	if err != nil {
		return err
	}
	s.canary = c
	return nil
}

// Window implements apply.LatencySource.
func (s *canarySource) Window() map[int32]stats.LatencySummary { return s.canary.Window() }

// stop stops the canary, if it started, reads back what it wrote and
// deletes its topic, on a context Ctrl-C does not cancel.
func (s *canarySource) stop(ctx context.Context, timeout time.Duration) (*loadgen.CanaryResult, error) {
	if s == nil || s.canary == nil {
		return nil, nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+30*time.Second)
	defer cancel()
	res, err := s.canary.Stop(sctx, 30*time.Second)
	s.canary = nil
	return &res, err
}

// throttleChange is a progress line for a change of the adaptive throttle.
func throttleChange(c apply.RateChange) string {
	return fmt.Sprintf("kplan reassign apply: throttle on broker %d: %s -> %s (%s)",
		c.Broker, observereport.Rate(float64(c.From)), observereport.Rate(float64(c.To)), c.Reason)
}

// canarySections are the text report's sections of a guarded apply: the
// canary's latency per broker with the windows within the objective and
// the final throttle, and the throttle's changes.
func canarySections(c *loadgen.CanaryResult, g *apply.GuardReport) []report.Section {
	if g == nil {
		return nil
	}
	within := map[int32][2]int{}
	for _, w := range g.Windows {
		if w.Counted {
			n := within[w.Broker]
			n[1]++
			if w.Within {
				n[0]++
			}
			within[w.Broker] = n
		}
	}
	var secs []report.Section
	if c != nil {
		secs = append(secs, canarySection(c, g, within))
	}
	if len(g.Changes) > 0 {
		var rows [][]string
		for _, ch := range g.Changes {
			rows = append(rows, []string{ch.At.Round(time.Second).String(), strconv.Itoa(int(ch.Broker)),
				observereport.Rate(float64(ch.From)), observereport.Rate(float64(ch.To)), ch.Reason})
		}
		secs = append(secs, report.Section{
			Title:  "Throttle changes",
			Header: []string{"AT", "BROKER", "FROM", "TO", "REASON"},
			Rows:   rows,
		})
	}
	return secs
}

// canarySection is the canary's latency per broker; within counts each
// broker's windows within the objective and counted.
func canarySection(c *loadgen.CanaryResult, g *apply.GuardReport, within map[int32][2]int) report.Section {
	ms := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	var rows [][]string
	for _, b := range c.Brokers {
		n := within[b.Broker]
		rows = append(rows, []string{strconv.Itoa(int(b.Broker)), strconv.FormatInt(b.Produce.Count, 10), ms(b.Produce.P50), ms(b.Produce.P99),
			ms(b.EndToEnd.P99), fmt.Sprintf("%d of %d", n[0], n[1]), observereport.Rate(float64(g.Final[b.Broker]))})
	}
	return report.Section{
		Title:  fmt.Sprintf("Canary (objective p99 %v, topic %s)", g.Objective, c.Topic),
		Header: []string{"BROKER", "ACKED", "PRODUCE P50 MS", "PRODUCE P99 MS", "END-TO-END P99 MS", "WINDOWS WITHIN", "FINAL THROTTLE"},
		Rows:   rows,
		Notes: []string{
			fmt.Sprintf("%d records sent, %d acknowledged, %d failed, %d read back, %d lost, %d duplicates; p99 within the objective in %.0f%% of %s windows",
				c.Sent, c.Acked, c.Failed, c.Read, c.Lost, c.Duplicates, 100*g.WithinShare(), g.Period),
		},
	}
}

// sayCanary reports the canary's start on stderr.
func (o *ApplyOptions) sayCanary(topic string, brokers []int32, rate int64) {
	if o.Progress == progressJSON {
		c := &loadgen.CanaryResult{Topic: topic}
		for i, b := range brokers {
			c.Brokers = append(c.Brokers, loadgen.CanaryBroker{Broker: b, Partition: int32(i)})
		}
		o.canaryEvent("canary-started", c)
		return
	}
	fmt.Fprintf(o.IO.ErrOut, "kplan reassign apply: canary: topic %s, one partition led by each of brokers %s (replication factor %d), %s in records of 1 KiB, acks=all, idempotent\n",
		topic, joinIDs(brokers), min(3, len(brokers)), observereport.Rate(float64(rate)))
}

// canaryStopped reports the canary's end on stderr.
func (o *ApplyOptions) canaryStopped(c *loadgen.CanaryResult) {
	if o.Progress == progressJSON {
		o.canaryEvent("canary-stopped", c)
		return
	}
	deleted := "deleted"
	if !c.Deleted {
		deleted = "NOT deleted: delete it with kafka-topics --delete --topic " + c.Topic
	}
	fmt.Fprintf(o.IO.ErrOut, "kplan reassign apply: canary stopped: %d records acknowledged, %d read back, %d lost; topic %s %s\n",
		c.Acked, c.Read, c.Lost, c.Topic, deleted)
}
