package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/kplan-dev/kplan/internal/topology"
)

// SchemaVersion is the version of the snapshot's "observe" part
// ("observe_schema"). A reader refuses versions it does not know.
const SchemaVersion = 1

// The snapshot's own top-level keys, beside the layout's.
const (
	KeySchema  = "observe_schema"
	KeyObserve = "observe"
)

// snapshotPartition is a layout partition with its size: what
// topology.Load reads ("size_bytes" included).
type snapshotPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Leader    int32   `json:"leader"`
	ISR       []int32 `json:"isr,omitempty"`
	Offline   []int32 `json:"offline_replicas,omitempty"`
	SizeBytes *int64  `json:"size_bytes,omitempty"`
}

type snapshotBroker struct {
	ID   int32  `json:"id"`
	Rack string `json:"rack,omitempty"`
}

// snapshot is the file --out writes: a layout (Kafka's reassignment JSON
// with kplan's "live", "brokers", per-partition "leader", "isr" and
// "size_bytes") that every verb reading --from loads, plus the observed
// loads under "observe", versioned by "observe_schema".
type snapshot struct {
	Version    int                 `json:"version"`
	Live       bool                `json:"live"`
	Schema     int                 `json:"observe_schema"`
	Brokers    []snapshotBroker    `json:"brokers"`
	Partitions []snapshotPartition `json:"partitions"`
	Observe    *Result             `json:"observe"`
}

// WriteSnapshot writes layout and r as one JSON document: it loads as a
// layout wherever kplan reads one (each partition's size_bytes is its
// largest replica at the last sample, left out when no broker reported
// it), and as rates wherever kplan reads a rates file (ParseSnapshotRates).
func WriteSnapshot(w io.Writer, layout *topology.Cluster, r *Result) error {
	s := snapshot{Version: 1, Live: layout.Live, Schema: SchemaVersion, Observe: r, Brokers: []snapshotBroker{}, Partitions: []snapshotPartition{}}
	for _, b := range layout.Brokers {
		if !b.Missing {
			s.Brokers = append(s.Brokers, snapshotBroker{ID: b.ID, Rack: b.Rack})
		}
	}
	size := map[topology.Key]int64{}
	for _, p := range r.Partitions {
		size[topology.Key{Topic: p.Topic, Partition: p.Partition}] = p.SizeBytes
	}
	for i := range layout.Partitions {
		p := &layout.Partitions[i]
		sp := snapshotPartition{Topic: p.Topic, Partition: p.Partition, Replicas: p.Replicas, Leader: p.Leader, ISR: p.ISR, Offline: p.Offline}
		if b, ok := size[p.Key()]; ok && b >= 0 {
			sp.SizeBytes = &b
		}
		s.Partitions = append(s.Partitions, sp)
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return fmt.Errorf("encoding the snapshot: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// IsSnapshot reports whether data is JSON (starts with '{'), so a
// snapshot rather than a rates file of topic=rate lines (no Kafka topic
// name holds a '{'); ParseSnapshotRates checks the rest.
func IsSnapshot(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// SnapshotError is a fault in a snapshot: the file, the field (a JSON path
// such as observe.topics[2].produce) and what is wrong, on one line.
type SnapshotError struct {
	File  string
	Field string
	Msg   string
}

func (e *SnapshotError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Field + ": " + e.Msg
}

// ErrorField returns the JSON path the error is about.
func (e *SnapshotError) ErrorField() string { return e.Field }

// TopicRates are the per-topic produce rates of a snapshot.
type TopicRates struct {
	// BytesPerSecond maps each topic to its mean produce rate over the
	// window (0 for an idle topic).
	BytesPerSecond map[string]float64
	// WindowSeconds is the window they were observed over.
	WindowSeconds float64
}

// ParseSnapshotRates reads the per-topic produce rates (bytes/s) of a
// snapshot WriteSnapshot wrote; name labels errors. A snapshot of a
// cluster without traffic has no rates, and says so.
func ParseSnapshotRates(data []byte, name string) (TopicRates, error) {
	fail := func(field, format string, a ...any) (TopicRates, error) {
		return TopicRates{}, &SnapshotError{File: name, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	var s struct {
		Schema  *int `json:"observe_schema"`
		Observe *struct {
			snapshotHead
			Topics []struct {
				Topic   *string `json:"topic"`
				Produce *struct {
					BytesPerSecond *struct {
						Mean *float64 `json:"mean"`
					} `json:"bytes_per_second"`
				} `json:"produce"`
			} `json:"topics"`
		} `json:"observe"`
	}
	if err := decode(data, name, &s); err != nil {
		return TopicRates{}, err
	}
	var head *snapshotHead
	if s.Observe != nil {
		head = &s.Observe.snapshotHead
	}
	if err := checkHead(name, s.Schema, head); err != nil {
		return TopicRates{}, err
	}
	tr := TopicRates{BytesPerSecond: map[string]float64{}, WindowSeconds: *s.Observe.WindowSeconds}
	for i, t := range s.Observe.Topics {
		at := fmt.Sprintf("%s.topics[%d]", KeyObserve, i)
		switch {
		case t.Topic == nil || *t.Topic == "":
			return fail(at+".topic", "missing or empty")
		case t.Produce == nil || t.Produce.BytesPerSecond == nil || t.Produce.BytesPerSecond.Mean == nil:
			return fail(at+".produce.bytes_per_second.mean", "missing")
		}
		v := *t.Produce.BytesPerSecond.Mean
		if !(v >= 0) || v > 1e18 {
			return fail(at+".produce.bytes_per_second.mean", "%v is not a rate in bytes/s (0 or more)", v)
		}
		if _, dup := tr.BytesPerSecond[*t.Topic]; dup {
			return fail(at+".topic", "%q listed twice", *t.Topic)
		}
		tr.BytesPerSecond[*t.Topic] = v
	}
	if len(tr.BytesPerSecond) == 0 {
		return fail(KeyObserve+".topics", "no topic")
	}
	return tr, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// PartitionRates are one partition's observed rates in a snapshot.
type PartitionRates struct {
	// ProduceBytesPerSecond is what producers wrote (mean over the window).
	ProduceBytesPerSecond float64
	// ConsumerBytesPerSecond sums the consumer groups' fetch rates.
	ConsumerBytesPerSecond float64
}

// SnapshotLoads are the per-partition rates of a snapshot.
type SnapshotLoads struct {
	Partitions    map[topology.Key]PartitionRates
	WindowSeconds float64
}

// ParseSnapshotLoads reads the per-partition produce and consumer rates
// (bytes/s) of a snapshot WriteSnapshot wrote; name labels errors. Like
// ParseSnapshotRates it refuses a snapshot of a cluster without traffic.
func ParseSnapshotLoads(data []byte, name string) (SnapshotLoads, error) {
	fail := func(field, format string, a ...any) (SnapshotLoads, error) {
		return SnapshotLoads{}, &SnapshotError{File: name, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	var s struct {
		Schema  *int `json:"observe_schema"`
		Observe *struct {
			snapshotHead
			Partitions []struct {
				Topic     *string `json:"topic"`
				Partition *int32  `json:"partition"`
				Produce   *struct {
					BytesPerSecond *struct {
						Mean *float64 `json:"mean"`
					} `json:"bytes_per_second"`
				} `json:"produce"`
				Consumer *float64 `json:"consumer_bytes_per_second"`
			} `json:"partitions"`
		} `json:"observe"`
	}
	if err := decode(data, name, &s); err != nil {
		return SnapshotLoads{}, err
	}
	var head *snapshotHead
	if s.Observe != nil {
		head = &s.Observe.snapshotHead
	}
	if err := checkHead(name, s.Schema, head); err != nil {
		return SnapshotLoads{}, err
	}
	sl := SnapshotLoads{Partitions: map[topology.Key]PartitionRates{}, WindowSeconds: *s.Observe.WindowSeconds}
	rate := func(field string, v float64) error {
		if !(v >= 0) || v > 1e15 {
			_, err := fail(field, "%v is not a rate in bytes/s (0 or more)", v)
			return err
		}
		return nil
	}
	for i, p := range s.Observe.Partitions {
		at := fmt.Sprintf("%s.partitions[%d]", KeyObserve, i)
		switch {
		case p.Topic == nil || *p.Topic == "":
			return fail(at+".topic", "missing or empty")
		case p.Partition == nil || *p.Partition < 0:
			return fail(at+".partition", "missing or negative")
		case p.Produce == nil || p.Produce.BytesPerSecond == nil || p.Produce.BytesPerSecond.Mean == nil:
			return fail(at+".produce.bytes_per_second.mean", "missing")
		case p.Consumer == nil:
			return fail(at+".consumer_bytes_per_second", "missing")
		}
		if err := rate(at+".produce.bytes_per_second.mean", *p.Produce.BytesPerSecond.Mean); err != nil {
			return SnapshotLoads{}, err
		}
		if err := rate(at+".consumer_bytes_per_second", *p.Consumer); err != nil {
			return SnapshotLoads{}, err
		}
		k := topology.Key{Topic: *p.Topic, Partition: *p.Partition}
		if _, dup := sl.Partitions[k]; dup {
			return fail(at, "%s listed twice", k)
		}
		sl.Partitions[k] = PartitionRates{ProduceBytesPerSecond: *p.Produce.BytesPerSecond.Mean, ConsumerBytesPerSecond: *p.Consumer}
	}
	if len(sl.Partitions) == 0 {
		return fail(KeyObserve+".partitions", "no partition")
	}
	return sl, nil
}

// decode unmarshals a snapshot's data into v; an error is a
// *SnapshotError naming the file and, for a value of the wrong type, the
// JSON field.
func decode(data []byte, name string, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &SnapshotError{File: name, Field: te.Field, Msg: fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)}
		}
		return &SnapshotError{File: name, Msg: "malformed JSON: " + oneLine(err.Error())}
	}
	return nil
}

// snapshotHead is what every reader of a snapshot's rates checks first in
// its "observe" object.
type snapshotHead struct {
	Traffic       *bool    `json:"traffic"`
	WindowSeconds *float64 `json:"window_seconds"`
}

// checkHead refuses a snapshot without observe_schema or of another
// version, without its "observe" object (head nil), of a cluster without
// traffic, or without a positive window: one *SnapshotError naming the
// field.
func checkHead(name string, schema *int, head *snapshotHead) error {
	fail := func(field, format string, a ...any) error {
		return &SnapshotError{File: name, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	switch {
	case schema == nil:
		return fail(KeySchema, "missing: not a snapshot of kplan observe (--out)")
	case *schema != SchemaVersion:
		return fail(KeySchema, "unsupported version %d (want %d)", *schema, SchemaVersion)
	case head == nil:
		return fail(KeyObserve, "missing")
	case head.Traffic == nil:
		return fail(KeyObserve+".traffic", "missing")
	case !*head.Traffic:
		return fail(KeyObserve+".traffic", "false: the cluster had no traffic in the observed window, so the snapshot has no rates")
	case head.WindowSeconds == nil || !(*head.WindowSeconds > 0) || math.IsInf(*head.WindowSeconds, 0):
		return fail(KeyObserve+".window_seconds", "want a positive number of seconds")
	}
	return nil
}
