package reassign

import (
	"fmt"
	"strconv"

	"github.com/kplan-dev/kplan/internal/reassign"
	"github.com/kplan-dev/kplan/internal/report"
)

// rateText prints bytes/s in binary units.
func rateText(v float64) string { return sizeText(int64(v)) + "/s" }

func rateCells(s reassign.RateSkew, unit func(float64) string) string {
	return fmt.Sprintf("%s-%s (mean %s, max/mean %g, min/mean %g)", unit(s.Min), unit(s.Max), unit(s.Mean), s.MaxOverMean, s.MinOverMean)
}

func diskText(v float64) string { return sizeText(int64(v)) }

// loadSections are the network side of a --balance load plan: each
// objective before and after beside the count plan's, and each broker's
// loads.
func loadSections(l *reassign.LoadBalance) []report.Section {
	cordoned := "none"
	if len(l.Cordoned) > 0 {
		cordoned = ints(l.Cordoned) + " (receive no new replica)"
	}
	head := report.Section{Title: "Load (--balance load)", Header: []string{"WHAT", "VALUE"}, Rows: [][]string{
		{"band", fmt.Sprintf("±%g%% of each mean (--tolerance %g)", l.Tolerance*100, l.Tolerance)},
		{"cordoned brokers", cordoned},
		{"bytes copied", fmt.Sprintf("%s (%s of them forced: drained brokers, rack rules, a new replication factor)", sizeText(l.BytesMoved), sizeText(l.ForcedBytes))},
		{"every broker within the band (in, out, leader bytes)", yesNo(l.Within)},
	}}
	head.Rows = append(head.Rows, loadBudgetRows(l)...)
	if l.WithoutLoad > 0 {
		head.Rows = append(head.Rows, []string{"partitions without an observed load (idle)", strconv.Itoa(l.WithoutLoad)})
	}
	head.Notes = []string{"bytes in: P per replica held; bytes out: C + (RF-1)·P per partition led; leader bytes: P per partition led (P produce, C consumer bytes/s observed)",
		"a move costs what the new replica copies: size_bytes, or local_bytes for a tiered topic; leaderships move by reordering, copying nothing"}
	bal := report.Section{Title: "Load per broker: before, after, and the count plan (--balance replicas) on the same input", Header: []string{"", "BEFORE", "AFTER", "WITHIN", "COUNT PLAN"}}
	r := l.Replicas
	count := func(f func(*reassign.PlanLoad) string) string {
		if r == nil {
			return "-"
		}
		return f(r)
	}
	bal.Rows = [][]string{
		{"bytes in", rateCells(l.In.Before, rateText), rateCells(l.In.After, rateText), yesNo(l.In.Within), count(func(r *reassign.PlanLoad) string { return rateCells(r.In, rateText) })},
		{"bytes out", rateCells(l.Out.Before, rateText), rateCells(l.Out.After, rateText), yesNo(l.Out.Within), count(func(r *reassign.PlanLoad) string { return rateCells(r.Out, rateText) })},
		{"leader bytes", rateCells(l.Leaders.Before, rateText), rateCells(l.Leaders.After, rateText), yesNo(l.Leaders.Within), count(func(r *reassign.PlanLoad) string { return rateCells(r.Leaders, rateText) })},
		{"disk (not balanced)", rateCells(l.Disk.Before, diskText), rateCells(l.Disk.After, diskText), "-", count(func(r *reassign.PlanLoad) string { return rateCells(r.Disk, diskText) })},
		{"bytes copied", "-", sizeText(l.BytesMoved), "-", count(func(r *reassign.PlanLoad) string {
			return fmt.Sprintf("%s in %d replica moves (within the band: %s)", sizeText(r.BytesMoved), r.ReplicasMoved, yesNo(r.Within))
		})},
	}
	pb := report.Section{Title: "Traffic per broker", Header: []string{"BROKER", "IN BEFORE", "IN AFTER", "OUT BEFORE", "OUT AFTER", "LEADER BEFORE", "LEADER AFTER", "DISK BEFORE", "DISK AFTER", ""}}
	for _, x := range l.PerBroker {
		mark := ""
		if x.Cordoned {
			mark = "cordoned"
		}
		pb.Rows = append(pb.Rows, []string{strconv.Itoa(int(x.Broker)), rateText(x.InBefore), rateText(x.InAfter), rateText(x.OutBefore), rateText(x.OutAfter),
			rateText(x.LeadersBefore), rateText(x.LeadersAfter), sizeText(x.DiskBefore), sizeText(x.DiskAfter), mark})
	}
	return []report.Section{head, bal, pb}
}

// loadBudgetRows show the budget of bytes copied and, under one, what the
// same plan without it copies and reaches: what the budget left undone.
func loadBudgetRows(l *reassign.LoadBalance) [][]string {
	if l.MaxMoveBytes <= 0 {
		return nil
	}
	rows := [][]string{{"budget (--max-move-bytes)", sizeText(l.MaxMoveBytes)}}
	if u := l.WithoutBudget; u != nil {
		rows = append(rows, []string{"without the budget", fmt.Sprintf("%s copied in %d replica moves, within the band: %s", sizeText(u.BytesMoved), u.ReplicasMoved, yesNo(u.Within))})
	}
	return rows
}
