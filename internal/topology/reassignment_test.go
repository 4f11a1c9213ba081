package topology

import (
	"encoding/json"
	"testing"
)

// FuzzAppendJSONString: the fast path writes what encoding/json writes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "topic-0001", "a.b_c-D9", `q"uote`, `back\slash`, "<&>", "tab\t", "é", "\x7f", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendJSONString(%q) = %s, want x%s", s, got, want)
		}
	})
}
