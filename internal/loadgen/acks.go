package loadgen

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Acks is a producer's acknowledgement level, with Kafka's values.
type Acks int8

// The acknowledgement levels: Kafka's acks=0, 1 and all (-1).
const (
	AcksNone   Acks = 0
	AcksLeader Acks = 1
	AcksAll    Acks = -1
)

// FieldAcks is the field ParseAcks's errors name.
const FieldAcks = "acks"

// ParseAcks reads an acknowledgement level as Kafka spells it: "0", "1",
// "all" or "-1". A bad one is a usage error naming FieldAcks.
func ParseAcks(s string) (Acks, error) {
	switch s {
	case "0":
		return AcksNone, nil
	case "1":
		return AcksLeader, nil
	case "all", "-1":
		return AcksAll, nil
	}
	return 0, errkind.Usagef(FieldAcks, "%q: want 0, 1 or all", s)
}

// String is the Kafka spelling: "0", "1" or "all".
func (a Acks) String() string {
	if a == AcksAll {
		return "all"
	}
	return strconv.Itoa(int(a))
}

// Idempotent reports whether a producer at this level writes idempotently:
// only at acks=all (Kafka requires acks=all for idempotence).
func (a Acks) Idempotent() bool { return a == AcksAll }

// ProducerOpts are franz-go's settings for the level: idempotence only with
// acks=all (Kafka requires it there and refuses it otherwise).
func (a Acks) ProducerOpts() []kgo.Opt {
	switch a {
	case AcksNone:
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}
	case AcksLeader:
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}
	default:
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
	}
}
