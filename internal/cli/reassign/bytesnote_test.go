package reassign

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kplan-dev/kplan/internal/reassign/apply"
)

func TestBytesNote(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    *apply.ByteProgress
		want string
	}{
		{"unknown", nil, ""},
		{"no sizes", &apply.ByteProgress{}, ""},
		{"first poll", &apply.ByteProgress{Copied: 250_000_000, Total: 1_000_000_000, ETASeconds: -1}, "; copied 250MB of 1.00GB (25%)"},
		{"with a rate", &apply.ByteProgress{Copied: 500_000_000, Total: 1_000_000_000, RatePerSecond: 10_000_000, ETASeconds: 50}, "; copied 500MB of 1.00GB (50%) at 10.0MB/s, ETA 50s"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, bytesNote(tc.b)) })
	}
}
