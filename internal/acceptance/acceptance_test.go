package acceptance

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/stats"
)

func TestEvaluate(t *testing.T) {
	tight := []float64{1.00, 1.01, 1.02, 1.01, 1.00} // mean 1.008, 95% CI about [0.998, 1.018]
	tests := []struct {
		name    string
		kind    Kind
		bound   float64
		samples []float64
		met     bool
	}{
		{"upper bound above the whole interval", AtMost, 1.05, tight, true},
		{"upper bound inside the interval: the high end crosses it", AtMost, 1.01, tight, false},
		{"upper bound below the whole interval", AtMost, 0.9, tight, false},
		{"lower bound below the whole interval", AtLeast, 0.95, tight, true},
		{"lower bound inside the interval: the low end crosses it", AtLeast, 1.005, tight, false},
		{"lower bound above the whole interval", AtLeast, 1.25, tight, false},
		{"a wide interval fails although its mean is in bound", AtMost, 1.05, []float64{0.9, 1.2, 0.95, 1.1, 0.85}, false},
		{"constant samples: the interval is the point", AtLeast, 5, []float64{5, 5, 5}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Evaluate("x", tt.kind, tt.bound, tt.samples)
			require.NoError(t, err)
			want, err := stats.MeanCI(tt.samples, Level)
			require.NoError(t, err)
			assert.Equal(t, want, f.Interval)
			assert.Equal(t, tt.met, f.Met)
			// The verdict is the interval's wrong end against the bound.
			if tt.kind == AtMost {
				assert.Equal(t, f.Interval.High <= tt.bound, f.Met)
			} else {
				assert.Equal(t, f.Interval.Low >= tt.bound, f.Met)
			}
		})
	}
}

func TestEvaluateRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		kind    Kind
		samples []float64
		want    string
	}{
		"one sample": {AtMost, []float64{1}, "at least 2 samples"},
		"no kind":    {Kind("about"), []float64{1, 2}, "unknown kind"},
		"not finite": {AtLeast, []float64{1, math.NaN()}, "sample 2"},
		"no sample":  {AtLeast, nil, "at least 2 samples"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Evaluate("fig", tc.kind, 1, tc.samples)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "fig")
		})
	}
}

func TestRepeat(t *testing.T) {
	for in, want := range map[string]int{"": DefaultRepeat, "2": 2, "20": 20} {
		n, err := repeat(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, n, in)
	}
	for _, in := range []string{"1", "0", "-3", "five", "2.5"} {
		_, err := repeat(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), "ACCEPT_REPEAT")
	}
}

func TestWriteReadMarkdown(t *testing.T) {
	dir := t.TempDir()
	b, err := Evaluate("z/link/mbps", AtLeast, 3.5, []float64{5, 5.1, 4.9})
	require.NoError(t, err)
	b.Unit, b.Test = "MB/s", "TestAcceptB"
	a, err := Evaluate("a/skew", AtMost, 1.05, []float64{1.2, 1.3, 1.25})
	require.NoError(t, err)
	a.Test = "TestAcceptA"
	require.NoError(t, Write(dir, b))
	require.NoError(t, Write(dir, a))
	got, err := Read(dir)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "a/skew", got[0].Name, "sorted by name")
	assert.Equal(t, b.Samples, got[1].Samples)

	md := Markdown(got)
	lines := strings.Split(strings.TrimSpace(md), "\n")
	assert.Contains(t, lines[len(lines)-2], "| a/skew | TestAcceptA | 3 |")
	assert.Contains(t, lines[len(lines)-2], "| <= 1.05 | **no** |")
	assert.Contains(t, lines[len(lines)-1], "| z/link/mbps | TestAcceptB | 3 | 5 MB/s |")
	assert.Contains(t, lines[len(lines)-1], ">= 3.5 MB/s | yes |")
}

func TestFileName(t *testing.T) {
	assert.Equal(t, "chaos_lab_sqf_after.json", FileName("chaos/lab sqf/after"))
}

func TestUpdateSection(t *testing.T) {
	doc := "# B\n\ntext\n"
	once, err := UpdateSection(doc, "| one |\n")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(once, doc), "the rest of the document is kept")
	assert.Contains(t, once, BeginMarker+"\n| one |\n"+EndMarker)

	twice, err := UpdateSection(once+"\n## After\n", "| two |\n")
	require.NoError(t, err)
	assert.NotContains(t, twice, "| one |")
	assert.Contains(t, twice, BeginMarker+"\n| two |\n"+EndMarker)
	assert.True(t, strings.HasSuffix(twice, "\n## After\n"), "text after the section is kept")
	assert.Equal(t, 1, strings.Count(twice, BeginMarker))

	_, err = UpdateSection("x "+EndMarker+" "+BeginMarker, "y")
	assert.Error(t, err)
	_, err = UpdateSection("x "+BeginMarker, "y")
	assert.Error(t, err)
}

func TestReadRefusesAFileThatIsNoFigure(t *testing.T) {
	for _, tc := range []struct{ name, body, field string }{
		{"detail", `{"workload": "chaos/failover-5.yaml", "kills": []}`, "field name"},
		{"kind", `{"name": "x", "kind": "about"}`, "field kind"},
		{"json", `{"name": `, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := Evaluate("ok", AtMost, 2, []float64{1, 1.1})
			require.NoError(t, err)
			require.NoError(t, Write(dir, f))
			p := filepath.Join(dir, "stray.json")
			require.NoError(t, os.WriteFile(p, []byte(tc.body), 0o644))
			_, err = Read(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), tc.field)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}
