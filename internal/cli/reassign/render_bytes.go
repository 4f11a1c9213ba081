package reassign

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/reassign"
	"github.com/kplan-dev/kplan/internal/report"
)

func sizeText(b int64) string { return bytesText(&b) }

func diskCells(s reassign.DiskSkew) string {
	return fmt.Sprintf("%s-%s (mean %s, max/mean %g, min/mean %g)", sizeText(s.Min), sizeText(s.Max), sizeText(int64(s.Mean)), s.MaxOverMean, s.MinOverMean)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// bytesSections are the disk side of a --balance bytes plan: the balance
// before and after beside the count plan's, the trade-off per budget and
// each broker's disk.
func bytesSections(b *reassign.BytesBalance) []report.Section {
	cordoned := "none"
	if len(b.Cordoned) > 0 {
		cordoned = ints(b.Cordoned) + " (receive no new replica)"
	}
	budget := "none"
	if b.MaxMoveBytes > 0 {
		budget = sizeText(b.MaxMoveBytes)
	}
	bound := sizeText(b.LowerBound)
	if b.LowerBound == 0 && b.BytesMoved > b.ForcedBytes {
		bound = "none (tiered topics copy less than they relieve)"
	}
	disk := report.Section{Title: "Disk bytes (--balance bytes)", Header: []string{"WHAT", "VALUE"}, Rows: [][]string{
		{"band", fmt.Sprintf("±%g%% of the mean (--tolerance %g)", b.Tolerance*100, b.Tolerance)},
		{"cordoned brokers", cordoned},
		{"budget (--max-move-bytes)", budget},
		{"bytes copied", fmt.Sprintf("%s (%s of them forced: drained brokers, rack rules, a new replication factor)", sizeText(b.BytesMoved), sizeText(b.ForcedBytes))},
		{"lower bound to reach the band (beyond the forced)", bound},
		{"disk per broker before", diskCells(b.Before)},
		{"disk per broker after", diskCells(b.After)},
		{"every broker within the band", yesNo(b.Within)},
	}}
	if r := b.Replicas; r != nil {
		disk.Rows = append(disk.Rows,
			[]string{"count plan (--balance replicas): copied", fmt.Sprintf("%s in %d replica moves", sizeText(r.BytesMoved), r.ReplicasMoved)},
			[]string{"count plan (--balance replicas): disk after", diskCells(r.After)},
			[]string{"count plan (--balance replicas): within the band", yesNo(r.Within)})
	}
	disk.Notes = []string{"a move costs what the new replica copies: size_bytes, or local_bytes for a tiered topic"}
	trade := report.Section{Title: "Trade-off: balance within a budget of bytes copied", Header: []string{"BUDGET", "COPIED", "REPLICAS MOVED", "MAX/MEAN", "MIN/MEAN", "WITHIN"}}
	for _, st := range b.TradeOff {
		trade.Rows = append(trade.Rows, []string{sizeText(st.Budget), sizeText(st.BytesMoved), strconv.Itoa(st.Moves),
			strconv.FormatFloat(st.MaxOverMean, 'g', -1, 64), strconv.FormatFloat(st.MinOverMean, 'g', -1, 64), yesNo(st.Within)})
	}
	trade.Notes = []string{"each row: the best placement within the budget among those the greedy placement passes through (the fullest broker first), the last row the plan; --max-move-bytes plans within a budget"}
	pb := report.Section{Title: "Disk per broker", Header: []string{"BROKER", "BEFORE", "AFTER", "AFTER/MEAN", ""}}
	for _, x := range b.PerBroker {
		mark := ""
		if x.Cordoned {
			mark = "cordoned"
		}
		ratio := 0.0
		if b.After.Mean > 0 {
			ratio = float64(x.After) / b.After.Mean
		}
		pb.Rows = append(pb.Rows, []string{strconv.Itoa(int(x.Broker)), sizeText(x.Before), sizeText(x.After), fmt.Sprintf("%.3f", ratio), mark})
	}
	return []report.Section{disk, trade, pb}
}

// dirsSections are the log dirs of a JBOD cluster: each broker's dirs
// before and after the plan, and the replicas that change dir on their
// broker.
func dirsSections(d *reassign.DirsBalance) []report.Section {
	unit := sizeText
	if d.Unit == "replicas" {
		unit = func(n int64) string { return strconv.FormatInt(n, 10) }
	}
	per := report.Section{Title: fmt.Sprintf("Log dirs per broker (%s, band ±%g%% of each broker's mean)", d.Unit, d.Tolerance*100),
		Header: []string{"BROKER", "DIR", "BEFORE", "AFTER", "AFTER/MEAN", ""}}
	for _, b := range d.Brokers {
		var total int64
		for _, x := range b.Dirs {
			total += x.After
		}
		mean := float64(total) / float64(len(b.Dirs))
		for _, x := range b.Dirs {
			ratio := "-"
			if mean > 0 {
				ratio = fmt.Sprintf("%.3f", float64(x.After)/mean)
			}
			var marks []string
			if x.Cordoned {
				marks = append(marks, "cordoned")
			}
			if b.Skipped != "" {
				marks = append(marks, "not planned: "+b.Skipped)
			} else if !b.Within {
				marks = append(marks, "outside the band")
			}
			per.Rows = append(per.Rows, []string{strconv.Itoa(int(b.Broker)), x.Dir, unit(x.Before), unit(x.After), ratio, strings.Join(marks, "; ")})
		}
	}
	bound := ""
	if d.Unit == "bytes" {
		bound = fmt.Sprintf("; lower bound %s", sizeText(d.IntraBound))
	}
	per.Notes = []string{fmt.Sprintf("%d new replicas given a dir, %d intra-broker moves (%s%s, disk to disk on the same broker, no network); every other replica: any (Kafka's choice); every broker's dirs within the band: %s",
		d.Placed, len(d.IntraMoves), sizeText(d.IntraBytes), bound, yesNo(d.Within))}
	out := []report.Section{per}
	if len(d.IntraMoves) > 0 {
		moves := report.Section{Title: "Intra-broker moves (log dir changes, no network)", Header: []string{"PARTITION", "BROKER", "FROM", "TO", "BYTES"}}
		for i, m := range d.IntraMoves {
			if i == reassign.MaxListed {
				moves.Notes = []string{fmt.Sprintf("%d more in -o json", len(d.IntraMoves)-i)}
				break
			}
			moves.Rows = append(moves.Rows, []string{fmt.Sprintf("%s-%d", m.Topic, m.Partition), strconv.Itoa(int(m.Broker)), m.From, m.To, sizeText(m.Bytes)})
		}
		out = append(out, moves)
	}
	return out
}
