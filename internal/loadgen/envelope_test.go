package loadgen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, e := range []Envelope{
		{},
		{Run: 1, Seq: 2, Sent: 3 * time.Millisecond, Producer: 4, Tag: 5},
		{Run: ^uint64(0), Seq: ^uint64(0), Sent: -time.Second, Producer: 255, Tag: 255},
	} {
		for _, size := range []int{EnvelopeLen, 100, 1 << 10} {
			v := Stamp(size, e)
			require.Len(t, v, size)
			got, ok := DecodeEnvelope(v)
			require.True(t, ok)
			assert.Equal(t, e, got)
		}
	}
	_, ok := DecodeEnvelope(make([]byte, EnvelopeLen-1))
	assert.False(t, ok, "too short for an envelope")
	assert.Len(t, Stamp(1, Envelope{}), EnvelopeLen, "a value always holds its envelope")
}

// TestEnvelopeLayout pins the byte layout: records of one version are read
// by the next (existing topics keep them), and RunHeader carries the run
// as the value's first 8 bytes do.
func TestEnvelopeLayout(t *testing.T) {
	v := Stamp(EnvelopeLen, Envelope{Run: 0x0102030405060708, Seq: 0x1112131415161718, Sent: 0x2122232425262728, Producer: 0x31, Tag: 0x32})
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x31, 0x32}, v)
	assert.Equal(t, v[:8], RunHeaderValue(0x0102030405060708))
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte{})
	f.Add(Stamp(EnvelopeLen, Envelope{Run: 7, Seq: 1, Sent: time.Second, Producer: 2, Tag: 3}))
	f.Add(Stamp(40, Envelope{Run: ^uint64(0)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := DecodeEnvelope(b)
		if !ok {
			if len(b) >= EnvelopeLen {
				t.Fatalf("%d bytes hold an envelope", len(b))
			}
			return
		}
		// Decoding then stamping gives the same first EnvelopeLen bytes.
		assert.Equal(t, b[:EnvelopeLen], Stamp(EnvelopeLen, e))
	})
}

func TestAcks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Acks
		str  string
	}{{"0", AcksNone, "0"}, {"1", AcksLeader, "1"}, {"all", AcksAll, "all"}, {"-1", AcksAll, "all"}} {
		got, err := ParseAcks(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got)
		assert.Equal(t, tc.str, got.String())
		assert.Equal(t, tc.want == AcksAll, got.Idempotent())
		assert.NotEmpty(t, got.ProducerOpts())
	}
	for _, bad := range []string{"", "2", "ALL", " 1"} {
		_, err := ParseAcks(bad)
		assert.ErrorContains(t, err, "want 0, 1 or all", bad)
	}
}
