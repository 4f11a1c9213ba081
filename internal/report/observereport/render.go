// Package observereport renders what `kplan observe` saw: per topic,
// partition, consumer group, broker and log dir, as report documents
// (tables, Markdown; JSON is the observe.Result itself), and the progress
// line of each sample. Its functions are pure functions of
// internal/observe's types.
package observereport

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/report"
)

// Document renders r as tables. Idle partitions and topics show "idle"
// where their rates would be, and a cluster without traffic shows a note
// in place of the rate tables' figures.
func Document(r *observe.Result) report.Document {
	d := report.Document{Title: fmt.Sprintf("kplan observe: %d brokers, %d topics, %d partitions; %d samples over %s",
		len(r.Brokers), len(r.Topics), len(r.Partitions), r.Samples, seconds(r.WindowSeconds))}
	if !r.Traffic {
		d.Sections = append(d.Sections, report.Section{Title: "No traffic", Notes: []string{r.Note}})
	}
	d.Sections = append(d.Sections, topicsSection(r), partitionsSection(r), groupsSection(r), brokersSection(r), logDirsSection(r))
	return d
}

func topicsSection(r *observe.Result) report.Section {
	s := report.Section{Title: "Topics", Header: []string{"TOPIC", "PARTITIONS", "RECORDS/S", "BYTES/S", "BYTES/RECORD", "SIZE", "ALL REPLICAS", "REMOTE", "GROUPS"}}
	for _, t := range r.Topics {
		recs, byts, bpr := produceCells(t.Produce, t.Idle, r.Samples)
		s.Rows = append(s.Rows, []string{t.Topic, strconv.Itoa(t.Partitions), recs, byts, bpr,
			Bytes(t.SizeBytes), Bytes(t.ReplicaBytes), Bytes(t.RemoteBytes), orNone(strings.Join(t.Groups, ","))})
	}
	s.Notes = []string{"rates are over the whole window" + spreadNote(r.Samples) + "; size is each partition's largest replica, summed"}
	if idle := idleTopics(r); r.Traffic && len(idle) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("no record written in the window to %s", strings.Join(idle, ", ")))
	}
	return s
}

func partitionsSection(r *observe.Result) report.Section {
	s := report.Section{Title: "Partitions", Header: []string{"TOPIC", "PARTITION", "LEADER", "RECORDS/S", "BYTES/S", "BYTES/RECORD", "REPLICAS (BROKER:BYTES)", "LOCAL", "REMOTE", "CONSUMED/S"}}
	estimated := false
	for _, p := range r.Partitions {
		recs, byts, bpr := produceCells(p.Produce, p.Idle, r.Samples)
		if p.Produce.BytesEstimated {
			byts += "*"
			estimated = true
		}
		reps := make([]string, len(p.Replicas))
		for i, rp := range p.Replicas {
			reps[i] = fmt.Sprintf("%d:%s", rp.Broker, Bytes(rp.Bytes))
		}
		remote := Bytes(p.RemoteBytes)
		if p.RemoteEstimated {
			remote = "~" + remote
		}
		s.Rows = append(s.Rows, []string{p.Topic, strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)), recs, byts, bpr,
			orNone(strings.Join(reps, " ")), Bytes(p.LocalBytes), remote, consumed(p.ConsumerBytesPerSecond)})
	}
	s.Notes = []string{"bytes/s from the leader's size on disk (record batches as stored); remote: records before the earliest local offset (tiered storage) at the partition's bytes/record; consumed: every group's fetch rate from it (-: no commit moved)"}
	if estimated {
		s.Notes = append(s.Notes, "*: the size shrank in the window (retention deleted a segment): records/s times bytes/record")
	}
	return s
}

func groupsSection(r *observe.Result) report.Section {
	ng, nt := countGroups(r), countGroupTopics(r)
	s := report.Section{Title: fmt.Sprintf("Consumer groups (%d %s reading %d %s)", ng, plural(ng, "group", "groups"), nt, plural(nt, "topic", "topics")),
		Header: []string{"GROUP", "TOPIC", "PARTITIONS", "RECORDS/S", "BYTES/S", "LAG"}}
	for _, g := range r.Groups {
		recs := Count(g.RecordsPerSecond.Mean) + spreadCell(g.RecordsPerSecond, r.Samples, Count)
		byts := Rate(g.BytesPerSecond)
		if g.Records == 0 {
			recs, byts = "none", "none"
		}
		s.Rows = append(s.Rows, []string{g.Group, g.Topic, strconv.Itoa(g.Partitions), recs, byts, strconv.FormatInt(g.Lag, 10)})
	}
	if len(r.Groups) == 0 {
		s.Header, s.Notes = nil, []string{"none: no consumer group has committed an offset of these topics"}
		return s
	}
	s.Notes = []string{"fetch rate from committed offsets (a group commits what it has read), bytes at each partition's bytes/record; none: no commit moved in the window"}
	return s
}

func brokersSection(r *observe.Result) report.Section {
	s := report.Section{Title: "Brokers", Header: []string{"BROKER", "LEADERS", "REPLICAS", "ON DISK", "BYTES IN/S", "PRODUCE", "REPLICATION IN", "BYTES OUT/S", "CONSUMERS", "REPLICATION OUT"}}
	for _, b := range r.Brokers {
		row := []string{strconv.Itoa(int(b.Broker)), strconv.Itoa(b.Leaders), strconv.Itoa(b.Replicas), Bytes(b.Bytes)}
		if r.Traffic {
			row = append(row, Rate(b.BytesIn), Rate(b.ProduceIn), Rate(b.ReplicationIn), Rate(b.BytesOut), Rate(b.ConsumeOut), Rate(b.ReplicationOut))
		} else {
			row = append(row, "idle", "-", "-", "idle", "-", "-")
		}
		s.Rows = append(s.Rows, row)
	}
	s.Notes = []string{"in: producers to its leaders plus replication into its followers; out: consumer groups from its leaders plus replication to their followers"}
	return s
}

func logDirsSection(r *observe.Result) report.Section {
	s := report.Section{Title: "Log dirs", Header: []string{"BROKER", "DIR", "REPLICAS", "BYTES"}}
	for _, d := range r.LogDirs {
		s.Rows = append(s.Rows, []string{strconv.Itoa(int(d.Broker)), d.Dir, strconv.Itoa(d.Replicas), Bytes(d.Bytes)})
	}
	if len(r.LogDirs) == 0 {
		s.Header, s.Notes = nil, []string{"none reported"}
	}
	return s
}

// Progress is the line printed on stderr as sample i (from 0) of n is
// taken: what it read, and the records written since the first.
func Progress(i, n int, first, s observe.Sample) string {
	var written int64
	start := map[[2]any]int64{}
	for _, o := range first.Offsets {
		start[[2]any{o.Topic, o.Partition}] = o.End
	}
	for _, o := range s.Offsets {
		if e, ok := start[[2]any{o.Topic, o.Partition}]; ok {
			written += max(0, o.End-e)
		}
	}
	groups := map[string]bool{}
	for _, c := range s.Committed {
		groups[c.Group] = true
	}
	line := fmt.Sprintf("observe: sample %d/%d at +%s: %d partitions, %d replicas, %d groups", i+1, n, seconds(s.At.Sub(first.At).Seconds()), len(s.Offsets), len(s.Replicas), len(groups))
	if i > 0 {
		line += fmt.Sprintf("; %d records written since the first sample", written)
	}
	return line
}

func produceCells(p observe.Produce, idle bool, samples int) (recs, byts, bpr string) {
	if idle {
		return "idle", "idle", bytesPerRecord(p.BytesPerRecord)
	}
	return Count(p.RecordsPerSecond.Mean) + spreadCell(p.RecordsPerSecond, samples, Count),
		Rate(p.BytesPerSecond.Mean) + spreadCell(p.BytesPerSecond, samples, Rate),
		bytesPerRecord(p.BytesPerRecord)
}

// spreadCell is " (min-max)" over the intervals, with three samples or
// more.
func spreadCell(r observe.Rate, samples int, f func(float64) string) string {
	if samples < 3 {
		return ""
	}
	return " (" + f(r.Min) + "-" + f(r.Max) + ")"
}

func spreadNote(samples int) string {
	if samples < 3 {
		return ""
	}
	return fmt.Sprintf(", in brackets the least and most of its %d intervals", samples-1)
}

func bytesPerRecord(x float64) string {
	if x == 0 {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

func idleTopics(r *observe.Result) []string {
	var out []string
	for _, t := range r.Topics {
		if t.Idle {
			out = append(out, t.Topic)
		}
	}
	return out
}

func countGroups(r *observe.Result) int {
	m := map[string]bool{}
	for _, g := range r.Groups {
		m[g.Group] = true
	}
	return len(m)
}

func countGroupTopics(r *observe.Result) int {
	m := map[string]bool{}
	for _, g := range r.Groups {
		m[g.Topic] = true
	}
	return len(m)
}

func consumed(bps float64) string {
	if bps == 0 {
		return "-"
	}
	return Rate(bps)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Bytes formats a size in decimal units with three significant digits
// (999B, 1.23kB, 45.6MB).
func Bytes(b int64) string { return scaled(float64(b), "B") }

// Rate formats bytes/s as Bytes does, with "/s".
func Rate(bps float64) string { return scaled(bps, "B") + "/s" }

// Count formats a records/s figure with three significant digits.
func Count(x float64) string {
	if x >= 1e4 {
		return scaled(x, "")
	}
	return strconv.FormatFloat(x, 'f', decimals(x), 64)
}

func scaled(x float64, unit string) string {
	for _, u := range []struct {
		p string
		f float64
	}{{"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if x >= u.f {
			v := x / u.f
			return strconv.FormatFloat(v, 'f', decimals(v), 64) + u.p + unit
		}
	}
	if unit == "B" && x != math.Trunc(x) && x < 10 {
		return strconv.FormatFloat(x, 'f', 1, 64) + unit
	}
	return strconv.FormatFloat(x, 'f', 0, 64) + unit
}

// decimals keeps three significant digits, none for 100 and above.
func decimals(v float64) int {
	switch {
	case v == 0 || v >= 100:
		return 0
	case v >= 10:
		return 1
	default:
		return 2
	}
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
