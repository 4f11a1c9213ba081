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
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, ComparePartitions)
	var b bytes.Buffer
	b.WriteString("{\"version\":1,\"partitions\":[")
	for i, p := range sorted {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  {\"topic\":")
		writeJSONString(&b, p.Topic)
		fmt.Fprintf(&b, ",\"partition\":%d,\"replicas\":[", p.Partition)
		for j, r := range p.Replicas {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(int64(r), 10))
		}
		b.WriteByte(']')
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
	q, _ := json.Marshal(s) // a string always marshals
	b.Write(q)
}
