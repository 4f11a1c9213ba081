package measure

import (
	"fmt"
	"strconv"
	"strings"
)

// batchPropsMarker starts every comment line --apply-to writes, so that a
// later run replaces them instead of piling up.
const batchPropsMarker = "# kplan measure batching:"

// BatchProperties returns existing (a Kafka producer properties file, ""
// for a new one) with linger.ms, batch.size and acks set to the study's
// recommended cell, and a comment above saying what was measured. Other
// lines are kept in place; earlier kplan comments and repeated keys are
// dropped; keys missing from existing are appended. It is an error to
// call it on a study without a recommendation.
func BatchProperties(existing string, s *BatchStudy) (string, error) {
	if s.Recommended == nil || s.Recommended.Cell < 0 || s.Recommended.Cell >= len(s.Cells) {
		return "", fmt.Errorf("no recommended cell: no cell delivered a record")
	}
	c := s.Cells[s.Recommended.Cell]
	set := map[string]string{
		"linger.ms":  strconv.FormatInt(c.LingerMS, 10),
		"batch.size": strconv.Itoa(int(c.BatchBytes)),
		"acks":       s.Acks,
	}
	order := []string{"linger.ms", "batch.size", "acks"}
	var b strings.Builder
	for _, l := range batchPropsComment(s, c) {
		b.WriteString(batchPropsMarker + " " + l + "\n")
	}
	done := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSuffix(existing, "\n"), "\n") {
		if existing == "" {
			break
		}
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, batchPropsMarker) {
			continue
		}
		if k, ok := batchPropsKey(trim); ok {
			if v, ours := set[k]; ours {
				if !done[k] {
					b.WriteString(k + "=" + v + "\n")
					done[k] = true
				}
				continue
			}
		}
		b.WriteString(line + "\n")
	}
	for _, k := range order {
		if !done[k] {
			b.WriteString(k + "=" + set[k] + "\n")
		}
	}
	return b.String(), nil
}

// batchPropsKey is the key of a properties line ("k=v", "k: v" or "k v"),
// false for comments and blank lines.
func batchPropsKey(line string) (string, bool) {
	if line == "" || line[0] == '#' || line[0] == '!' {
		return "", false
	}
	i := strings.IndexAny(line, "=: \t")
	if i < 0 {
		return line, true
	}
	return strings.TrimSpace(line[:i]), true
}

func batchPropsComment(s *BatchStudy, c BatchCellResult) []string {
	rate := s.Rate
	if s.RatePerSecond > 0 {
		rate = fmt.Sprintf("%s (%.0f records/s)", s.Rate, s.RatePerSecond)
	}
	size := c.BatchSize.String()
	if c.BatchSize.Records > 0 {
		size += " records"
	}
	return []string{
		fmt.Sprintf("%s, linger %s x batch %s, the highest timely throughput of %d cells", s.Date, c.Linger, size, len(s.Cells)),
		fmt.Sprintf("end-to-end latency p50 %.1f ms, p99 %.1f ms, max %.1f ms (mean %.1f ms) over %d records; objective %s",
			c.Latency.P50, c.Latency.P99, c.Latency.Max, c.Latency.Mean, c.Latency.Count, s.Objective),
		fmt.Sprintf("violation rate %.2f%%, loss rate %.2f%%, timely throughput %.0f records/s (%.0f B/s)",
			100*c.ViolationRate, 100*c.LossRate, c.Timely, c.TimelyBytes),
		fmt.Sprintf("measured on %s: %d B records at %s, acks %s, %s per cell, topic of %d partition(s) x RF %d",
			s.Cluster, s.RecordSize, rate, s.Acks, s.CellDuration, s.Partitions, s.ReplicationFactor),
		"batch.size is franz-go's ProducerBatchMaxBytes (the record batch's bytes, header included)",
	}
}
