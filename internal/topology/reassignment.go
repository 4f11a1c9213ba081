package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// WriteReassignment writes partitions as Kafka's version-1 reassignment JSON
// ("version" first; partitions sorted by topic, then partition; one partition
// a line), the format kafka-reassign-partitions --execute accepts. Only topic,
// partition, replicas and log_dirs (when present) are written; Kafka's tool
// rejects unknown fields in no version, but kplan keeps its files minimal.
func WriteReassignment(w io.Writer, parts []Partition) error {
	return writePartitions(w, parts, nil, false, false, false)
}

// WriteLayout writes a layout as WriteReassignment does plus kplan's
// "brokers" key ([{"id":1,"rack":"r1"},...]), so brokers' racks and brokers
// holding nothing survive the round trip through Load, and each known
// partition size ("size_bytes", and "local_bytes" for a tiered one). Kafka's
// tools ignore the extra keys.
func WriteLayout(w io.Writer, c *Cluster) error {
	return writePartitions(w, c.Partitions, c.Brokers, false, false, true)
}

// WriteSnapshot writes a layout in the same JSON form with each partition's
// "leader", "isr" (when known) and "offline_replicas" (when any), and
// "live": true for a live layout, so a live cluster can be audited offline
// later; Load reads it back unchanged. Brokers (with racks) are written as
// WriteLayout does.
func WriteSnapshot(w io.Writer, c *Cluster) error {
	return writePartitions(w, c.Partitions, c.Brokers, c.Live, true, true)
}

func writeInts(b *bytes.Buffer, v []int32) {
	b.WriteByte('[')
	for j, r := range v {
		if j > 0 {
			b.WriteByte(',')
		}
		var tmp [12]byte
		b.Write(strconv.AppendInt(tmp[:0], int64(r), 10))
	}
	b.WriteByte(']')
}

func writePartitions(w io.Writer, parts []Partition, brokers []Broker, live, state, sizes bool) error {
	sorted := parts
	if !slices.IsSortedFunc(parts, ComparePartitions) {
		sorted = slices.Clone(parts)
		slices.SortFunc(sorted, ComparePartitions)
	}
	var b bytes.Buffer
	b.Grow(64 * len(parts))
	b.WriteString("{\"version\":1,")
	if live {
		// kplan's own key: the leaders and ISR are a running cluster's facts.
		b.WriteString("\"live\":true,")
	}
	// A Missing broker is left out: reading the file back marks it missing
	// again (Normalize), as the live cluster's metadata did.
	brokers = slices.DeleteFunc(slices.Clone(brokers), func(br Broker) bool { return br.Missing })
	if len(brokers) > 0 {
		// kplan's own key: every broker, with its rack, idle ones included.
		b.WriteString("\"brokers\":[")
		for i, br := range brokers {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "{\"id\":%d", br.ID)
			if br.Rack != "" {
				b.WriteString(",\"rack\":")
				writeJSONString(&b, br.Rack)
			}
			b.WriteByte('}')
		}
		b.WriteString("],")
	}
	b.WriteString("\"partitions\":[")
	for i, p := range sorted {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  {\"topic\":")
		writeJSONString(&b, p.Topic)
		var num [12]byte
		b.WriteString(",\"partition\":")
		b.Write(strconv.AppendInt(num[:0], int64(p.Partition), 10))
		b.WriteString(",\"replicas\":")
		writeInts(&b, p.Replicas)
		if len(p.LogDirs) > 0 {
			b.WriteString(",\"log_dirs\":[")
			for j, d := range p.LogDirs {
				if j > 0 {
					b.WriteByte(',')
				}
				writeJSONString(&b, d)
			}
			b.WriteByte(']')
		}
		if sizes {
			// Layouts and snapshots, never a plan: sizes when known.
			if p.SizeBytes >= 0 {
				fmt.Fprintf(&b, ",\"size_bytes\":%d", p.SizeBytes)
			}
			if p.LocalBytes > 0 {
				fmt.Fprintf(&b, ",\"local_bytes\":%d", p.LocalBytes)
			}
		}
		if state {
			fmt.Fprintf(&b, ",\"leader\":%d", p.Leader)
			if p.ISR != nil {
				b.WriteString(",\"isr\":")
				writeInts(&b, p.ISR)
			}
			if len(p.Offline) > 0 {
				b.WriteString(",\"offline_replicas\":")
				writeInts(&b, p.Offline)
			}
		}
		b.WriteByte('}')
	}
	if len(sorted) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	_, err := w.Write(b.Bytes())
	return err
}

func writeJSONString(b *bytes.Buffer, s string) {
	var tmp [64]byte
	b.Write(AppendJSONString(tmp[:0], s))
}

// AppendJSONString appends s to b as a JSON string, byte for byte as
// encoding/json writes it (HTML characters escaped). Topic names, whose
// characters Kafka limits to [a-zA-Z0-9._-], take a fast path with no
// allocation; other strings go through encoding/json.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
