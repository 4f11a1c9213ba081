package reassign

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/reassign"
	"github.com/kplan-dev/kplan/internal/report"
)

func ints(v []int32) string {
	if len(v) == 0 {
		return "-"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

func skewCells(s audit.Skew) string {
	return fmt.Sprintf("%d-%d (mean %g, max/mean %g)", s.Min, s.Max, s.Mean, s.MaxOverMean)
}

func bytesText(b *int64) string {
	if b == nil {
		return "unknown (sizes come from a live cluster)"
	}
	const unit = 1024
	v := float64(*b)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if v < unit || u == "TiB" {
			if u == "B" {
				return fmt.Sprintf("%d B", *b)
			}
			return fmt.Sprintf("%.1f %s", v, u)
		}
		v /= unit
	}
	return ""
}

// doc is the text and Markdown of `kplan reassign`: one section per part
// of the summary, the files written and the notes.
func doc(r result) report.Document {
	s := r.Summary
	d := report.Document{Title: fmt.Sprintf("kplan reassign: %d partitions, %d target brokers (drained: %s; added: %s)",
		s.Partitions, len(s.TargetBrokers), ints(s.DrainedBrokers), ints(s.AddedBrokers))}
	if len(s.CordonedBrokers) > 0 {
		d.Title = strings.TrimSuffix(d.Title, ")") + "; cordoned, no new replica: " + ints(s.CordonedBrokers) + ")"
	}
	d.Sections = append(d.Sections, planSection(s))
	if s.Bytes != nil {
		d.Sections = append(d.Sections, bytesSections(s.Bytes)...)
	}
	if s.Load != nil {
		d.Sections = append(d.Sections, loadSections(s.Load)...)
	}
	if s.Dirs != nil {
		d.Sections = append(d.Sections, dirsSections(s.Dirs)...)
	}
	d.Sections = append(d.Sections, balanceSection(s))
	if fo := failoverSection(s.Failover); fo != nil {
		d.Sections = append(d.Sections, *fo)
	}
	d.Sections = append(d.Sections, perBrokerSection(s))
	if s.RackBound != nil {
		d.Sections = append(d.Sections, rackSections(s)...)
	}
	if len(s.Cells) > 0 {
		d.Sections = append(d.Sections, cellsSection(s))
	}
	if len(s.UnevenTopics) > 0 {
		d.Sections = append(d.Sections, unevenTopicsSection(s))
	}
	if len(s.RemainingOverlaps) > 0 {
		d.Sections = append(d.Sections, remainingOverlapsSection(s))
	}
	if len(s.Waves) > 0 {
		d.Sections = append(d.Sections, wavesSection(s))
	}
	files := report.Section{Title: "Files"}
	if len(r.Files) == 0 {
		files.Notes = []string{"none written (give --out, --rollback, --election-out)"}
	} else {
		files.Notes = r.Files
	}
	d.Sections = append(d.Sections, files)
	d.Notes = s.Notes
	return d
}

// planSection is the plan's moves, bounds and limits.
func planSection(s reassign.Summary) report.Section {
	plan := report.Section{Title: "Plan", Header: []string{"WHAT", "VALUE"}, Rows: [][]string{
		{"replicas moved", strconv.Itoa(s.ReplicasMoved)},
	}}
	if s.Bytes == nil && s.Load == nil {
		// The bound counts replicas: a bytes plan has its own (Disk bytes).
		plan.Rows = append(plan.Rows, []string{"lower bound", boundText(s)}, []string{"gap (moves over bound)", gapText(s.Gap, s.MovesOverBound)})
	}
	if b := s.CountBalanceBound; b != nil && (len(s.Cells) > 0 || *b != s.LowerBound) {
		// Cells have a bound of their own; without them both are one.
		plan.Rows = append(plan.Rows, []string{"count-balance bound", countBoundText(s)})
	}
	plan.Rows = append(plan.Rows, [][]string{
		{"partitions changed", strconv.Itoa(s.ChangedPartitions)},
		{"leader-only changes", strconv.Itoa(s.LeaderOnlyChanges)},
		{"leader changes", strconv.Itoa(s.LeaderChanges)},
		{"preferred elections", strconv.Itoa(s.PreferredElections)},
		{"bytes moved", bytesText(s.BytesMoved)},
	}...)
	if s.Tolerance > 0 {
		plan.Rows = append(plan.Rows, []string{"tolerance", fmt.Sprintf("±%g%% of the mean (--tolerance %g)", s.Tolerance*100, s.Tolerance)})
	}
	if s.MovesLeft > 0 {
		plan.Rows = append(plan.Rows, []string{"left by --max-moves", fmt.Sprintf("%d moves in %d partitions", s.MovesLeft, s.PartitionsLeft)})
	}
	return plan
}

// balanceSection compares the balance before and after the plan.
func balanceSection(s reassign.Summary) report.Section {
	return report.Section{Title: "Balance", Header: []string{"", "BEFORE", "AFTER"}, Rows: [][]string{
		{"replicas per broker", skewCells(s.Before.Replicas), skewCells(s.After.Replicas)},
		{"leaders per broker", skewCells(s.Before.Leaders), skewCells(s.After.Leaders)},
		{"topics with leaders within one of the mean", fmt.Sprintf("%d of %d", s.Before.TopicsLeadersWithinOne, s.Before.Topics), fmt.Sprintf("%d of %d", s.After.TopicsLeadersWithinOne, s.After.Topics)},
		{"rack violations", strconv.Itoa(s.Before.RackViolations), strconv.Itoa(s.After.RackViolations)},
		{"max groups (by leaders)", strconv.Itoa(s.Before.MaxGroups), strconv.Itoa(s.After.MaxGroups)},
		{"overlapping group pairs", strconv.Itoa(s.Before.Overlaps), strconv.Itoa(s.After.Overlaps)},
	}}
}

// perBrokerSection lists each broker's replicas and leaders before and after.
func perBrokerSection(s reassign.Summary) report.Section {
	pb := report.Section{Title: "Per broker", Header: []string{"BROKER", "RACK", "STATUS", "REPLICAS", "LEADERS"}}
	for _, b := range s.PerBroker {
		pb.Rows = append(pb.Rows, []string{strconv.Itoa(int(b.Broker)), b.Rack, b.Status,
			fmt.Sprintf("%d -> %d", b.ReplicasBefore, b.ReplicasAfter), fmt.Sprintf("%d -> %d", b.LeadersBefore, b.LeadersAfter)})
	}
	return pb
}

// cellsSection lists the cells.
func cellsSection(s reassign.Summary) report.Section {
	cs := report.Section{Title: "Cells", Header: []string{"CELL", "BROKERS", "RACKS", "TOPICS", "REPLICAS"}}
	for _, c := range s.Cells {
		cs.Rows = append(cs.Rows, []string{strconv.Itoa(c.Cell), ints(c.Brokers), dash(strings.Join(c.Racks, ",")), strconv.Itoa(c.Topics), strconv.Itoa(c.Replicas)})
	}
	return cs
}

// unevenTopicsSection lists the topics whose leaders stay uneven.
func unevenTopicsSection(s reassign.Summary) report.Section {
	ut := report.Section{Title: "Topics whose leaders stay uneven", Header: []string{"TOPIC", "PARTITIONS", "BROKERS", "LEADERS PER BROKER"}}
	for _, t := range s.UnevenTopics {
		ut.Rows = append(ut.Rows, []string{t.Topic, strconv.Itoa(t.Partitions), strconv.Itoa(t.Brokers), fmt.Sprintf("%d-%d", t.MinLeaders, t.MaxLeaders)})
	}
	ut.Notes = []string{"a topic's leaders are even when every broker of its cell leads floor or ceil of partitions/brokers; a broker without a replica of the topic cannot lead it"}
	return ut
}

// remainingOverlapsSection lists the overlaps the plan leaves and why.
func remainingOverlapsSection(s reassign.Summary) report.Section {
	ov := report.Section{Title: fmt.Sprintf("Remaining overlaps (%d)", s.After.Overlaps), Header: []string{"GROUP", "GROUP", "SHARED BROKERS", "WHY"}}
	for _, o := range s.RemainingOverlaps {
		ov.Rows = append(ov.Rows, []string{strings.Join(o.Groups[0], ","), strings.Join(o.Groups[1], ","), ints(o.SharedBrokers), o.Reason})
	}
	if len(s.RemainingOverlaps) < s.After.Overlaps {
		ov.Notes = []string{fmt.Sprintf("the first %d are listed", len(s.RemainingOverlaps))}
	}
	return ov
}

// wavesSection lists the plan's waves.
func wavesSection(s reassign.Summary) report.Section {
	wv := report.Section{Title: "Waves", Header: []string{"WAVE", "PARTITIONS", "REPLICAS MOVED", "LEADER CHANGES", "MAX IN", "MAX OUT"}}
	for _, w := range s.Waves {
		wv.Rows = append(wv.Rows, []string{strconv.Itoa(w.Wave), strconv.Itoa(w.Partitions), strconv.Itoa(w.ReplicasMoved), strconv.Itoa(w.LeaderChanges), strconv.Itoa(w.MaxIn), strconv.Itoa(w.MaxOut)})
	}
	wv.Notes = []string{"max in/out: the most replicas one broker receives or gives up in the wave"}
	return wv
}

func gapText(gap int, ratio *float64) string {
	if ratio == nil {
		return strconv.Itoa(gap)
	}
	return fmt.Sprintf("%d (%gx)", gap, *ratio)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// boundText is the lower bound, saying what it counts against when that is
// not an even spread over all target brokers.
func boundText(s reassign.Summary) string {
	var against []string
	if len(s.Cells) > 0 {
		against = append(against, "per cell")
	}
	if s.RackBound != nil {
		against = append(against, "rack-aware targets, see Racks")
	}
	if len(against) == 0 {
		return strconv.Itoa(s.LowerBound)
	}
	return fmt.Sprintf("%d (%s)", s.LowerBound, strings.Join(against, "; "))
}

// countBoundText is the count-balance bound of a --fix-overlaps plan and
// the moves over it.
func countBoundText(s reassign.Summary) string {
	text := fmt.Sprintf("%d (the bound without --fix-overlaps", *s.CountBalanceBound)
	if s.MovesOverCountBalanceBound != nil {
		text += fmt.Sprintf("; moves %gx it", *s.MovesOverCountBalanceBound)
	}
	return text + ")"
}

// rackSections show why racks keep replicas per broker from being even:
// the racks that bind, the rack-aware targets, and the --brokers that would
// allow an even spread.
func rackSections(s reassign.Summary) []report.Section {
	rb := s.RackBound
	lim := report.Section{Title: "Racks limit balance", Header: []string{"RACK", "BROKERS", "CAN HOLD", "EVEN SPREAD GIVES IT"}}
	multiCell := len(s.Cells) > 0
	if multiCell {
		lim.Header = append([]string{"CELL"}, lim.Header...)
	}
	for _, l := range rb.Limits {
		row := []string{l.Rack, ints(l.Brokers), fmt.Sprintf("%d of %d replicas", l.Capacity, l.CellReplicas), strconv.Itoa(l.Even)}
		if multiCell {
			row = append([]string{strconv.Itoa(l.Cell)}, row...)
		}
		lim.Rows = append(lim.Rows, row)
	}
	lim.Notes = []string{"a rack holds at most one replica of a partition (with fewer racks than replicas, the fewest an even spread over the racks needs), so its brokers cannot reach an even share"}
	fixes := rackFixes(s)
	switch {
	case len(fixes) > 0:
		lim.Notes = append(lim.Notes, "an even spread needs "+strings.Join(fixes, ", or "))
	case multiCell:
		lim.Notes = append(lim.Notes, "an even spread needs racks of more even sizes in each cell, or another --cell-size")
	default:
		lim.Notes = append(lim.Notes, "no --brokers change of up to as many brokers as there are allows an even spread: the racks need more even sizes")
	}
	tg := report.Section{Title: "Rack-aware targets (the lower bound counts against these)", Header: []string{"BROKER", "RACK", "TARGET", "EVEN SPREAD"}}
	for _, t := range rb.Targets {
		tg.Rows = append(tg.Rows, []string{strconv.Itoa(int(t.Broker)), t.Rack, strconv.Itoa(t.Target), strconv.Itoa(t.Even)})
	}
	return []report.Section{lim, tg}
}

// rackFixes spells the rack bound's suggestions as --brokers lists.
func rackFixes(s reassign.Summary) []string {
	rb := s.RackBound
	var out []string
	if len(rb.NewRacks) > 0 {
		var items []string
		rest := slices.DeleteFunc(slices.Clone(s.TargetBrokers), func(id int32) bool { return slices.Contains(rb.NewRacks, id) })
		if len(rest) > 0 {
			items = append(items, idRanges(rest))
		}
		for j, id := range rb.NewRacks {
			items = append(items, fmt.Sprintf("%d:new-rack-%d", id, j+1))
		}
		where := "in a rack of its own"
		if len(rb.NewRacks) > 1 {
			where = "each in a rack of its own"
		}
		out = append(out, fmt.Sprintf("%s %s %s (--brokers %s)", noun(len(rb.NewRacks), "broker"), ints(rb.NewRacks), where, strings.Join(items, ",")))
	}
	if rb.AddBrokers > 0 && len(s.TargetBrokers) > 0 {
		items := []string{idRanges(s.TargetBrokers)}
		next := slices.Max(s.TargetBrokers)
		for _, b := range s.DrainedBrokers {
			next = max(next, b)
		}
		for j := range rb.AddBrokers {
			items = append(items, fmt.Sprintf("%d:new-rack-%d", next+1+int32(j), j+1))
		}
		where := "in a new rack"
		if rb.AddBrokers > 1 {
			where = "each in a new rack"
		}
		out = append(out, fmt.Sprintf("%d more %s %s (--brokers %s)", rb.AddBrokers, noun(rb.AddBrokers, "broker"), where, strings.Join(items, ",")))
	}
	return out
}

func noun(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// idRanges writes broker ids as --brokers does: FIRST-LAST for runs.
func idRanges(ids []int32) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		switch j {
		case i:
			parts = append(parts, strconv.Itoa(int(ids[i])))
		case i + 1:
			parts = append(parts, strconv.Itoa(int(ids[i])), strconv.Itoa(int(ids[j])))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// failoverSection shows the worst loss per domain before and after.
func failoverSection(fo *reassign.Failover) *report.Section {
	if fo == nil {
		return nil
	}
	sec := report.Section{Title: "Failover (worst loss; order spreads: " + fo.Domain + ")", Header: []string{"", "BEFORE", "AFTER"}}
	add := func(name string, c *reassign.FailoverChange) {
		if c == nil {
			return
		}
		sec.Rows = append(sec.Rows,
			[]string{name + " lost", lossText(c.Before), lossText(c.After)},
			[]string{"  busiest survivor", busiestText(c.Before), busiestText(c.After)},
			[]string{"  optimum (excess)", fmt.Sprintf("%d (+%d)", c.Before.Optimum, c.Before.Excess), fmt.Sprintf("%d (+%d)", c.After.Optimum, c.After.Excess)},
			[]string{"  reachable with these replica sets", strconv.Itoa(c.Before.Reachable), strconv.Itoa(c.After.Reachable)},
			[]string{"  worst topic excess", topicExcessText(c.Before), topicExcessText(c.After)},
		)
		if c.Before.Load != nil || c.After.Load != nil {
			by, unit := "load", rateText
			if fo.Rates != "" {
				by = "--rates"
				if !fo.RatesBytesPerSecond {
					unit = weightText
				}
			}
			sec.Rows = append(sec.Rows,
				[]string{name + " lost, by " + by, loadLossText(c.Before.Load), loadLossText(c.After.Load)},
				[]string{"  busiest survivor (bound)", loadBusiestText(c.Before.Load, unit), loadBusiestText(c.After.Load, unit)},
			)
		}
	}
	add("broker", fo.Broker)
	add("rack", fo.Rack)
	if fo.ExtraMoves != 0 {
		sec.Rows = append(sec.Rows, []string{"extra moves to place followers", "", strconv.Itoa(fo.ExtraMoves)})
	}
	if m := fo.MoreMoves; m != nil {
		text := fmt.Sprintf("%d more moves would reach the reachable optimum (--failover-moves auto)", *m)
		if *m < 0 {
			text = "no follower swap within the cap of --failover-moves auto reaches it"
		}
		sec.Rows = append(sec.Rows, []string{"broker loss optimum", "", text})
	}
	return &sec
}

func lossText(f reassign.FailoverFigure) string {
	if f.Rack != "" {
		return f.Rack
	}
	return ints(f.Lost)
}

func loadLossText(l *reassign.FailoverLoad) string {
	switch {
	case l == nil:
		return "-"
	case l.Rack != "":
		return l.Rack
	}
	return ints(l.Lost)
}

func loadBusiestText(l *reassign.FailoverLoad, unit func(float64) string) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%s on %d (%s, x%.2f)", unit(l.BusiestLoad), l.Busiest, unit(l.Bound), l.Ratio)
}

// weightText is a load in --rates' relative weights.
func weightText(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func busiestText(f reassign.FailoverFigure) string {
	return fmt.Sprintf("%d leaders on %d", f.BusiestLeaders, f.Busiest)
}

func topicExcessText(f reassign.FailoverFigure) string {
	if f.Topic == "" {
		return "+0"
	}
	return fmt.Sprintf("+%d (%s)", f.TopicExcess, f.Topic)
}
