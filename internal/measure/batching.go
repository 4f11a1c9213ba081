package measure

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Fields the batching study's errors name (the CLI spells them as flags).
const (
	BatchFieldLinger     = "linger"
	BatchFieldBatchSize  = "batch-size"
	BatchFieldRecordSize = "record-size"
	BatchFieldRate       = "rate"
)

// BatchMinBytes is franz-go's smallest ProducerBatchMaxBytes: a records
// count that maps below it cannot be measured as asked.
const BatchMinBytes = 512

// BatchMaxBytes is franz-go's largest ProducerBatchMaxBytes (1 GiB).
const BatchMaxBytes = 1 << 30

// batchOverhead is the wire size of a record batch with no records as
// franz-go counts it against ProducerBatchMaxBytes: Kafka's 61 B v2 header
// (base offset, length, leader epoch, magic, CRC, attributes, last
// offset delta, two timestamps, producer id and epoch, base sequence and
// the records array length) and the batch's 4 B length prefix.
const batchOverhead = 4 + 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4

// BatchSize is one value of --batch-size: a number of records per batch
// (seed 003's spatial batch size B_S), or a number of bytes (Kafka's
// batch.size) when Bytes is set.
type BatchSize struct {
	// Records is the records per batch (0 when Bytes is set).
	Records int `json:"records,omitempty" yaml:"records,omitempty"`
	// Bytes is the batch size in bytes (0 when Records is set).
	Bytes int64 `json:"bytes,omitempty" yaml:"bytes,omitempty"`
}

// String is the size as --batch-size takes it: "10" or "16384B".
func (b BatchSize) String() string {
	if b.Bytes > 0 {
		return batchFormatBytes(b.Bytes)
	}
	return strconv.Itoa(b.Records)
}

// batchFormatBytes names a byte count with the largest binary unit that
// keeps it exact.
func batchFormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		f    int64
	}{{"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.f == 0 {
			return strconv.FormatInt(n/u.f, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// batchByteUnits are the units a byte --batch-size takes.
var batchByteUnits = map[string]int64{
	"B": 1, "kB": 1000, "KB": 1000, "KiB": 1 << 10, "MB": 1000 * 1000, "MiB": 1 << 20,
}

// ParseLingers parses --linger: a comma-separated list of whole-millisecond
// durations ("0,5ms,20ms,100ms"; a bare 0 is allowed), each at most 1m
// (franz-go's largest linger), without repeats. Kafka's linger.ms is whole milliseconds, so the chosen
// one can be written back as a producer property.
func ParseLingers(s string) ([]time.Duration, error) {
	var out []time.Duration
	seen := map[time.Duration]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, errkind.Usagef(BatchFieldLinger, "empty item in %q (want e.g. 0,5ms,20ms,100ms)", s)
		}
		var d time.Duration
		if item != "0" {
			var err error
			if strings.Trim(item, "0123456789.+-") == "" {
				return nil, errkind.Usagef(BatchFieldLinger, "%q has no unit (want e.g. 5ms)", item)
			}
			if d, err = time.ParseDuration(item); err != nil {
				return nil, errkind.Usagef(BatchFieldLinger, "%q is not a duration (want e.g. 0, 5ms, 1s)", item)
			}
		}
		switch {
		case d < 0:
			return nil, errkind.Usagef(BatchFieldLinger, "%q is negative", item)
		case d > time.Minute:
			return nil, errkind.Usagef(BatchFieldLinger, "%q is longer than franz-go's largest linger, 1m", item)
		case d%time.Millisecond != 0:
			return nil, errkind.Usagef(BatchFieldLinger, "%q is not a whole number of milliseconds (Kafka's linger.ms)", item)
		case seen[d]:
			return nil, errkind.Usagef(BatchFieldLinger, "%q is given twice", item)
		}
		seen[d] = true
		out = append(out, d)
	}
	return out, nil
}

// ParseBatchSizes parses --batch-size: a comma-separated list of records
// per batch ("1,4,10") or byte sizes with a unit ("16KiB", "1000B"), mixed
// as you like, without repeats.
func ParseBatchSizes(s string) ([]BatchSize, error) {
	var out []BatchSize
	seen := map[BatchSize]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		b, err := parseBatchSize(item)
		if err != nil {
			return nil, err
		}
		if seen[b] {
			return nil, errkind.Usagef(BatchFieldBatchSize, "%q is given twice", item)
		}
		seen[b] = true
		out = append(out, b)
	}
	return out, nil
}

func parseBatchSize(item string) (BatchSize, error) {
	if item == "" {
		return BatchSize{}, errkind.Usagef(BatchFieldBatchSize, "empty item (want e.g. 1,4,10 records or 16KiB)")
	}
	i := 0
	for i < len(item) && item[i] >= '0' && item[i] <= '9' {
		i++
	}
	num, unit := item[:i], strings.TrimSpace(item[i:])
	if num == "" {
		return BatchSize{}, errkind.Usagef(BatchFieldBatchSize, "%q has no number (want records, e.g. 10, or bytes, e.g. 16KiB)", item)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > BatchMaxBytes {
		return BatchSize{}, errkind.Usagef(BatchFieldBatchSize, "%q is too large", item)
	}
	if n <= 0 {
		return BatchSize{}, errkind.Usagef(BatchFieldBatchSize, "%q must be positive", item)
	}
	if unit == "" {
		if n > 1_000_000 {
			return BatchSize{}, errkind.Usagef(BatchFieldBatchSize, "%q records per batch is more than 1000000", item)
		}
		return BatchSize{Records: int(n)}, nil
	}
	mult, ok := batchByteUnits[unit]
	if !ok {
		return BatchSize{}, errkind.Usagef(BatchFieldBatchSize, "%q has unknown unit %q (want a records count, or B, kB, KiB, MB, MiB)", item, unit)
	}
	if n > BatchMaxBytes/mult {
		return BatchSize{}, errkind.Usagef(BatchFieldBatchSize, "%q is more than franz-go's 1GiB batch limit", item)
	}
	return BatchSize{Bytes: n * mult}, nil
}

// batchRecordBytes is the most a record with a value of recordSize bytes
// and no key or headers takes in a batch (v2 format): the length varint,
// attributes, a timestamp delta of up to two bytes (8 s), the offset delta
// varint at position offset, the null key's length, the value's length
// varint and the value, and the empty headers count.
func batchRecordBytes(recordSize, offset int) int64 {
	body := 1 + 2 + batchVarintLen(int64(offset)) + 1 + batchVarintLen(int64(recordSize)) + recordSize + 1
	return int64(batchVarintLen(int64(body)) + body)
}

// batchVarintLen is the length of x as a zig-zag varint.
func batchVarintLen(x int64) int {
	u := uint64(x<<1) ^ uint64(x>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// MaxBytes maps b onto franz-go's ProducerBatchMaxBytes (Kafka's
// batch.size) for records of recordSize value bytes: a byte size is used as
// it is; n records become the batch header plus the wire size of n such
// records (timestamp deltas counted at two bytes), so that n records fit
// and an n+1-th does not as long as n is below the record size. A result
// outside franz-go's 512 B to 1 GiB is a usage error naming the field.
func (b BatchSize) MaxBytes(recordSize int) (int32, error) {
	if recordSize < 1 {
		return 0, errkind.Usagef(BatchFieldRecordSize, "must be positive, got %d", recordSize)
	}
	if b.Bytes > 0 {
		if b.Bytes < BatchMinBytes {
			return 0, errkind.Usagef(BatchFieldBatchSize, "%s is below franz-go's %d B minimum batch", b, BatchMinBytes)
		}
		return int32(b.Bytes), nil
	}
	if b.Records < 1 {
		return 0, errkind.Usagef(BatchFieldBatchSize, "want a positive number of records, got %d", b.Records)
	}
	total := int64(batchOverhead)
	for i := range b.Records {
		total += batchRecordBytes(recordSize, i)
		if total > BatchMaxBytes {
			return 0, errkind.Usagef(BatchFieldBatchSize, "%d records of %d B is more than franz-go's 1GiB batch limit", b.Records, recordSize)
		}
	}
	if total < BatchMinBytes {
		need := recordSize
		for n := recordSize; n < BatchMinBytes; n++ {
			if t := batchSizeFor(b.Records, n); t >= BatchMinBytes {
				need = n
				break
			}
		}
		return 0, errkind.Usagef(BatchFieldBatchSize, "%d records of %d B make a %d B batch, below franz-go's %d B minimum (use --record-size %d or more, or a larger batch)",
			b.Records, recordSize, total, BatchMinBytes, need)
	}
	return int32(total), nil
}

func batchSizeFor(records, recordSize int) int64 {
	total := int64(batchOverhead)
	for i := range records {
		total += batchRecordBytes(recordSize, i)
	}
	return total
}

// BatchCell is one cell of the sweep: a linger and a batch size.
type BatchCell struct {
	Linger time.Duration
	Size   BatchSize
	// MaxBytes is the size given to franz-go (ProducerBatchMaxBytes) and
	// written as batch.size.
	MaxBytes int32
}

// BatchGrid is the sweep, lingers outer and sizes inner (the table's row
// order); every size is mapped onto bytes for records of recordSize.
func BatchGrid(lingers []time.Duration, sizes []BatchSize, recordSize int) ([]BatchCell, error) {
	if len(lingers) == 0 {
		return nil, errkind.Usagef(BatchFieldLinger, "no value given")
	}
	if len(sizes) == 0 {
		return nil, errkind.Usagef(BatchFieldBatchSize, "no value given")
	}
	var cells []BatchCell
	for _, l := range lingers {
		for _, s := range sizes {
			mb, err := s.MaxBytes(recordSize)
			if err != nil {
				return nil, err
			}
			cells = append(cells, BatchCell{Linger: l, Size: s, MaxBytes: mb})
		}
	}
	return cells, nil
}

// BatchRecordsPerSecond turns --rate into records per second: "N/s" (or
// "Nrec/s", "Nrecords/s") is records, any byte rate (100kB/s) is divided by
// the record size, "unlimited" is 0 (as fast as the producer can).
// parseBytes is units.ParseRate, injected to keep this package's imports
// small.
func BatchRecordsPerSecond(s string, recordSize int, parseBytes func(string) (int64, error)) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "unlimited" {
		return 0, nil
	}
	if recordSize < 1 {
		return 0, errkind.Usagef(BatchFieldRecordSize, "must be positive, got %d", recordSize)
	}
	if num, ok := strings.CutSuffix(t, "/s"); ok {
		for _, u := range []string{"records", "rec", ""} {
			if n, ok := strings.CutSuffix(num, u); ok && n != "" && strings.Trim(n, "0123456789.") == "" {
				r, err := strconv.ParseFloat(n, 64)
				if err != nil || r <= 0 || math.IsInf(r, 0) || r > 1e9 {
					return 0, errkind.Usagef(BatchFieldRate, "%q: want a positive number of records per second up to 1e9", s)
				}
				return r, nil
			}
		}
	}
	bps, err := parseBytes(t)
	if err != nil {
		return 0, errkind.Wrap(errkind.Usage, BatchFieldRate, fmt.Errorf("%w (or records, e.g. 1000/s, or unlimited)", err))
	}
	return float64(bps) / float64(recordSize), nil
}
