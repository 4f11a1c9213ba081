package topology

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// seedLayouts adds every shipped layout (testdata/layouts) to f's corpus,
// and the snapshot kplan would save of each, so the fuzzers start from the
// inputs people actually hand kplan.
func seedLayouts(f *testing.F) {
	f.Helper()
	paths, err := filepath.Glob("../../testdata/layouts/*.json")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no layouts: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
		if c, err := Load(bytes.NewReader(b), p); err == nil {
			var s strings.Builder
			if err := WriteSnapshot(&s, c); err != nil {
				f.Fatal(err)
			}
			f.Add(s.String())
		}
	}
	f.Add(describe2x)
	f.Add(describe4x)
}

// FuzzLoad: Load (either format) never panics, fails with one line naming
// the input, and what it loads survives a snapshot round trip: the
// snapshot kplan saves (--save-snapshot) loads back to the same partitions.
func FuzzLoad(f *testing.F) {
	seedLayouts(f)
	f.Fuzz(func(t *testing.T, body string) {
		checkFastEqualsSlow(t, []byte(body))
		c, err := Load(strings.NewReader(body), "in.json")
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "in.json") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			return
		}
		var s strings.Builder
		if err := WriteSnapshot(&s, c); err != nil {
			t.Fatal(err)
		}
		back, err := Load(strings.NewReader(s.String()), "snap.json")
		if err != nil {
			t.Fatalf("snapshot of a loaded layout does not load: %v\n%s", err, s.String())
		}
		if len(back.Partitions) != len(c.Partitions) {
			t.Fatalf("snapshot has %d partitions, layout %d", len(back.Partitions), len(c.Partitions))
		}
		for i := range c.Partitions {
			a, b := c.Partitions[i], back.Partitions[i]
			if a.Key() != b.Key() || !equalIDs(a.Replicas, b.Replicas) || a.Leader != b.Leader || !equalIDs(a.ISR, b.ISR) ||
				a.SizeBytes != b.SizeBytes || a.LocalBytes != b.LocalBytes {
				t.Fatalf("partition %d: %+v came back as %+v", i, a, b)
			}
		}
	})
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzWriteElection: the election JSON kplan writes (--election-out, for
// kafka-leader-election --path-to-json-file) is valid JSON that reads back
// to the partitions written, whatever the topic name.
func FuzzWriteElection(f *testing.F) {
	f.Add("A", int32(0), "B", int32(1))
	f.Add("kplan-chaos-1", int32(2), "t\"x\\y", int32(0))
	f.Add("\u2028\x00\x1f", int32(-1), "", int32(2147483647))
	f.Fuzz(func(t *testing.T, t1 string, p1 int32, t2 string, p2 int32) {
		keys := []Key{{Topic: t1, Partition: p1}, {Topic: t2, Partition: p2}}
		var b bytes.Buffer
		if err := WriteElection(&b, keys); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Partitions []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, b.String())
		}
		if len(doc.Partitions) != 2 {
			t.Fatalf("%d partitions read back", len(doc.Partitions))
		}
		for i, k := range keys {
			got := doc.Partitions[i]
			if got.Partition != k.Partition || (utf8.ValidString(k.Topic) && got.Topic != k.Topic) {
				t.Fatalf("%+v read back as %+v", k, got)
			}
		}
	})
}
