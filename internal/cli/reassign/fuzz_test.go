package reassign

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/internal/topology"
)

// formatBrokers writes brokers back as a --brokers list, one ID or ID:RACK
// an entry.
func formatBrokers(bs []topology.Broker) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = strconv.Itoa(int(b.ID))
		if b.Rack != "" {
			parts[i] += ":" + b.Rack
		}
	}
	return strings.Join(parts, ",")
}

// FuzzParseBrokers: a --brokers list never panics the parser, parses to
// distinct non-negative IDs in order, and what parses reads back the same
// written out entry by entry.
func FuzzParseBrokers(f *testing.F) {
	for _, s := range []string{"1-3,4:new-rack-1", "1-4,5:new-rack-1", "1-503", "1000", "3",
		"1737,1739,1743,1745,1746,1752,1754,1755,1756,1759,1763,1764,1767,1768,1770,1792,1860,1872,1873,1874,1876,1962,2000",
		"1:a,2:b,3:c", "1-2:r", "", ",", "3-1", "-1", "1,1", "0-100001", "1:a:b", " 2 : x ", "+5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bs, err := ParseBrokers(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for i, b := range bs {
			if b.ID < 0 || (i > 0 && b.ID <= bs[i-1].ID) {
				t.Fatalf("%q: broker ids not distinct and sorted: %+v", s, bs)
			}
		}
		back, err := ParseBrokers(formatBrokers(bs))
		if err != nil {
			t.Fatalf("%q: written back as %q does not parse: %v", s, formatBrokers(bs), err)
		}
		if len(back) != len(bs) {
			t.Fatalf("%q: %+v came back as %+v", s, bs, back)
		}
		for i := range bs {
			if back[i] != bs[i] {
				t.Fatalf("%q: %+v came back as %+v", s, bs, back)
			}
		}
	})
}
