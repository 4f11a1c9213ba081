package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// PlanSchema versions the JSON of a plan (--dry-run -o json).
const PlanSchema = "kplan.chaos-plan/v1"

// Plan is what a run on a cluster kplan does not run itself would do, printed by --dry-run and
// when --yes is missing.
type Plan struct {
	Schema  string `json:"schema"`
	Cluster string `json:"cluster"`
	Label   string `json:"label"`
	Killer  string `json:"killer"`
	// Target is --kill; Broker the broker it resolves to now (-1: none).
	Target string `json:"target"`
	Broker int32  `json:"broker"`
	// Host, Port and Rack are the broker's, as Kafka advertises them.
	Host string `json:"host,omitempty"`
	Port int32  `json:"port,omitempty"`
	Rack string `json:"rack,omitempty"`
	// Kill is the killer's plan.
	Kill *KillPlan `json:"kill,omitempty"`
	// Fault is --fault, FaultBroker the broker it resolves to now and
	// FaultPlan the faulter's plan (its NetworkChaos); absent without
	// --fault.
	Fault       string    `json:"fault,omitempty"`
	FaultBroker *int32    `json:"fault_broker,omitempty"`
	FaultPlan   *KillPlan `json:"fault_plan,omitempty"`
	// Topics are the experiment topics with their Assignment; Existing
	// those that exist already (reused, never deleted).
	Topics     []string `json:"topics"`
	Existing   []string `json:"existing_topics,omitempty"`
	Assignment string   `json:"assignment"`
	// DeleteTopics tells whether the topics kplan creates are deleted at
	// the end.
	DeleteTopics bool `json:"delete_topics"`
	// Elections are the partitions the broker leads and the leaders Kafka
	// would elect (audit's what-if on the live layout, with the
	// experiment topics as they will be created); Offline counts those
	// left with no leader.
	Elections []audit.Election `json:"elections"`
	Offline   int              `json:"offline"`
	// Refusal is why the pre-kill checks would refuse ("" when they pass).
	Refusal string `json:"refusal,omitempty"`
	DryRun  bool   `json:"dry_run"`
}

// Planner is what a plan reads of a cluster kplan does not run itself:
// Kafka's metadata and the killer's (or faulter's) platform, read only.
type Planner interface {
	Kind() string
	Label() string
	// Snapshot is the live layout; Layout one topic's assignment.
	Snapshot(ctx context.Context) (*topology.Cluster, error)
	Layout(ctx context.Context, topic string) ([][]int32, bool, error)
	// Broker is one broker as Kafka advertises it.
	Broker(ctx context.Context, id int32) (Broker, error)
	// PlanFault is the faulter's plan for a network fault on a broker.
	PlanFault(ctx context.Context, id int32, f Fault) (KillPlan, error)
	// MinInsync is min.insync.replicas of topics, and broker's default
	// for the topics not created yet.
	MinInsync(ctx context.Context, topics []string, broker int32) (map[string]int, int, error)
}

// PlanRun is the dry-run action: it reads Kafka (and the killer's
// platform) and says what a run of cfg on c would do, changing nothing.
type PlanRun struct {
	Cluster Planner
	Killer  Killer
	Config  Config
	// DeleteTopics: the topics kplan creates go at the end; DryRun: the
	// plan is all the command does.
	DeleteTopics, DryRun bool
}

// Run makes the plan. The error, if any, is the refusal or failure the run
// would meet; the plan is returned with it when there is one to show.
func (pr *PlanRun) Run(ctx context.Context) (*Plan, error) {
	c, k, cfg := pr.Cluster, pr.Killer, pr.Config
	p := &Plan{Schema: PlanSchema, Cluster: c.Kind(), Label: c.Label(), Killer: k.Name(), Target: cfg.Target.String(), Broker: -1,
		Assignment: FormatAssignment(cfg.Assignment), DeleteTopics: pr.DeleteTopics, DryRun: pr.DryRun,
		Elections: []audit.Election{}}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if len(cfg.Workload) > 0 {
		p.Assignment = workloadAssignment(cfg.Workload)
	}
	for _, t := range ExperimentTopics(cfg) {
		p.Topics = append(p.Topics, t.Name)
		have, ok, err := c.Layout(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		if t.Existing {
			if !ok {
				return p, errkind.Usagef("topics", "topic %s no longer exists", t.Name)
			}
			p.Existing = append(p.Existing, t.Name)
			continue
		}
		if ok {
			if !slices.EqualFunc(have, t.Assignment, slices.Equal) {
				return p, errkind.Usagef("topic", "topic %s exists with layout %s, not %s (choose another topic prefix or delete it)", t.Name, FormatAssignment(have), FormatAssignment(t.Assignment))
			}
			p.Existing = append(p.Existing, t.Name)
			continue
		}
		for part, reps := range t.Assignment {
			snap.Partitions = append(snap.Partitions, topology.Partition{Topic: t.Name, Partition: int32(part), Leader: reps[0],
				Replicas: slices.Clone(reps), ISR: slices.Clone(reps), SizeBytes: -1})
		}
	}
	snap.Normalize()
	if err := planFault(ctx, c, cfg, snap, p); err != nil {
		return p, err
	}
	victim, err := planVictim(cfg, snap)
	if err != nil || victim < 0 {
		return p, err
	}
	b, err := c.Broker(ctx, victim)
	if err != nil {
		return p, err
	}
	p.Broker, p.Host, p.Port, p.Rack = b.ID, b.Host, b.Port, b.Rack
	if w := audit.WhatIfLoss(snap, audit.ByLeaders, []int32{victim}); len(w) == 1 {
		p.Elections = append(p.Elections, w[0].Elections...)
		p.Offline = w[0].OfflineCount
	}
	kp, err := k.Plan(ctx, b)
	if err != nil {
		p.Refusal = err.Error()
		return p, err
	}
	p.Kill = &kp
	if !cfg.AllowUnavailable {
		parts, err := killStates(ctx, c, snap, victim)
		if err != nil {
			return p, err
		}
		if err := CheckKill(parts, victim); err != nil {
			p.Refusal = err.Error()
			return p, err
		}
	}
	return p, nil
}

// killStates are the partitions of snap as CheckKill reads them, with each
// topic's min.insync.replicas (the victim's default for the topics the
// experiment has yet to create).
func killStates(ctx context.Context, c Planner, snap *topology.Cluster, victim int32) ([]PartitionState, error) {
	var topics []string
	for _, t := range snap.Topics() {
		topics = append(topics, t.Name)
	}
	minISR, def, err := c.MinInsync(ctx, topics, victim)
	if err != nil {
		return nil, fmt.Errorf("checks before the kill: %w", err)
	}
	parts := make([]PartitionState, 0, len(snap.Partitions))
	for _, pt := range snap.Partitions {
		m, ok := minISR[pt.Topic]
		if !ok {
			m = def
		}
		parts = append(parts, PartitionState{Name: fmt.Sprintf("%s/%d", pt.Topic, pt.Partition), Replicas: pt.Replicas, ISR: pt.ISR, MinISR: m})
	}
	return parts, nil
}

// planFault adds the fault's plan to p: the broker it resolves to now and
// the faulter's manifest; a partition takes the kill's checks.
func planFault(ctx context.Context, c Planner, cfg Config, snap *topology.Cluster, p *Plan) error {
	f := cfg.Fault
	if f == nil {
		return nil
	}
	p.Fault = f.String()
	fcfg := cfg
	fcfg.Target = f.Target
	victim, err := planVictim(fcfg, snap)
	if err != nil || victim < 0 {
		return err
	}
	p.FaultBroker = &victim
	fp, err := c.PlanFault(ctx, victim, *f)
	if err != nil {
		p.Refusal = err.Error()
		return err
	}
	p.FaultPlan = &fp
	if f.Kind == FaultPartition && !cfg.AllowUnavailable {
		parts, err := killStates(ctx, c, snap, victim)
		if err != nil {
			return err
		}
		if err := CheckKill(parts, victim); err != nil {
			p.Refusal = err.Error()
			return err
		}
	}
	return nil
}

// ExperimentTopic is a topic an experiment writes: created with
// Assignment, or Existing (written as it is).
type ExperimentTopic struct {
	Name       string
	Assignment [][]int32
	Existing   bool
}

// ExperimentTopics lists the topics cfg writes, each once: one per
// partitioner for the one-topic experiment; for a workload, each workload
// topic per partitioner side by side, or once in a sequential run.
func ExperimentTopics(cfg Config) []ExperimentTopic {
	var out []ExperimentTopic
	seen := map[string]bool{}
	for _, name := range cfg.Partitioners {
		if len(cfg.Workload) == 0 {
			out = append(out, ExperimentTopic{Name: TopicFor(cfg.Topic, name), Assignment: cfg.Assignment})
			continue
		}
		for _, w := range cfg.Workload {
			t := WorkloadTopicName(cfg.Topic, name, w.Name, cfg.Sequential, cfg.Existing)
			if !seen[t] {
				seen[t] = true
				out = append(out, ExperimentTopic{Name: t, Assignment: w.Assignment, Existing: cfg.Existing})
			}
		}
	}
	return out
}

// workloadAssignment spells a workload's layout as "A=1,2;2,3 B=2,1"
// ("A=existing" for topics written as they are).
func workloadAssignment(ws []WorkloadTopic) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		a := "existing"
		if w.Assignment != nil {
			a = FormatAssignment(w.Assignment)
		}
		parts[i] = w.Name + "=" + a
	}
	return strings.Join(parts, " ")
}

// planVictim resolves --kill on the snapshot: the broker now, the leader of
// a partition now (an experiment topic's preferred leader), or the broker
// leading most partitions of the experiment topics as they will be
// created. -1 for none.
func planVictim(cfg Config, snap *topology.Cluster) (int32, error) {
	t := cfg.Target
	switch t.Kind {
	case TargetBroker:
		return t.Broker, nil
	case TargetLeaderOf:
		for _, pt := range snap.Partitions {
			if pt.Topic == t.Topic && pt.Partition == t.Partition {
				if pt.Leader < 0 {
					return -1, errkind.Refusedf("kill", "%s: the partition has no leader", t)
				}
				return pt.Leader, nil
			}
		}
		return -1, errkind.Usagef("kill", "%s: no such partition", t)
	case TargetBusiest:
		count := map[int32]int{}
		mine := map[string]bool{}
		for _, et := range ExperimentTopics(cfg) {
			mine[et.Name] = true
		}
		for _, pt := range snap.Partitions {
			if mine[pt.Topic] && pt.Leader >= 0 {
				count[pt.Leader]++
			}
		}
		best, bestN := int32(-1), 0
		for id, n := range count {
			if n > bestN || n == bestN && id < best {
				best, bestN = id, n
			}
		}
		return best, nil
	}
	return -1, nil
}
