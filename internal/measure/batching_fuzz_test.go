package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// FuzzParseLingers: --linger either parses into whole, distinct,
// non-negative milliseconds up to 1m, or fails as a usage error naming the
// linger field in one line.
func FuzzParseLingers(f *testing.F) {
	for _, s := range []string{"0,5ms,20ms,100ms", "0", "5ms", "1s,2s", "1m", "1500us", "5ms,5ms", "", ",", "-1ms", "5", "1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := ParseLingers(s)
		if err != nil {
			if errkind.FieldOf(err) != BatchFieldLinger || errkind.KindOf(err) != errkind.Usage {
				t.Fatalf("%q: error without the linger field or not a usage error: %v", s, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error on more than one line: %q", s, err)
			}
			return
		}
		if len(ls) == 0 {
			t.Fatalf("%q: no error and no linger", s)
		}
		seen := map[time.Duration]bool{}
		for _, l := range ls {
			if l < 0 || l > time.Minute || l%time.Millisecond != 0 || seen[l] {
				t.Fatalf("%q: bad linger %v in %v", s, l, ls)
			}
			seen[l] = true
		}
	})
}

// FuzzParseBatchSizes: --batch-size either parses into distinct sizes,
// each records or bytes (never both), that String prints back into the same
// size, or fails as a usage error naming the batch-size field in one line;
// MaxBytes never panics on what parsed.
func FuzzParseBatchSizes(f *testing.F) {
	for _, s := range []string{"1,4,10", "1,4,10,100", "16KiB", "16KiB,64KiB,256KiB", "1000B", "1MB", "0", "4x", "", "1,1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bs, err := ParseBatchSizes(s)
		if err != nil {
			if errkind.FieldOf(err) != BatchFieldBatchSize || errkind.KindOf(err) != errkind.Usage {
				t.Fatalf("%q: error without the batch-size field or not a usage error: %v", s, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error on more than one line: %q", s, err)
			}
			return
		}
		seen := map[BatchSize]bool{}
		for _, b := range bs {
			if (b.Records > 0) == (b.Bytes > 0) || b.Records < 0 || b.Bytes < 0 || seen[b] {
				t.Fatalf("%q: bad size %+v in %v", s, b, bs)
			}
			seen[b] = true
			back, err := ParseBatchSizes(b.String())
			if err != nil || len(back) != 1 || back[0] != b {
				t.Fatalf("%q: %+v prints as %q, which parses as %v, %v", s, b, b.String(), back, err)
			}
			if b.Records <= 2000 { // bound the loop's work
				if _, err := b.MaxBytes(512); err != nil && errkind.KindOf(err) != errkind.Usage {
					t.Fatalf("%q: MaxBytes: %v", s, err)
				}
			}
		}
	})
}
