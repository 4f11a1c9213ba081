package observe

import (
	"fmt"
	"math"
)

// ReadSnapshot reads the observed loads of a snapshot WriteSnapshot wrote
// (its "observe" object); name labels errors, which are *SnapshotError
// naming the JSON field. A file without observe_schema is no snapshot:
// (nil, nil), so a plain layout reads as one. A snapshot of a cluster
// without traffic reads with Traffic false.
func ReadSnapshot(data []byte, name string) (*Result, error) {
	fail := func(field, format string, a ...any) (*Result, error) {
		return nil, &SnapshotError{File: name, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	var s struct {
		Schema  *int    `json:"observe_schema"`
		Observe *Result `json:"observe"`
	}
	if err := decode(data, name, &s); err != nil {
		return nil, err
	}
	switch {
	case s.Schema == nil:
		return nil, nil
	case *s.Schema != SchemaVersion:
		return fail(KeySchema, "unsupported version %d (want %d)", *s.Schema, SchemaVersion)
	case s.Observe == nil:
		return fail(KeyObserve, "missing")
	case !(s.Observe.WindowSeconds > 0) || math.IsInf(s.Observe.WindowSeconds, 0):
		return fail(KeyObserve+".window_seconds", "want a positive number of seconds")
	}
	for i, p := range s.Observe.Partitions {
		at := fmt.Sprintf("%s.partitions[%d]", KeyObserve, i)
		for _, x := range []struct {
			field string
			v     float64
		}{
			{".produce.bytes_per_second.mean", p.Produce.BytesPerSecond.Mean},
			{".consumer_bytes_per_second", p.ConsumerBytesPerSecond},
		} {
			if x.v < 0 || math.IsNaN(x.v) || math.IsInf(x.v, 0) {
				return fail(at+x.field, "want a rate of at least 0, got %v", x.v)
			}
		}
		if p.Topic == "" {
			return fail(at+".topic", "missing or empty")
		}
	}
	return s.Observe, nil
}
