package audit

import (
	"strings"
	"testing"
)

// FuzzParseRatesFile: a --rates-file never panics the parser; every error
// names the file (file:line where a line is at fault) on one line; and
// what parses has named topics with rates that are numbers, not negative.
// A JSON body is a kplan observe snapshot (ParseSnapshotRates).
func FuzzParseRatesFile(f *testing.F) {
	for _, s := range []string{
		"A=3\nB=1\n",
		"# the §6.4 workload\nA 2MB/s\nB 1MB/s\n",
		"orders-eu=2\n*=1\n",
		"A=200kB/s\nB=100kB/s\n",
		"A=3\nB=3\nC=1\nD=1\n",
		"A=1\nB=fast\n",
		"A=1,B=2\n",
		"\n\n#\n",
		"A=1\r\nB=1MB/s\r\n",
		"x " + strings.Repeat("9", 400) + "\n",
		`{"version":1,"observe_schema":1,"partitions":[],"observe":{"traffic":true,"window_seconds":10,"topics":[{"topic":"A","produce":{"bytes_per_second":{"mean":3000000}}}]}}`,
		`{"observe_schema":1,"observe":{"traffic":false}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r, err := ParseRatesFile([]byte(body), "r.txt")
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "r.txt") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			return
		}
		for topic, v := range r.ByTopic {
			if topic == "" || !(v >= 0) {
				t.Fatalf("topic %q rate %v", topic, v)
			}
		}
		if !(r.Default >= 0) {
			t.Fatalf("default rate %v", r.Default)
		}
	})
}
