package reassign

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/audit"
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

func doc(r result) report.Document {
	s := r.Summary
	d := report.Document{Title: fmt.Sprintf("kplan reassign: %d partitions, %d target brokers (drained: %s; added: %s)",
		s.Partitions, len(s.TargetBrokers), ints(s.DrainedBrokers), ints(s.AddedBrokers))}
	plan := report.Section{Title: "Plan", Header: []string{"WHAT", "VALUE"}, Rows: [][]string{
		{"replicas moved", strconv.Itoa(s.ReplicasMoved)},
		{"lower bound", strconv.Itoa(s.LowerBound)},
		{"gap (moves over bound)", gapText(s.Gap, s.MovesOverBound)},
		{"partitions changed", strconv.Itoa(s.ChangedPartitions)},
		{"leader-only changes", strconv.Itoa(s.LeaderOnlyChanges)},
		{"leader changes", strconv.Itoa(s.LeaderChanges)},
		{"preferred elections", strconv.Itoa(s.PreferredElections)},
		{"bytes moved", bytesText(s.BytesMoved)},
	}}
	d.Sections = append(d.Sections, plan)
	bal := report.Section{Title: "Balance", Header: []string{"", "BEFORE", "AFTER"}, Rows: [][]string{
		{"replicas per broker", skewCells(s.Before.Replicas), skewCells(s.After.Replicas)},
		{"leaders per broker", skewCells(s.Before.Leaders), skewCells(s.After.Leaders)},
		{"topics with leaders within one of the mean", fmt.Sprintf("%d of %d", s.Before.TopicsLeadersWithinOne, s.Before.Topics), fmt.Sprintf("%d of %d", s.After.TopicsLeadersWithinOne, s.After.Topics)},
		{"rack violations", strconv.Itoa(s.Before.RackViolations), strconv.Itoa(s.After.RackViolations)},
		{"max groups (by leaders)", strconv.Itoa(s.Before.MaxGroups), strconv.Itoa(s.After.MaxGroups)},
		{"overlapping group pairs", overlapCount(s.Before.Overlaps, s.Before.OverlapsTruncated), overlapCount(s.After.Overlaps, s.After.OverlapsTruncated)},
	}}
	d.Sections = append(d.Sections, bal)
	pb := report.Section{Title: "Per broker", Header: []string{"BROKER", "RACK", "STATUS", "REPLICAS", "LEADERS"}}
	for _, b := range s.PerBroker {
		pb.Rows = append(pb.Rows, []string{strconv.Itoa(int(b.Broker)), b.Rack, b.Status,
			fmt.Sprintf("%d -> %d", b.ReplicasBefore, b.ReplicasAfter), fmt.Sprintf("%d -> %d", b.LeadersBefore, b.LeadersAfter)})
	}
	d.Sections = append(d.Sections, pb)
	if len(s.UnevenTopics) > 0 {
		ut := report.Section{Title: "Topics whose leaders stay uneven", Header: []string{"TOPIC", "PARTITIONS", "BROKERS", "LEADERS PER BROKER"}}
		for _, t := range s.UnevenTopics {
			ut.Rows = append(ut.Rows, []string{t.Topic, strconv.Itoa(t.Partitions), strconv.Itoa(t.Brokers), fmt.Sprintf("%d-%d", t.MinLeaders, t.MaxLeaders)})
		}
		ut.Notes = []string{"a topic's leaders are even when every broker of its cell leads floor or ceil of partitions/brokers; a broker without a replica of the topic cannot lead it"}
		d.Sections = append(d.Sections, ut)
	}
	if len(s.RemainingOverlaps) > 0 {
		ov := report.Section{Title: fmt.Sprintf("Remaining overlaps (%s)", overlapCount(s.After.Overlaps, s.After.OverlapsTruncated)), Header: []string{"GROUP", "GROUP", "SHARED BROKERS", "WHY"}}
		for _, o := range s.RemainingOverlaps {
			ov.Rows = append(ov.Rows, []string{strings.Join(o.Groups[0], ","), strings.Join(o.Groups[1], ","), ints(o.SharedBrokers), o.Reason})
		}
		if len(s.RemainingOverlaps) < s.After.Overlaps {
			ov.Notes = []string{fmt.Sprintf("the first %d are listed", len(s.RemainingOverlaps))}
		}
		d.Sections = append(d.Sections, ov)
	}
	if len(s.Waves) > 0 {
		wv := report.Section{Title: "Waves", Header: []string{"WAVE", "PARTITIONS", "REPLICAS MOVED", "LEADER CHANGES", "MAX IN", "MAX OUT"}}
		for _, w := range s.Waves {
			wv.Rows = append(wv.Rows, []string{strconv.Itoa(w.Wave), strconv.Itoa(w.Partitions), strconv.Itoa(w.ReplicasMoved), strconv.Itoa(w.LeaderChanges), strconv.Itoa(w.MaxIn), strconv.Itoa(w.MaxOut)})
		}
		wv.Notes = []string{"max in/out: the most replicas one broker receives or gives up in the wave"}
		d.Sections = append(d.Sections, wv)
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

func overlapCount(n int, truncated bool) string {
	if truncated {
		return fmt.Sprintf("at least %d", n)
	}
	return strconv.Itoa(n)
}

func gapText(gap int, ratio *float64) string {
	if ratio == nil {
		return strconv.Itoa(gap)
	}
	return fmt.Sprintf("%d (%gx)", gap, *ratio)
}
