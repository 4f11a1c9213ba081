package report

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleDoc() Document {
	return Document{
		Title: "Result",
		Sections: []Section{
			{Title: "Brokers", Header: []string{"ID", "LEADERS"}, Rows: [][]string{{"1", "10"}, {"1002", "a|b"}}, Notes: []string{"note one"}},
		},
		Notes: []string{"done"},
	}
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr bool
	}{
		{"table", Table, false},
		{"JSON", JSON, false},
		{"yaml", YAML, false},
		{"markdown", Markdown, false},
		{"md", Markdown, false},
		{"xml", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFormat(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "unknown output format")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, sampleDoc()))
	assert.Equal(t, "Result\n\nBrokers\nID    LEADERS\n1     10\n1002  a|b\nnote one\n\ndone\n", b.String())
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, sampleDoc()))
	assert.Equal(t, "# Result\n\n## Brokers\n\n| ID | LEADERS |\n| --- | --- |\n| 1 | 10 |\n| 1002 | a\\|b |\n\nnote one\n\ndone\n", b.String())
}

type sample struct {
	Name   string         `json:"name"`
	Counts map[string]int `json:"counts"`
	List   []int          `json:"list,omitempty"`
}

func TestWriteJSONAndYAMLAgree(t *testing.T) {
	v := sample{Name: "x<y", Counts: map[string]int{"b": 2, "a": 1}, List: []int{3, 1}}
	var j, y bytes.Buffer
	require.NoError(t, WriteJSON(&j, v))
	require.NoError(t, WriteYAML(&y, v))
	assert.Equal(t, "{\n  \"name\": \"x<y\",\n  \"counts\": {\n    \"a\": 1,\n    \"b\": 2\n  },\n  \"list\": [\n    3,\n    1\n  ]\n}\n", j.String())
	assert.Equal(t, "name: x<y\ncounts:\n  a: 1\n  b: 2\nlist:\n  - 3\n  - 1\n", y.String())
}

func TestRenderDispatch(t *testing.T) {
	called := 0
	doc := func() Document { called++; return sampleDoc() }
	var b bytes.Buffer
	require.NoError(t, Render(&b, JSON, sample{Name: "n"}, doc))
	assert.Equal(t, 0, called, "machine formats must not build the document")
	assert.Contains(t, b.String(), `"name": "n"`)
	b.Reset()
	require.NoError(t, Render(&b, Table, nil, doc))
	assert.Equal(t, 1, called)
	assert.Contains(t, b.String(), "LEADERS")
}

// Files people hand on are written 0644 less the umask, not os.CreateTemp's
// 0600 (a regression: plans, reports and PNGs were 0600).
func TestWriteFileAtomicMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, WriteFileAtomic(path, []byte("{}\n")))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temp file left behind")
}
