package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stdIndented is what WriteJSON wrote before writeIndented: encoding/json's
// Encoder with SetIndent("", "  ") and no HTML escaping.
func stdIndented(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return buf.Bytes()
}

func TestWriteJSONEqualsEncoderIndent(t *testing.T) {
	type inner struct {
		Name  string             `json:"name"`
		Tags  []string           `json:"tags"`
		Empty map[string]int     `json:"empty"`
		Nil   []int              `json:"nil"`
		M     map[string]any     `json:"m,omitempty"`
		Raw   json.RawMessage    `json:"raw,omitempty"`
		Nums  []float64          `json:"nums"`
		Deep  map[string][][]int `json:"deep"`
	}
	cases := map[string]any{
		"scalar":         42,
		"string":         "a \"quoted\" \\ string, with: {braces} [and] <html> & \u2028",
		"empty object":   struct{}{},
		"empty array":    []int{},
		"null":           nil,
		"nested empties": map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{[]any{}, map[string]any{}}},
		"struct": inner{Name: `x"y\`, Tags: []string{"a", `b\"`, "c\\\\"}, Empty: map[string]int{},
			M: map[string]any{"k": []any{1, "two", 3.5, true, nil}}, Raw: json.RawMessage(`{"r":[1,2]}`),
			Nums: []float64{-1.5e-7, 0, 1e21}, Deep: map[string][][]int{"d": {{1, 2}, {}, {3}}}},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			require.NoError(t, WriteJSON(&got, v))
			require.Equal(t, string(stdIndented(t, v)), got.String())
		})
	}
}

// randomValue builds a random JSON value: objects, arrays, strings full of
// quotes, backslashes and structural bytes, numbers and literals.
func randomValue(r *rand.Rand, depth int) any {
	k := r.IntN(7)
	if depth > 4 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return r.IntN(2000) - 1000
	case 1:
		return randomString(r)
	case 2:
		return []any{nil, true, false}[r.IntN(3)]
	case 3:
		return r.Float64() * 1e6
	case 4, 5:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for i := range r.IntN(4) {
			m[string(rune('a'+i))+randomString(r)] = randomValue(r, depth+1)
		}
		return m
	}
}

// randomString is a short string of quotes, backslashes, structural bytes
// and multi-byte runes.
func randomString(r *rand.Rand) string {
	alphabet := []string{"a", "\"", "\\", ",", ":", "{", "}", "[", "]", " ", "\n", "é", "\\\"", "<"}
	var sb strings.Builder
	for range r.IntN(8) {
		sb.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

func TestWriteJSONEqualsEncoderIndentRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		v := randomValue(r, 0)
		var got bytes.Buffer
		require.NoError(t, WriteJSON(&got, v))
		require.Equal(t, string(stdIndented(t, v)), got.String(), "value %d: %#v", i, v)
	}
}

// FuzzWriteIndented: for any valid JSON document, compacted as Marshal
// would write it, writeIndented equals json.Indent.
func FuzzWriteIndented(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"c\"}"}],"d":{}}`, `"x\\"`, `[[],[[]],{"":""}]`, `1e-7`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, []byte(s)))
		var want, got bytes.Buffer
		require.NoError(t, json.Indent(&want, compact.Bytes(), "", "  "))
		require.NoError(t, writeIndented(&got, compact.Bytes()))
		require.Equal(t, want.String(), got.String())
	})
}

// BenchmarkWriteJSON compares the Encoder's indent with writeIndented on a
// what-if-like document: 200,000 elections.
func BenchmarkWriteJSON(b *testing.B) {
	type election struct {
		Topic     string `json:"topic"`
		Partition int    `json:"partition"`
		NewLeader int    `json:"new_leader"`
	}
	doc := struct {
		Elections []election `json:"elections"`
	}{}
	for i := range 200_000 {
		doc.Elections = append(doc.Elections, election{Topic: "topic-00020", Partition: i % 97, NewLeader: i % 1000})
	}
	b.Run("encoder-indent", func(b *testing.B) {
		for b.Loop() {
			enc := json.NewEncoder(ioDiscard{})
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteJSON", func(b *testing.B) {
		for b.Loop() {
			if err := WriteJSON(ioDiscard{}, doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type ioDiscard struct{}

func (ioDiscard) Write(p []byte) (int, error) { return len(p), nil }

// TestIndentWriterPieces: written in pieces (as a json.Encoder could),
// the indented output is the one of the whole value in one Write.
func TestIndentWriterPieces(t *testing.T) {
	src := []byte(`{"a":[1,{"b":"x,y:{z}"}],"c":{},"d":[]}` + "\n")
	var whole bytes.Buffer
	require.NoError(t, writeIndented(&whole, src))
	for _, cut := range []int{1, 5, 17, len(src) - 1} {
		var b bytes.Buffer
		iw := &indentWriter{w: &b}
		for _, part := range [][]byte{src[:cut], src[cut:]} {
			n, err := iw.Write(part)
			require.NoError(t, err)
			require.Equal(t, len(part), n)
		}
		require.Equal(t, whole.String(), b.String(), "cut at %d", cut)
		require.Empty(t, iw.pending)
	}
}
