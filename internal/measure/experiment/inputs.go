package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/dist"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/units"
)

// ScratchPrefix starts the name of every topic Inputs creates.
const ScratchPrefix = "kplan-measure-"

// InputTopics are the scratch topics of one Inputs run: Tp's and Tc's
// (produce), l_r's (replication) and u's (election).
type InputTopics struct{ Produce, Replication, Election string }

// NewInputTopics names the scratch topics of a run started at now.
func NewInputTopics(now time.Time) InputTopics {
	stamp := now.UTC().Format("20060102-150405")
	return InputTopics{ScratchPrefix + stamp + "-tp", ScratchPrefix + stamp + "-lr", ScratchPrefix + stamp + "-u"}
}

// MaxBuffered and MaxBufferedBytes bound Tp's producer buffer (buffered
// plus unacknowledged) in records and bytes; ReplicationWarmup is the l_r
// pairs sent before counting. 4 MiB keeps four full batches (1 MiB each)
// queued behind those in flight, enough to keep one partition's pipeline
// full, while what is left at the deadline (aborted, not counted) stays
// well under a window's worth at any rate worth measuring: 10,000 records
// of 1 kB (10 MB) took longer than the run to acknowledge on a SASL_SSL
// lab.
const (
	MaxBuffered       = 10000
	MaxBufferedBytes  = 4 << 20
	ReplicationWarmup = 10
)

// Inputs is the action behind `kplan measure`: the sizing model's inputs
// measured on a live cluster in sequence, Tp (one producer as fast as it
// can), Tc (one consumer from the start of Tp's topic), l_r (acks=all
// minus acks=1, paired) and u (preferred elections, unless
// ElectionPartitions is 0), each on a scratch topic deleted at the end
// (also on error and Ctrl-C) unless Keep. It returns the plan without
// Hmax, the Kafka version and the cluster's label, which the caller knows.
type Inputs struct {
	// Measurer reaches the cluster; Info is what it said of it.
	Measurer *loadgen.Measurer
	Info     loadgen.ClusterInfo
	Topics   InputTopics
	// ReplicationFactor is the scratch topics' and the plan's r.
	ReplicationFactor int

	Acks       loadgen.Acks
	RecordSize int
	Duration   time.Duration
	Window     time.Duration
	Linger     time.Duration

	ReplicationSamples    int
	ReplicationInterval   time.Duration
	ReplicationRecordSize int

	// ElectionPartitions 0 measures no u; ElectionTime is then the plan's.
	ElectionPartitions int
	ElectionRounds     int
	ElectionTime       time.Duration

	// Requirements are the plan's; MaxBrokers 0 is the cluster's brokers
	// and ReplicationFactor is set from the field above.
	Requirements measure.Requirements

	// Date, Command, Host and Cores describe the run in the plan.
	Date    time.Time
	Command string
	Host    string
	Cores   int

	Keep bool

	// Workers, when above 0, measures Tp with that many kplan worker
	// processes (chaos.DistProduce), one producer each, instead of one
	// producer in this process: Conn and Version reach the cluster for
	// the run's control topics, RunID names the run ("" a new one),
	// JoinTimeout bounds the wait for the workers and OnRun gets the run's
	// id once the workers can join.
	Workers     int
	Conn        kafka.ConnOptions
	Version     string
	RunID       string
	JoinTimeout time.Duration
	OnRun       func(run string)
	// JoinCheck, if set, ends the wait for the workers when it returns an
	// error (chaos.DistProduce.JoinCheck).
	JoinCheck func(context.Context) error

	// Progress, when set, gets one line of progress at a time.
	Progress func(format string, a ...any)
}

func (in *Inputs) progress(format string, a ...any) {
	if in.Progress != nil {
		in.Progress(format, a...)
	}
}

// Run measures and returns the plan. A failed deletion of the scratch
// topics is returned with the plan.
func (in *Inputs) Run(ctx context.Context) (plan *measure.Plan, err error) {
	if !in.Keep {
		defer func() {
			if derr := in.deleteScratch(ctx); derr != nil && err == nil {
				err = derr
			}
		}()
	}
	plan, err = in.newPlan()
	if err != nil {
		return nil, err
	}
	in.progress("cluster %s: %d brokers, replication factor %d", in.Info.ClusterID, len(in.Info.Brokers), in.ReplicationFactor)
	if err := in.throughput(ctx, plan); err != nil {
		return nil, err
	}
	if plan.Replication, err = in.replication(ctx); err != nil {
		return nil, err
	}
	in.progress("l_r = %s", plan.Replication.Latency)
	if in.ElectionPartitions > 0 {
		if plan.Election, err = in.election(ctx); err != nil {
			return nil, err
		}
		in.progress("u = %s", plan.Election.PerPartition)
	}
	return plan, nil
}

// deleteScratch deletes the scratch topics on a context Ctrl-C does not
// cancel.
func (in *Inputs) deleteScratch(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	deleted, err := in.Measurer.DeleteScratch(cctx)
	if len(deleted) > 0 {
		in.progress("deleted %s", strings.Join(deleted, ", "))
	}
	if err != nil {
		in.progress("could not delete every scratch topic: %v (delete %s* by hand)", err, ScratchPrefix)
	}
	return err
}

// newPlan is the plan's settings and requirements, checked against the
// cluster.
func (in *Inputs) newPlan() (*measure.Plan, error) {
	rf := in.ReplicationFactor
	req := in.Requirements
	req.ReplicationFactor = int64(rf)
	if req.MaxBrokers == 0 {
		req.MaxBrokers = int64(len(in.Info.Brokers))
	}
	if req.MaxBrokers < int64(rf) {
		return nil, errkind.Usagef("max-brokers", "%d is fewer than the replication factor %d", req.MaxBrokers, rf)
	}
	return &measure.Plan{
		Date:    in.Date,
		Command: in.Command,
		Machine: measure.Machine{Host: in.Host, Cores: in.Cores, ClusterID: in.Info.ClusterID, Brokers: len(in.Info.Brokers)},
		Settings: measure.Settings{Acks: in.Acks.String(), RecordSize: in.RecordSize, Duration: in.Duration, Window: in.Window,
			Linger: in.Linger, MaxBuffered: MaxBuffered, MaxBufferedBytes: MaxBufferedBytes, ReplicationFactor: rf, ReplicationRecordSize: in.ReplicationRecordSize,
			ReplicationInterval: in.ReplicationInterval, ElectionRounds: in.ElectionRounds},
		Requirements: req,
		ElectionTime: in.ElectionTime,
	}, nil
}

// throughput measures Tp, then Tc on the same topic.
func (in *Inputs) throughput(ctx context.Context, plan *measure.Plan) error {
	m, topic := in.Measurer, in.Topics.Produce
	in.progress("Tp: creating %s", topic)
	if err := m.CreateScratch(ctx, topic, 1, in.ReplicationFactor, in.Info.Brokers); err != nil {
		return err
	}
	if in.Workers > 0 {
		if err := in.distThroughput(ctx, plan, topic); err != nil {
			return err
		}
	} else {
		in.progress("Tp: one producer, acks=%s, %d-byte records, for %s", in.Acks, in.RecordSize, in.Duration)
		pw, err := m.MeasureProduce(ctx, loadgen.ProduceSpec{Topic: topic, Acks: in.Acks, RecordSize: in.RecordSize,
			Duration: in.Duration, Window: in.Window, Linger: in.Linger, MaxBufferedRecords: MaxBuffered, MaxBufferedBytes: MaxBufferedBytes})
		if err != nil {
			return err
		}
		if plan.Produce, err = measure.ThroughputOf(pw.Bytes, pw.Window, in.Duration, pw.Records); err != nil {
			return fmt.Errorf("measuring Tp: %w", err)
		}
	}
	in.progress("Tp = %s", units.FormatRate(plan.Produce.BytesPerSec))

	in.progress("Tc: one consumer from the start, for %s", in.Duration)
	cw, err := m.MeasureConsume(ctx, loadgen.ConsumeSpec{Topic: topic, Duration: in.Duration, Window: in.Window})
	if err != nil {
		return err
	}
	if plan.Consume, err = measure.ThroughputOf(cw.Bytes, cw.Window, in.Duration, cw.Records); err != nil {
		return fmt.Errorf("measuring Tc: %w", err)
	}
	in.progress("Tc = %s", units.FormatRate(plan.Consume.BytesPerSec))
	return nil
}

// distThroughput measures Tp with in.Workers kplan workers, one producer
// each, their acknowledged bytes added up window by window.
func (in *Inputs) distThroughput(ctx context.Context, plan *measure.Plan, topic string) error {
	if in.Window < chaos.BucketWidth || in.Window%chaos.BucketWidth != 0 {
		return errkind.Usagef("window", "%s: with workers, want a multiple of %s (the workers report bytes per %s)", in.Window, chaos.BucketWidth, chaos.BucketWidth)
	}
	in.progress("Tp: %d workers, one producer each, acks=%s, %d-byte records, for %s", in.Workers, in.Acks, in.RecordSize, in.Duration)
	d := &chaos.DistProduce{
		Conn: in.Conn, Version: in.Version, RunID: in.RunID, Workers: in.Workers,
		Streams:    []dist.Stream{{Partitioner: "roundrobin", Topic: topic}},
		RecordSize: in.RecordSize, Acks: in.Acks, Linger: in.Linger, MaxBufferedRecords: MaxBuffered,
		Duration: in.Duration, JoinTimeout: in.JoinTimeout, OnRun: in.OnRun, JoinCheck: in.JoinCheck, Progress: in.Progress,
	}
	res, err := d.Run(ctx)
	if err != nil {
		return fmt.Errorf("measuring Tp with workers: %w", err)
	}
	if len(res.Missed) > 0 {
		var names []string
		for w, why := range res.Missed {
			names = append(names, fmt.Sprintf("worker %d: %s", w, why))
		}
		slices.Sort(names)
		return errkind.New(errkind.Runtime, "workers", "Tp of run %s is incomplete, not written: %s", res.Run, strings.Join(names, "; "))
	}
	windows, err := res.Windows(in.Window)
	if err != nil {
		return err
	}
	if plan.Produce, err = measure.ThroughputOf(windows, in.Window, in.Duration, res.Acked); err != nil {
		return fmt.Errorf("measuring Tp: %w", err)
	}
	plan.Settings.Workers, plan.Settings.WorkersRun, plan.Settings.MaxBufferedBytes = in.Workers, res.Run, 0
	return nil
}

// replication measures l_r.
func (in *Inputs) replication(ctx context.Context) (measure.Replication, error) {
	m, topic := in.Measurer, in.Topics.Replication
	in.progress("l_r: creating %s; %d pairs at acks=all and acks=1", topic, in.ReplicationSamples)
	if err := m.CreateScratch(ctx, topic, 1, in.ReplicationFactor, in.Info.Brokers); err != nil {
		return measure.Replication{}, err
	}
	pairs, err := m.MeasureReplication(ctx, loadgen.ReplicationSpec{Topic: topic, RecordSize: in.ReplicationRecordSize,
		Samples: in.ReplicationSamples, Interval: in.ReplicationInterval, Warmup: ReplicationWarmup})
	if err != nil {
		return measure.Replication{}, err
	}
	var all, leader []time.Duration
	for _, p := range pairs {
		all, leader = append(all, p.All), append(leader, p.Leader)
	}
	return measure.ReplicationOf(all, leader)
}

// election measures u.
func (in *Inputs) election(ctx context.Context) (*measure.Election, error) {
	m, topic := in.Measurer, in.Topics.Election
	in.progress("u: creating %s (%d partitions); %d rounds of preferred elections", topic, in.ElectionPartitions, in.ElectionRounds)
	if err := m.CreateScratch(ctx, topic, in.ElectionPartitions, in.ReplicationFactor, in.Info.Brokers); err != nil {
		return nil, err
	}
	rounds, err := m.MeasureElection(ctx, topic, in.ElectionPartitions, in.ElectionRounds)
	if err != nil {
		return nil, err
	}
	var writable, elect []time.Duration
	for _, r := range rounds {
		writable, elect = append(writable, r.Writable), append(elect, r.Elect)
	}
	e, err := measure.ElectionOf(writable, elect, in.ElectionPartitions)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// Planned is what a run will create and write, printed before a run that
// needs the operator's yes.
type Planned struct {
	Cluster string   `json:"cluster"`
	Topics  []string `json:"topics"`
	Actions []string `json:"actions"`
}

// Planned says what Run will create and write on the cluster named
// cluster: the scratch topics (Topics, ReplicationFactor) and each
// measurement's traffic.
func (in *Inputs) Planned(cluster string) Planned {
	topics, rf := in.Topics, in.ReplicationFactor
	p := Planned{Cluster: cluster, Topics: []string{topics.Produce, topics.Replication}}
	writers := "one producer"
	if in.Workers > 0 {
		writers = fmt.Sprintf("%d kplan workers (one producer each)", in.Workers)
	}
	p.Actions = []string{
		fmt.Sprintf("create %s (1 partition, replication factor %d); write to it for %s as fast as %s can (acks=%s, %d-byte records); read it for %s", topics.Produce, rf, in.Duration, writers, in.Acks, in.RecordSize, in.Duration),
		fmt.Sprintf("create %s (1 partition, replication factor %d); write %d pairs of %d-byte records at acks=all and acks=1", topics.Replication, rf, in.ReplicationSamples, in.ReplicationRecordSize),
	}
	if in.Workers > 0 {
		p.Actions = append(p.Actions, fmt.Sprintf("create the run's control and results topics (%s*, 1 partition each) for the workers, and delete them at the end", dist.TopicPrefix))
	}
	if in.ElectionPartitions > 0 {
		p.Topics = append(p.Topics, topics.Election)
		p.Actions = append(p.Actions, fmt.Sprintf("create %s (%d partitions, replication factor %d); %d times: reorder its replicas and elect the preferred leaders (leadership of these partitions moves; no broker stops)", topics.Election, in.ElectionPartitions, rf, in.ElectionRounds))
	}
	if in.Keep {
		p.Actions = append(p.Actions, "keep the topics (--keep)")
	} else {
		p.Actions = append(p.Actions, "delete the topics at the end, also on error and Ctrl-C")
	}
	return p
}
