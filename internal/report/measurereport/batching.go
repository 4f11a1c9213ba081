package measurereport

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/report"
)

// Files --report writes.
const (
	BatchReportJSON     = "result.json"
	BatchReportMarkdown = "report.md"
	BatchHeatmap        = "heatmap.png"
)

// BatchDocument is the study for people: the cells, then the two choices
// side by side.
func BatchDocument(s *measure.BatchStudy) report.Document {
	rate := s.Rate
	if s.RatePerSecond > 0 {
		rate = fmt.Sprintf("%s (%.0f records/s)", s.Rate, s.RatePerSecond)
	}
	doc := report.Document{
		Title: fmt.Sprintf("Batching study on %s: %d B records at %s, acks %s, objective %s, %s per cell",
			s.Cluster, s.RecordSize, rate, s.Acks, s.Objective, s.CellDuration),
	}
	cells := batchCellsSection(s)
	doc.Sections = append(doc.Sections, cells,
		batchPivot(s, "Loss rate by linger (rows) and batch size (columns)", func(c measure.BatchCellResult) string { return batchPct(c.LossRate) }),
		batchPivot(s, "p99 end-to-end latency (ms) by linger and batch size", func(c measure.BatchCellResult) string { return batchMS(c.Latency.P99) }),
		batchPivot(s, "Timely throughput (records/s) by linger and batch size", func(c measure.BatchCellResult) string { return fmt.Sprintf("%.0f", c.Timely) }))
	choice := batchChoiceSection(s)
	doc.Sections = append(doc.Sections, choice)
	doc.Notes = append(doc.Notes, fmt.Sprintf("topic %s: %d partition(s), replication factor %d", s.Topic, s.Partitions, s.ReplicationFactor))
	doc.Notes = append(doc.Notes, s.Producer...)
	if !s.Complete {
		doc.Notes = append(doc.Notes, fmt.Sprintf("interrupted: %d cells measured", len(s.Cells)))
	}
	return doc
}

// batchCellsSection is every cell's figures, with the two picks marked.
func batchCellsSection(s *measure.BatchStudy) report.Section {
	pick := map[int]string{}
	if s.MeanChoice != nil {
		pick[s.MeanChoice.Cell] = "mean"
	}
	if s.Recommended != nil {
		if pick[s.Recommended.Cell] != "" {
			pick[s.Recommended.Cell] = "timely+mean"
		} else {
			pick[s.Recommended.Cell] = "timely"
		}
	}
	cells := report.Section{
		Title: "Cells (end-to-end latency in ms: consumer receipt minus Produce call)",
		Header: []string{"linger", "batch", "batch.size", "rec/batch", "sent", "lost", "loss",
			"p50", "p99", "max", "mean", "violation", "throughput rec/s", "timely rec/s", "pick"},
	}
	for i, c := range s.Cells {
		cells.Rows = append(cells.Rows, []string{
			c.Linger, batchSizeLabel(c.BatchSize), fmt.Sprint(c.BatchBytes), batchPerBatch(c.RecordsPerBatch),
			fmt.Sprint(c.Sent), fmt.Sprint(c.Lost), batchPct(c.LossRate),
			batchMS(c.Latency.P50), batchMS(c.Latency.P99), batchMS(c.Latency.Max), batchMS(c.Latency.Mean),
			batchPct(c.ViolationRate), fmt.Sprintf("%.0f", c.Throughput), fmt.Sprintf("%.0f", c.Timely), pick[i],
		})
	}
	cells.Notes = []string{
		"loss = records the consumer never read (by sequence number) / records sent; violation = received records later than the objective / received",
		"throughput = records sent / cell duration; timely = throughput x (1 - violation) x (1 - loss)",
		"rec/batch = mean records per batch the brokers acknowledged (franz-go's produce hook; - with acks 0)",
	}
	return cells
}

// batchChoiceSection sets the recommendation beside the mean-latency pick.
func batchChoiceSection(s *measure.BatchStudy) report.Section {
	choice := report.Section{
		Title:  "Recommendation: timely throughput, and what the mean latency would pick",
		Header: []string{"rule", "linger", "batch", "p50", "p99", "max", "mean", "violation", "loss", "timely rec/s"},
	}
	for _, ch := range []struct {
		name string
		c    *measure.BatchChoice
	}{{"timely throughput (recommended)", s.Recommended}, {"mean latency within objective", s.MeanChoice}} {
		if ch.c == nil {
			choice.Rows = append(choice.Rows, []string{ch.name, "-", "-", "-", "-", "-", "-", "-", "-", "none qualifies"})
			continue
		}
		c := s.Cells[ch.c.Cell]
		choice.Rows = append(choice.Rows, []string{ch.name, c.Linger, batchSizeLabel(c.BatchSize),
			batchMS(c.Latency.P50), batchMS(c.Latency.P99), batchMS(c.Latency.Max), batchMS(c.Latency.Mean),
			batchPct(c.ViolationRate), batchPct(c.LossRate), fmt.Sprintf("%.0f", c.Timely)})
	}
	choice.Notes = append(choice.Notes, "recommended: "+measure.BatchRuleTimely, "mean latency: "+measure.BatchRuleMean)
	if s.Recommended != nil && s.MeanChoice != nil && s.Recommended.Cell != s.MeanChoice.Cell {
		r, m := s.Cells[s.Recommended.Cell], s.Cells[s.MeanChoice.Cell]
		choice.Notes = append(choice.Notes, fmt.Sprintf("the mean-latency pick delivers %.0f timely records/s fewer (%.1f%%): its mean %.1f ms meets the objective while %s of its records do not",
			r.Timely-m.Timely, 100*batchRel(r.Timely-m.Timely, r.Timely), m.Latency.Mean, batchPct(m.ViolationRate)))
	}
	return choice
}

// batchPivot lays one figure of every cell out as lingers (rows) by batch
// sizes (columns), in the order given; "-" where a cell was not measured.
func batchPivot(s *measure.BatchStudy, title string, fig func(measure.BatchCellResult) string) report.Section {
	g := newBatchGrid(s)
	sec := report.Section{Title: title, Header: []string{"linger"}}
	for _, b := range g.sizes {
		sec.Header = append(sec.Header, batchSizeLabel(b))
	}
	at := map[[2]string]string{}
	for _, c := range s.Cells {
		at[[2]string{c.Linger, c.BatchSize.String()}] = fig(c)
	}
	for _, l := range g.lingers {
		row := []string{l}
		for _, b := range g.sizes {
			v, ok := at[[2]string{l, b.String()}]
			if !ok {
				v = "-"
			}
			row = append(row, v)
		}
		sec.Rows = append(sec.Rows, row)
	}
	return sec
}

func batchRel(d, of float64) float64 {
	if of == 0 {
		return 0
	}
	return d / of
}

func batchSizeLabel(b measure.BatchSize) string {
	if b.Records > 0 {
		return fmt.Sprintf("%d rec", b.Records)
	}
	return b.String()
}

func batchPerBatch(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", x)
}

func batchMS(x float64) string { return fmt.Sprintf("%.1f", x) }

func batchPct(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

// WriteBatchReport writes result.json, report.md and heatmap.png into dir,
// each atomically.
func WriteBatchReport(dir string, s *measure.BatchStudy) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var js, md bytes.Buffer
	if err := report.WriteJSON(&js, s); err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, BatchReportJSON), js.Bytes()); err != nil {
		return err
	}
	if len(s.Cells) > 0 {
		if err := writeBatchHeatmap(filepath.Join(dir, BatchHeatmap), s); err != nil {
			return err
		}
	}
	doc := BatchDocument(s)
	if len(s.Cells) > 0 {
		doc.Notes = append(doc.Notes, "![timely throughput by linger and batch size]("+BatchHeatmap+")")
	}
	if err := report.WriteMarkdown(&md, doc); err != nil {
		return err
	}
	return report.WriteFileAtomic(filepath.Join(dir, BatchReportMarkdown), md.Bytes())
}

// WriteBatchProperties writes the study's recommended linger.ms,
// batch.size and acks into the producer properties file at path (made
// when missing; other lines kept), atomically, with a comment saying what
// was measured.
func WriteBatchProperties(path string, s *measure.BatchStudy) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	props, err := measure.BatchProperties(string(old), s)
	if err != nil {
		return err
	}
	return report.WriteFileAtomic(path, []byte(props))
}
