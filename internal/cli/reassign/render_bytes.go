package reassign

import (
	"fmt"
	"strconv"

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
