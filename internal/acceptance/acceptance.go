// Package acceptance holds kplan's statistical acceptance figures apart from
// its gate. `make test` checks what must always hold on real brokers
// (elections, zero loss, the plan applied, predictions computed, schemas,
// cleanup); figures measured on a loaded machine (a max/mean skew, shares
// within N points, a link's MB/s, a delay) are acceptance figures, checked by
// `make acceptance` in tests built only under the `acceptance` tag
// (`//go:build acceptance`).
//
// An acceptance test measures each figure Repeat() times (ACCEPT_REPEAT,
// default 5) and hands the samples to Check with its bound. Check computes
// the mean's two-sided Student-t confidence interval at Level
// (stats.MeanCI) and fails when the interval's wrong end crosses the bound:
// for an upper bound (AtMost) when its high end is above the bound, for a
// lower bound (AtLeast) when its low end is below it. The figure is met only
// when the whole interval lies on the bound's side. Every figure, met or
// not, is written as JSON to Dir() (ACCEPT_OUT, default out/acceptance under
// the module root), from which `make acceptance` rewrites the acceptance
// section of docs/BENCHMARKS.md (see Markdown and UpdateSection).
package acceptance

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/stats"
)

// Level is the confidence level of every interval.
const Level = 0.95

// DefaultRepeat is the number of measurements of each figure when
// ACCEPT_REPEAT is not set.
const DefaultRepeat = 5

// Kind says on which side of its bound a figure must lie.
type Kind string

const (
	// AtMost figures must not exceed their bound.
	AtMost Kind = "at_most"
	// AtLeast figures must not fall below their bound.
	AtLeast Kind = "at_least"
)

// Figure is one acceptance figure: its samples, their interval, its bound
// and the verdict.
type Figure struct {
	// Name identifies the figure, e.g. "chaos/lab-kill-3/sqf/after/max-over-mean".
	Name string `json:"name"`
	// Test is the Go test that measured it.
	Test string `json:"test"`
	// Unit names the figure's unit ("" for a ratio).
	Unit string `json:"unit,omitempty"`
	// Kind and Bound state the requirement.
	Kind  Kind    `json:"kind"`
	Bound float64 `json:"bound"`
	// Samples are the measurements, in order.
	Samples []float64 `json:"samples"`
	// Interval is the mean's confidence interval.
	Interval stats.Interval `json:"interval"`
	// Met tells whether the whole interval lies on the bound's side.
	Met bool `json:"met"`
	// Measured is when the figure was checked (UTC).
	Measured time.Time `json:"measured"`
}

// Evaluate computes the figure's interval and verdict. It needs at least
// two samples, all finite.
func Evaluate(name string, kind Kind, bound float64, samples []float64) (Figure, error) {
	f := Figure{Name: name, Kind: kind, Bound: bound, Samples: samples}
	if kind != AtMost && kind != AtLeast {
		return f, fmt.Errorf("figure %s: unknown kind %q", name, kind)
	}
	for i, x := range samples {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return f, fmt.Errorf("figure %s: sample %d is %v", name, i+1, x)
		}
	}
	iv, err := stats.MeanCI(samples, Level)
	if err != nil {
		return f, fmt.Errorf("figure %s: %w", name, err)
	}
	f.Interval = iv
	switch kind {
	case AtMost:
		f.Met = iv.High <= bound
	case AtLeast:
		f.Met = iv.Low >= bound
	}
	return f, nil
}

// Repeat is the number of times each figure is measured: ACCEPT_REPEAT, or
// DefaultRepeat. A value below 2 (no interval) or not a number fails t.
func Repeat(t testing.TB) int {
	t.Helper()
	n, err := repeat(os.Getenv("ACCEPT_REPEAT"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func repeat(s string) (int, error) {
	if s == "" {
		return DefaultRepeat, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 {
		return 0, fmt.Errorf("ACCEPT_REPEAT=%q: want a whole number of at least 2 (a confidence interval needs two samples)", s)
	}
	return n, nil
}

// Check evaluates a figure, writes it to Dir() and fails t (without
// stopping it) when the figure is not met.
func Check(t testing.TB, name, unit string, kind Kind, bound float64, samples []float64) {
	t.Helper()
	f, err := Evaluate(name, kind, bound, samples)
	if err != nil {
		t.Errorf("acceptance: %v", err)
		return
	}
	f.Test, f.Unit, f.Measured = t.Name(), unit, time.Now().UTC().Truncate(time.Second)
	if err := Write(Dir(), f); err != nil {
		t.Errorf("acceptance: %v", err)
	}
	t.Logf("%s: mean %.4g, %.0f%% CI [%.4g, %.4g], %s %.4g: %s (samples %v)",
		name, f.Interval.Mean, 100*Level, f.Interval.Low, f.Interval.High, f.Kind, bound, verdict(f.Met), samples)
	if !f.Met {
		t.Errorf("acceptance figure %s not met: %.0f%% CI [%.4g, %.4g] crosses the bound (%s %.4g)",
			name, 100*Level, f.Interval.Low, f.Interval.High, f.Kind, bound)
	}
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}

// Dir is where figures are written: ACCEPT_OUT, or out/acceptance under the
// module root (the first parent directory holding go.mod).
func Dir() string {
	if d := os.Getenv("ACCEPT_OUT"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join("out", "acceptance")
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "out", "acceptance")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(wd, "out", "acceptance")
		}
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// FileName is the file a figure is written to inside the directory.
func FileName(name string) string {
	return unsafeName.ReplaceAllString(name, "_") + ".json"
}

// Write writes f as indented JSON to dir/FileName(f.Name).
func Write(dir string, f Figure) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write figure %s: %w", f.Name, err)
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("write figure %s: %w", f.Name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName(f.Name)), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write figure %s: %w", f.Name, err)
	}
	return nil
}

// Read reads every figure in dir, sorted by name. A JSON file that is no
// figure (no name, or a kind other than AtMost and AtLeast) is an error
// naming the file: the directory holds figures only, and a stray file
// would otherwise become an empty row of the table.
func Read(dir string) ([]Figure, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("read figures: %w", err)
	}
	var out []Figure
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read figures: %w", err)
		}
		var f Figure
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("read figure %s: %w", p, err)
		}
		switch {
		case f.Name == "":
			return nil, fmt.Errorf("read figure %s: field name: missing (not an acceptance figure; keep other files out of this directory)", p)
		case f.Kind != AtMost && f.Kind != AtLeast:
			return nil, fmt.Errorf("read figure %s: field kind: %q is neither %q nor %q", p, f.Kind, AtMost, AtLeast)
		}
		out = append(out, f)
	}
	sortFigures(out)
	return out, nil
}

func sortFigures(fs []Figure) {
	slices.SortStableFunc(fs, func(a, b Figure) int { return strings.Compare(a.Name, b.Name) })
}

// Markdown renders figures as the body of the acceptance section: one table
// row per figure, sorted by name.
func Markdown(fs []Figure) string {
	fs = append([]Figure(nil), fs...)
	sortFigures(fs)
	var b strings.Builder
	fmt.Fprintf(&b, "Written by `make acceptance` (ACCEPT_REPEAT samples per figure, %.0f%% Student-t\n", 100*Level)
	b.WriteString("interval of the mean; a figure is met when the whole interval lies on its\n")
	b.WriteString("bound's side). Command: `make acceptance ACCEPT_REPEAT=5`.\n\n")
	b.WriteString("| figure | test | n | mean | interval | bound | met | measured |\n")
	b.WriteString("| --- | --- | ---: | ---: | --- | --- | --- | --- |\n")
	for _, f := range fs {
		op := "<="
		if f.Kind == AtLeast {
			op = ">="
		}
		unit := ""
		if f.Unit != "" {
			unit = " " + f.Unit
		}
		met := "yes"
		if !f.Met {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.4g%s | [%.4g, %.4g] | %s %.4g%s | %s | %s |\n",
			f.Name, f.Test, f.Interval.N, f.Interval.Mean, unit, f.Interval.Low, f.Interval.High, op, f.Bound, unit, met, f.Measured.Format("2006-01-02"))
	}
	return b.String()
}

// Section markers delimit the part of docs/BENCHMARKS.md that
// UpdateSection owns.
const (
	BeginMarker = "<!-- acceptance:begin (make acceptance rewrites this section) -->"
	EndMarker   = "<!-- acceptance:end -->"
)

// UpdateSection replaces the text between BeginMarker and EndMarker in doc
// with body; a doc without the markers gets a new section at its end.
func UpdateSection(doc, body string) (string, error) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	switch {
	case i < 0 && j < 0:
		if !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		return doc + "\n## Acceptance figures (`make acceptance`)\n\n" + BeginMarker + "\n" + body + EndMarker + "\n", nil
	case i < 0 || j < i:
		return "", errors.New("the acceptance markers are out of order or one is missing")
	}
	return doc[:i+len(BeginMarker)] + "\n" + body + doc[j:], nil
}
