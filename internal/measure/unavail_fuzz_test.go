package measure

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParsePartitionCounts: the --partitions list parser never panics, and
// what it accepts is ascending, in range, without repeats, and reads back
// the same when printed.
func FuzzParsePartitionCounts(f *testing.F) {
	for _, s := range []string{"1,10,100,1000", "1,10,50", "100", " 7 , 3", "", ",", "1,1", "0", "-1", "1e3", "10001", "9999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParsePartitionCounts(s)
		if err != nil {
			if got != nil {
				t.Fatalf("error %v with counts %v", err, got)
			}
			return
		}
		if len(got) == 0 || !slices.IsSorted(got) {
			t.Fatalf("%q: counts %v not ascending and non-empty", s, got)
		}
		parts := make([]string, len(got))
		for i, n := range got {
			if n < 1 || n > MaxUnavailPartitions || (i > 0 && got[i-1] == n) {
				t.Fatalf("%q: bad count %d in %v", s, n, got)
			}
			parts[i] = strconv.Itoa(n)
		}
		back, err := ParsePartitionCounts(strings.Join(parts, ","))
		if err != nil || !slices.Equal(back, got) {
			t.Fatalf("%q: %v does not read back: %v %v", s, got, back, err)
		}
	})
}
