package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// LoadError locates a fault in an input file: file:line[:col]: field: msg.
type LoadError struct {
	File  string
	Line  int
	Col   int
	Field string
	Msg   string
}

func (e *LoadError) Error() string {
	loc := fmt.Sprintf("%s:%d", e.File, e.Line)
	if e.Col > 0 {
		loc += fmt.Sprintf(":%d", e.Col)
	}
	if e.Field != "" {
		return loc + ": " + e.Field + ": " + e.Msg
	}
	return loc + ": " + e.Msg
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// readAll is io.ReadAll, reading a file (or anything that knows its size)
// into one buffer of that size rather than growing one by copying: a
// 2M-partition layout is 133 MB.
func readAll(r io.Reader) ([]byte, error) {
	var size int64
	switch v := r.(type) {
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	case interface{ Len() int }:
		size = int64(v.Len())
	}
	if size <= 0 || size > 1<<40 {
		return io.ReadAll(r)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// Load reads a layout from r, detecting its format: Kafka's reassignment
// JSON (as kafka-reassign-partitions writes it, plus optional per-partition
// "leader" and "isr"), or the text of kafka-topics.sh --describe (Kafka 2.x
// to 4.x). name labels errors.
func Load(r io.Reader, name string) (*Cluster, error) {
	data, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	switch {
	case len(trimmed) == 0:
		return nil, &LoadError{File: name, Line: 1, Msg: "empty input"}
	case trimmed[0] == '{':
		return LoadJSON(data, name)
	case bytes.Contains(data, []byte("Partition:")) || bytes.HasPrefix(trimmed, []byte("Topic:")):
		return LoadDescribe(data, name)
	default:
		line, col := position(data, int64(len(data)-len(trimmed)))
		return nil, &LoadError{File: name, Line: line, Col: col, Msg: "unknown format (want Kafka's reassignment JSON or kafka-topics.sh --describe output)"}
	}
}

// jsonPartition is one entry of the reassignment JSON.
type jsonPartition struct {
	Topic     *string  `json:"topic"`
	Partition *int64   `json:"partition"`
	Replicas  []int64  `json:"replicas"`
	LogDirs   []string `json:"log_dirs"`
	Leader    *int64   `json:"leader"`
	ISR       []int64  `json:"isr"`
	Offline   []int64  `json:"offline_replicas"`
	// SizeBytes is kplan's own key (kplan observe --out): the partition's
	// size on disk.
	SizeBytes *int64 `json:"size_bytes"`
}

// LoadJSON reads Kafka's version-1 reassignment JSON. The layouts kplan
// and Kafka's tools write take a reader without reflection
// (loadJSONFast); anything else, and every fault, the streaming decoder,
// which names the line and column.
func LoadJSON(data []byte, name string) (*Cluster, error) {
	if c, ok := loadJSONFast(data); ok {
		return c, nil
	}
	return loadJSONSlow(data, name)
}

// loadJSONSlow is LoadJSON through encoding/json. It streams the
// partitions array, so a two-million-partition file costs one pass.
func loadJSONSlow(data []byte, name string) (*Cluster, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	fail := func(field, format string, a ...any) error {
		line, col := position(data, dec.InputOffset())
		return &LoadError{File: name, Line: line, Col: col, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	syntax := func(err error) error {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := position(data, se.Offset)
			return &LoadError{File: name, Line: line, Col: col, Msg: "malformed JSON: " + se.Error()}
		case errors.As(err, &te):
			line, col := position(data, te.Offset)
			return &LoadError{File: name, Line: line, Col: col, Field: te.Field, Msg: fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)}
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			line, col := position(data, int64(len(data)))
			return &LoadError{File: name, Line: line, Col: col, Msg: "malformed JSON: unexpected end of input"}
		}
		return fail("", "%v", err)
	}
	if t, err := dec.Token(); err != nil {
		return nil, syntax(err)
	} else if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fail("", "want a JSON object")
	}
	// One partition per "replicas" key: a cheap scan sizes the slice once
	// instead of growing a two-million-entry slice by copying.
	c := &Cluster{Partitions: make([]Partition, 0, bytes.Count(data, []byte(`"replicas"`)))}
	// Duplicates: inputs are usually sorted (Kafka's tools write them so),
	// and while they stay strictly increasing no entry can repeat an earlier
	// one; the map is built only once the input turns out unsorted.
	var seen map[Key]bool
	topics := map[string]string{} // interned topic names
	sawVersion, sawPartitions := false, false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		key, _ := t.(string)
		switch key {
		case "version":
			var v int
			if err := dec.Decode(&v); err != nil {
				return nil, syntax(err)
			}
			if v != 1 {
				return nil, fail("version", "unsupported version %d (want 1)", v)
			}
			sawVersion = true
		case "live":
			if err := dec.Decode(&c.Live); err != nil {
				return nil, syntax(err)
			}
		case "brokers":
			// kplan's own key (WriteLayout, WriteSnapshot): brokers with racks.
			var bs []struct {
				ID   *int64 `json:"id"`
				Rack string `json:"rack"`
			}
			start := dec.InputOffset()
			for start < int64(len(data)) && (data[start] == ':' || data[start] == ' ' || data[start] == '\t' || data[start] == '\r' || data[start] == '\n') {
				start++
			}
			if err := dec.Decode(&bs); err != nil {
				return nil, syntax(err)
			}
			ids := map[int64]bool{}
			for _, b := range bs {
				var msg string
				switch {
				case b.ID == nil:
					msg = "a broker has no id"
				case *b.ID < 0 || *b.ID > 1<<31-1:
					msg = fmt.Sprintf("broker id %d is out of range", *b.ID)
				case ids[*b.ID]:
					msg = fmt.Sprintf("broker %d listed twice", *b.ID)
				}
				if msg != "" {
					line, col := position(data, start)
					return nil, &LoadError{File: name, Line: line, Col: col, Field: "brokers", Msg: msg}
				}
				ids[*b.ID] = true
				c.Brokers = append(c.Brokers, Broker{ID: int32(*b.ID), Rack: b.Rack})
			}
		case "partitions":
			sawPartitions = true
			if t, err := dec.Token(); err != nil {
				return nil, syntax(err)
			} else if d, ok := t.(json.Delim); !ok || d != '[' {
				return nil, fail("partitions", "want an array")
			}
			for dec.More() {
				var jp jsonPartition
				start := dec.InputOffset()
				if err := dec.Decode(&jp); err != nil {
					return nil, syntax(err)
				}
				p, field, msg := jp.partition(topics)
				if msg == "" && seen == nil && len(c.Partitions) > 0 && ComparePartitions(c.Partitions[len(c.Partitions)-1], p) >= 0 {
					seen = make(map[Key]bool, cap(c.Partitions))
					for i := range c.Partitions {
						seen[c.Partitions[i].Key()] = true
					}
				}
				if msg == "" && seen != nil && seen[p.Key()] {
					field, msg = "partition", fmt.Sprintf("duplicate topic-partition %s", p.Key())
				}
				if msg != "" {
					line, col := position(data, skipSpace(data, start))
					return nil, &LoadError{File: name, Line: line, Col: col, Field: field, Msg: msg}
				}
				if seen != nil {
					seen[p.Key()] = true
				}
				c.Partitions = append(c.Partitions, p)
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntax(err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, syntax(err)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntax(err)
	}
	if !sawPartitions {
		return nil, fail("partitions", "missing")
	}
	_ = sawVersion // Kafka's own tool accepts a missing version as 1
	c.Normalize()
	return c, nil
}

func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && (data[off] == ' ' || data[off] == '\n' || data[off] == '\t' || data[off] == '\r' || data[off] == ',') {
		off++
	}
	return off
}

func brokerIDs(field string, in []int64) ([]int32, string, string) {
	out := make([]int32, len(in))
	for i, v := range in {
		if v < 0 || v > 1<<31-1 {
			return nil, field, fmt.Sprintf("broker id %d is out of range", v)
		}
		out[i] = int32(v)
	}
	return out, "", ""
}

// partition validates an entry; it returns the field and message of the
// first fault, or an empty message.
func (jp jsonPartition) partition(topics map[string]string) (Partition, string, string) {
	var p Partition
	if jp.Topic == nil || *jp.Topic == "" {
		return p, "topic", "missing or empty"
	}
	t, ok := topics[*jp.Topic]
	if !ok {
		if msg := topicNameFault(*jp.Topic); msg != "" {
			return p, "topic", msg
		}
		t = *jp.Topic
		topics[t] = t
	}
	p.Topic = t
	if jp.Partition == nil {
		return p, "partition", "missing"
	}
	if *jp.Partition < 0 || *jp.Partition > 1<<31-1 {
		return p, "partition", fmt.Sprintf("%d is out of range", *jp.Partition)
	}
	p.Partition = int32(*jp.Partition)
	if len(jp.Replicas) == 0 {
		return p, "replicas", fmt.Sprintf("%s has no replicas", p.Key())
	}
	var field, msg string
	if p.Replicas, field, msg = brokerIDs("replicas", jp.Replicas); msg != "" {
		return p, field, msg
	}
	for i, r := range p.Replicas {
		if slices.Contains(p.Replicas[:i], r) {
			return p, "replicas", fmt.Sprintf("%s names broker %d twice", p.Key(), r)
		}
	}
	p.Leader = p.Replicas[0]
	if jp.Leader != nil {
		p.Leader = int32(*jp.Leader)
		if *jp.Leader != -1 && !slices.Contains(p.Replicas, p.Leader) {
			return p, "leader", fmt.Sprintf("%s: leader %d is not among replicas %v", p.Key(), *jp.Leader, p.Replicas)
		}
	}
	if jp.ISR != nil {
		if p.ISR, field, msg = brokerIDs("isr", jp.ISR); msg != "" {
			return p, field, msg
		}
		for _, r := range p.ISR {
			if !slices.Contains(p.Replicas, r) {
				return p, "isr", fmt.Sprintf("%s: in-sync replica %d is not among replicas %v", p.Key(), r, p.Replicas)
			}
		}
	}
	if jp.Offline != nil {
		if p.Offline, field, msg = brokerIDs("offline_replicas", jp.Offline); msg != "" {
			return p, field, msg
		}
	}
	if len(jp.LogDirs) > 0 {
		if len(jp.LogDirs) != len(p.Replicas) {
			return p, "log_dirs", fmt.Sprintf("%s: %d log dirs for %d replicas", p.Key(), len(jp.LogDirs), len(p.Replicas))
		}
		p.LogDirs = jp.LogDirs
	}
	p.SizeBytes = -1
	if jp.SizeBytes != nil {
		if *jp.SizeBytes < 0 {
			return p, "size_bytes", fmt.Sprintf("%s: %d is negative", p.Key(), *jp.SizeBytes)
		}
		p.SizeBytes = *jp.SizeBytes
	}
	return p, "", ""
}

// LoadDescribe reads the text of kafka-topics.sh --describe, Kafka 2.x to
// 4.x: partition lines hold "Topic: t  Partition: 0  Leader: 1  Replicas:
// 1,2  Isr: 1,2" (tab separated, with optional Elr, LastKnownElr and
// Offline fields and "Leader: none"). Topic header lines ("Topic: t
// PartitionCount: 3 ...") are checked against the partition lines of their
// topic: fewer or more than PartitionCount (a truncated copy) is an error
// naming the header's line.
func LoadDescribe(data []byte, name string) (*Cluster, error) {
	c := &Cluster{}
	seen := map[Key]bool{}
	topics := map[string]string{}
	type header struct {
		line, count, lines int
	}
	headers := map[string]*header{}
	var order []string
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if !strings.Contains(line, "Partition:") {
			if h := describeFields(line); h["PartitionCount"] != "" && h["Topic"] != "" {
				n, err := strconv.ParseInt(h["PartitionCount"], 10, 32)
				if err != nil || n < 0 {
					return nil, &LoadError{File: name, Line: i + 1, Field: "PartitionCount", Msg: fmt.Sprintf("%q is not a partition count", h["PartitionCount"])}
				}
				if _, dup := headers[h["Topic"]]; !dup {
					order = append(order, h["Topic"])
				}
				headers[h["Topic"]] = &header{line: i + 1, count: int(n)}
			}
			continue
		}
		fields := describeFields(line)
		fail := func(field, format string, a ...any) error {
			return &LoadError{File: name, Line: i + 1, Field: field, Msg: fmt.Sprintf(format, a...)}
		}
		topic := fields["Topic"]
		if topic == "" {
			return nil, fail("Topic", "missing")
		}
		if t, ok := topics[topic]; ok {
			topic = t
		} else {
			if msg := topicNameFault(topic); msg != "" {
				return nil, fail("Topic", "%s", msg)
			}
			topics[topic] = topic
		}
		pn, err := strconv.ParseInt(fields["Partition"], 10, 32)
		if err != nil || pn < 0 {
			return nil, fail("Partition", "%q is not a partition number", fields["Partition"])
		}
		p := Partition{Topic: topic, Partition: int32(pn), SizeBytes: -1}
		if p.Replicas, err = idList(fields["Replicas"]); err != nil || len(p.Replicas) == 0 {
			return nil, fail("Replicas", "%q is not a list of broker ids", fields["Replicas"])
		}
		for j, r := range p.Replicas {
			if slices.Contains(p.Replicas[:j], r) {
				return nil, fail("Replicas", "broker %d named twice", r)
			}
		}
		switch l := fields["Leader"]; l {
		case "none", "-1":
			p.Leader = NoLeader
		default:
			id, err := strconv.ParseInt(l, 10, 32)
			if err != nil || !slices.Contains(p.Replicas, int32(id)) {
				return nil, fail("Leader", "%q is not one of the replicas %v", l, p.Replicas)
			}
			p.Leader = int32(id)
		}
		if isr, ok := fields["Isr"]; ok {
			if p.ISR, err = idList(isr); err != nil {
				return nil, fail("Isr", "%q is not a list of broker ids", isr)
			}
			if p.ISR == nil {
				p.ISR = []int32{}
			}
			for _, r := range p.ISR {
				if !slices.Contains(p.Replicas, r) {
					return nil, fail("Isr", "in-sync replica %d is not among replicas %v", r, p.Replicas)
				}
			}
		}
		if off, ok := fields["Offline"]; ok && off != "" {
			if p.Offline, err = idList(off); err != nil {
				return nil, fail("Offline", "%q is not a list of broker ids", off)
			}
		}
		if seen[p.Key()] {
			return nil, fail("Partition", "duplicate topic-partition %s", p.Key())
		}
		seen[p.Key()] = true
		if h := headers[fields["Topic"]]; h != nil {
			h.lines++
		}
		c.Partitions = append(c.Partitions, p)
	}
	if len(c.Partitions) == 0 {
		return nil, &LoadError{File: name, Line: 1, Msg: "no partition lines found"}
	}
	for _, t := range order {
		if h := headers[t]; h.lines != h.count {
			return nil, &LoadError{File: name, Line: h.line, Field: "PartitionCount", Msg: fmt.Sprintf("topic %s has %d partitions but %s follow (truncated output?)",
				t, h.count, pluralLines(h.lines))}
		}
	}
	c.Live = true // describe output is a cluster's live state: leaders and ISR are facts
	c.Normalize()
	return c, nil
}

func pluralLines(n int) string {
	if n == 1 {
		return "1 partition line"
	}
	return fmt.Sprintf("%d partition lines", n)
}

// describeFields splits "Key: value" pairs separated by tabs (or runs of
// spaces before a capitalised key, as some terminals render them).
func describeFields(line string) map[string]string {
	out := map[string]string{}
	parts := strings.Split(line, "\t")
	if len(parts) == 1 {
		parts = strings.Fields(line)
		var merged []string
		for _, p := range parts {
			if strings.HasSuffix(p, ":") || len(merged) == 0 {
				merged = append(merged, p)
			} else {
				merged[len(merged)-1] += " " + p
			}
		}
		parts = merged
	}
	for _, p := range parts {
		k, v, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

func idList(s string) ([]int32, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []int32
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("bad id %q", f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

// maxTopicName is Kafka's limit on a topic name's length
// (org.apache.kafka.common.internals.Topic.MAX_NAME_LENGTH).
const maxTopicName = 249

// topicNameFault returns why Kafka would not accept name as a topic (its
// Topic.validate: 1 to 249 of ASCII letters, digits, '.', '_' and '-', and
// neither "." nor ".."), or "" when it would. Layouts that name topics
// Kafka cannot hold are someone else's data: a name kplan wrote back
// (snapshots, reassignment JSON) would not be the name it read.
func topicNameFault(name string) string {
	switch {
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a legal topic name", name)
	case len(name) > maxTopicName:
		return fmt.Sprintf("topic name is %d characters long; Kafka allows %d", len(name), maxTopicName)
	}
	for i := 0; i < len(name); i++ {
		if !topicNameByte(name[i]) {
			return fmt.Sprintf("%q: a topic name holds only ASCII letters, digits, '.', '_' and '-'", name)
		}
	}
	return ""
}

// topicNameByte reports whether c may appear in a Kafka topic name.
func topicNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}
