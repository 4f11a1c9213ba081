package chaosreport

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/report"
)

// maxPlanElections bounds the elections the text plan lists.
const maxPlanElections = 20

// WritePlan prints the plan: JSON with -o json, else text.
func WritePlan(w io.Writer, f report.Format, p *chaos.Plan) error {
	if f == report.JSON {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var sb strings.Builder
	head := "plan"
	if p.DryRun {
		head = "plan (dry run: nothing is created, killed or written)"
	}
	fmt.Fprintf(&sb, "kplan chaos %s\n", head)
	fmt.Fprintf(&sb, "cluster:     %s\n", p.Label)
	fmt.Fprintf(&sb, "killer:      %s\n", p.Killer)
	writeKillPlan(&sb, p)
	writeFaultPlan(&sb, p)
	what := "created, deleted at the end"
	switch {
	case len(p.Topics) > 0 && len(p.Existing) == len(p.Topics):
		what = "existing: written as they are, kept"
	case !p.DeleteTopics:
		what = "created, kept (--keep-topics)"
	}
	fmt.Fprintf(&sb, "topics:      %s (assignment %s; %s)\n", strings.Join(p.Topics, ", "), p.Assignment, what)
	if len(p.Existing) > 0 && len(p.Existing) < len(p.Topics) {
		fmt.Fprintf(&sb, "             existing, reused and kept: %s\n", strings.Join(p.Existing, ", "))
	}
	writePlanElections(&sb, p)
	switch {
	case p.Refusal != "":
		fmt.Fprintf(&sb, "checks:      refused: %s\n", p.Refusal)
	case p.Broker >= 0:
		sb.WriteString("checks:      passed: the killer's target checks; no partition is under-replicated or would be left without an in-sync replica\n")
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeKillPlan prints the kill's part of a plan.
func writeKillPlan(sb *strings.Builder, p *chaos.Plan) {
	if p.Broker >= 0 {
		rack := ""
		if p.Rack != "" {
			rack = ", rack " + p.Rack
		}
		fmt.Fprintf(sb, "kill:        %s: broker %d, advertised as %s:%d%s\n", p.Target, p.Broker, p.Host, p.Port, rack)
	} else {
		fmt.Fprintf(sb, "kill:        %s\n", p.Target)
	}
	if p.Kill != nil {
		writeKillerPlan(sb, "", "      ", p.Kill)
	}
}

// writeKillerPlan prints what the killer will do: its target, its steps
// and its manifest, each heading starting with prefix ("fault " for a
// fault's) and the target's padded by pad.
func writeKillerPlan(sb *strings.Builder, prefix, pad string, kp *chaos.KillPlan) {
	fmt.Fprintf(sb, "%starget:%s%s\n", prefix, pad, kp.Target)
	for i, s := range kp.Steps {
		fmt.Fprintf(sb, "  %d. %s\n", i+1, s)
	}
	if kp.Manifest != "" {
		sb.WriteString(prefix + "manifest:\n")
		for _, l := range strings.Split(strings.TrimRight(kp.Manifest, "\n"), "\n") {
			sb.WriteString("  " + l + "\n")
		}
	}
}

// writePlanElections prints the leaders Kafka would elect after the kill.
func writePlanElections(sb *strings.Builder, p *chaos.Plan) {
	if p.Broker >= 0 {
		fmt.Fprintf(sb, "leaders:     broker %d leads %d partitions; Kafka would elect (audit what-if):\n", p.Broker, len(p.Elections))
		for i, e := range p.Elections {
			if i == maxPlanElections {
				fmt.Fprintf(sb, "  ... and %d more\n", len(p.Elections)-i)
				break
			}
			if e.NewLeader < 0 {
				fmt.Fprintf(sb, "  %s/%d -> none (offline)\n", e.Topic, e.Partition)
				continue
			}
			fmt.Fprintf(sb, "  %s/%d -> broker %d\n", e.Topic, e.Partition, e.NewLeader)
		}
		if p.Offline > 0 {
			fmt.Fprintf(sb, "  %d partitions would have no leader\n", p.Offline)
		}
	}
}

// writeFaultPlan prints the fault's part of a plan.
func writeFaultPlan(sb *strings.Builder, p *chaos.Plan) {
	if p.Fault == "" {
		return
	}
	if p.FaultBroker != nil {
		fmt.Fprintf(sb, "fault:       %s: broker %d\n", p.Fault, *p.FaultBroker)
	} else {
		fmt.Fprintf(sb, "fault:       %s\n", p.Fault)
	}
	if p.FaultPlan == nil {
		return
	}
	writeKillerPlan(sb, "fault ", " ", p.FaultPlan)
}
