package loadgen

import (
	"encoding/binary"
	"time"
)

// Envelope is what every record kplan produces carries at the start of its
// value, so that the checking consumer can tell each record apart: loss,
// duplicates and end-to-end latency are counted record by record.
//
// Layout (EnvelopeLen bytes, big endian):
//
//	0  uint64 Run: the run's id, to ignore records of other runs
//	8  uint64 Seq: the sequence number, per producer (and run) from 0
//	16 int64  Sent: when the record was handed to the producer, ns since the run's epoch
//	24 uint8  Producer: the producer's index within the run
//	25 uint8  Tag: the caller's mark (chaos: the phase at send time)
type Envelope struct {
	Run      uint64
	Seq      uint64
	Sent     time.Duration
	Producer uint8
	Tag      uint8
}

// EnvelopeLen is the envelope's size: the smallest record value kplan
// produces.
const EnvelopeLen = 26

const (
	envRun      = 0
	envSeq      = 8
	envSent     = 16
	envProducer = 24
	envTag      = 25
)

// Put writes e at the start of b, which holds at least EnvelopeLen bytes.
func (e Envelope) Put(b []byte) {
	_ = b[EnvelopeLen-1] // one bounds check
	binary.BigEndian.PutUint64(b[envRun:], e.Run)
	binary.BigEndian.PutUint64(b[envSeq:], e.Seq)
	binary.BigEndian.PutUint64(b[envSent:], uint64(e.Sent))
	b[envProducer] = e.Producer
	b[envTag] = e.Tag
}

// Stamp returns a record value of size bytes (at least EnvelopeLen) that
// starts with e; the rest is zero padding.
func Stamp(size int, e Envelope) []byte {
	b := make([]byte, max(size, EnvelopeLen))
	e.Put(b)
	return b
}

// DecodeEnvelope reads the envelope at the start of a record value; ok is
// false when the value is too short to hold one.
func DecodeEnvelope(b []byte) (e Envelope, ok bool) {
	if len(b) < EnvelopeLen {
		return Envelope{}, false
	}
	return Envelope{
		Run:      binary.BigEndian.Uint64(b[envRun:]),
		Seq:      binary.BigEndian.Uint64(b[envSeq:]),
		Sent:     time.Duration(binary.BigEndian.Uint64(b[envSent:])),
		Producer: b[envProducer],
		Tag:      b[envTag],
	}, true
}

// RunHeader is the record header that carries the run id (8 bytes, big
// endian, RunHeaderValue) where records share a topic with other producers'
// (chaos on existing topics): the checking consumer then counts only
// records that carry it.
const RunHeader = "kplan-run"

// RunHeaderValue is RunHeader's value for run.
func RunHeaderValue(run uint64) []byte { return binary.BigEndian.AppendUint64(nil, run) }
