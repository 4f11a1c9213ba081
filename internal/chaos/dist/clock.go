package dist

import (
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Clocks. Every process of a run measures its clock against the brokers':
// it produces a probe on a run topic whose timestamps are the broker's
// log-append time (message.timestamp.type=LogAppendTime), notes its own
// time just before the send and at the acknowledgement, and reads the
// probe back. The broker stamped it between the two, so each probe bounds
// the offset (broker time minus local time) on both sides; the bounds of
// several probes are intersected. The coordinator's offset travels in the
// plan; a worker's clock differs from the coordinator's by the difference
// of the two offsets, within the sum of their uncertainties.

// ClockSample is one probe: Sent and Acked on the local clock around the
// produce request, Broker the log-append time it was read back with
// (millisecond resolution).
type ClockSample struct {
	Sent, Acked, Broker time.Time
}

// Offset is a clock's offset against the brokers' (broker time = local
// time + Offset) and its uncertainty (the true offset is within Offset ±
// Uncertainty).
type Offset struct {
	Offset      time.Duration
	Uncertainty time.Duration
}

// brokerTick is the resolution of a record's timestamp.
const brokerTick = time.Millisecond

// EstimateOffset intersects the bounds of samples: a probe stamped at
// Broker (truncated to the millisecond) between Sent and Acked puts the
// offset in [Broker - Acked, Broker + 1 ms - Sent]. When the bounds do not
// meet (a clock stepped between probes), the narrowest probe's alone count.
// ok is false without samples.
func EstimateOffset(samples []ClockSample) (o Offset, ok bool) {
	if len(samples) == 0 {
		return Offset{}, false
	}
	bounds := func(s ClockSample) (lo, hi time.Duration) {
		return s.Broker.Sub(s.Acked), s.Broker.Add(brokerTick).Sub(s.Sent)
	}
	lo, hi := bounds(samples[0])
	nlo, nhi := lo, hi // the narrowest probe's bounds
	for _, s := range samples[1:] {
		l, h := bounds(s)
		lo, hi = max(lo, l), min(hi, h)
		if h-l < nhi-nlo {
			nlo, nhi = l, h
		}
	}
	if lo > hi {
		lo, hi = nlo, nhi
	}
	return Offset{Offset: lo + (hi-lo)/2, Uncertainty: (hi - lo + 1) / 2}, true
}

// Skew is how far a worker's clock is behind the coordinator's: the
// coordinator's time is the worker's plus Skew.Offset, within
// Skew.Uncertainty (the two offsets' uncertainties added).
func Skew(worker, coordinator Offset) Offset {
	return Offset{Offset: worker.Offset - coordinator.Offset, Uncertainty: worker.Uncertainty + coordinator.Uncertainty}
}

// Significant reports whether the skew is larger than its uncertainty: a
// worker corrects its clock only then (a correction smaller than what is
// known of it would add error, not remove it).
func (o Offset) Significant() bool {
	return o.Offset > o.Uncertainty || -o.Offset > o.Uncertainty
}

// checkClock validates a clock offset's wire form.
func checkClock(field string, uncertaintyNS int64) error {
	if uncertaintyNS < 0 {
		return errkind.Usagef(field, "%d is negative", uncertaintyNS)
	}
	return nil
}
