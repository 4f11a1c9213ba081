package observe

import (
	"bytes"
	"encoding/binary"
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

// MayBeSnapshot reports whether data, valid JSON, may hold the key
// observe_schema that makes it a snapshot; false is certain. It scans the
// bytes instead of decoding them: a 2M-partition layout decodes in half a
// second, and a layout is what most files are. encoding/json matches keys
// without regard to case, through escapes, and folds some non-ASCII
// letters onto ASCII ones (the Kelvin sign onto k), so any escape or
// non-ASCII byte answers true, and so does observe_schema in any case.
func MayBeSnapshot(data []byte) bool {
	if bytes.IndexByte(data, '\\') >= 0 || !isASCII(data) {
		return true
	}
	const under = len("observe") // the key's '_'
	for rest, at := data, 0; ; {
		i := bytes.IndexByte(rest, '_')
		if i < 0 {
			return false
		}
		at += i
		if at >= under && at-under+len(KeySchema) <= len(data) && bytes.EqualFold(data[at-under:at-under+len(KeySchema)], []byte(KeySchema)) {
			return true
		}
		at++
		rest = data[at:]
	}
}

// isASCII reports whether every byte of b is below 0x80, eight at a time.
func isASCII(b []byte) bool {
	const high = 0x8080808080808080
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&high != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
