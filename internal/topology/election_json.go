package topology

import (
	"bytes"
	"io"
	"strconv"
)

// WriteElection writes keys in kafka-leader-election's --path-to-json-file
// format ({"partitions":[{"topic":...,"partition":...},...]}), one partition
// a line, in the order given.
func WriteElection(w io.Writer, keys []Key) error {
	var b bytes.Buffer
	b.Grow(40*len(keys) + 20)
	b.WriteString("{\"partitions\":[")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  {\"topic\":")
		writeJSONString(&b, k.Topic)
		b.WriteString(",\"partition\":")
		b.WriteString(strconv.FormatInt(int64(k.Partition), 10))
		b.WriteByte('}')
	}
	if len(keys) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	_, err := w.Write(b.Bytes())
	return err
}
