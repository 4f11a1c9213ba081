// Package report renders command results as aligned text tables, Markdown,
// JSON or YAML. Commands build a Document (titled tables and notes) for the
// human formats and hand their result struct to the machine formats, so every
// verb prints the same way.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"gopkg.in/yaml.v3"
)

// Format is an output format accepted by -o/--output.
type Format string

// The output formats every verb offers.
const (
	Table    Format = "table"
	JSON     Format = "json"
	YAML     Format = "yaml"
	Markdown Format = "markdown"
)

// Formats lists the formats in the order help text shows them.
var Formats = []Format{Table, JSON, YAML, Markdown}

// ParseFormat validates a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == strings.ToLower(s) {
			return f, nil
		}
	}
	if strings.EqualFold(s, "md") {
		return Markdown, nil
	}
	return "", fmt.Errorf("unknown output format %q (want table, json, yaml or markdown)", s)
}

// Section is one titled table with optional notes under it.
type Section struct {
	Title  string
	Header []string
	Rows   [][]string
	Notes  []string
}

// Document is what a command shows a person: sections in order.
type Document struct {
	Title    string
	Sections []Section
	// Notes are printed after every section.
	Notes []string
}

// Render writes v (machine formats) or doc (human formats) to w.
// doc is only called for table and markdown.
func Render(w io.Writer, f Format, v any, doc func() Document) error {
	switch f {
	case JSON:
		return WriteJSON(w, v)
	case YAML:
		return WriteYAML(w, v)
	case Markdown:
		return WriteMarkdown(w, doc())
	default:
		return WriteTable(w, doc())
	}
}

// WriteJSON writes v as indented JSON with a trailing newline. Map keys are
// sorted by encoding/json, so output is stable.
//
// The value is encoded compact first and indented on the way out
// (writeIndented): the same bytes as an Encoder with SetIndent("", "  "),
// without its second in-memory copy.
func WriteJSON(w io.Writer, v any) error {
	iw := &indentWriter{w: w}
	enc := json.NewEncoder(iw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		if iw.err != nil {
			return iw.err
		}
		return fmt.Errorf("encoding json: %w", err)
	}
	if len(iw.pending) > 0 { // not ended by the Encoder's newline: cannot happen
		return writeIndented(w, iw.pending)
	}
	return nil
}

// WriteYAML writes v as YAML with the same field names as its JSON form
// (it goes through JSON first, so json tags and omitempty apply).
func WriteYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding yaml: %w", err)
	}
	var node yaml.Node
	if err := yaml.Unmarshal(b, &node); err != nil {
		return fmt.Errorf("encoding yaml: %w", err)
	}
	// JSON's flow and quoted styles would survive the round trip; reset them.
	setBlock(&node)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return fmt.Errorf("encoding yaml: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func setBlock(n *yaml.Node) {
	n.Style = 0 // let the encoder pick plain, quoted or block style
	for _, c := range n.Content {
		setBlock(c)
	}
}

// WriteTable writes doc as aligned plain-text tables.
func WriteTable(w io.Writer, doc Document) error {
	var b strings.Builder
	if doc.Title != "" {
		b.WriteString(doc.Title + "\n\n")
	}
	for i, s := range doc.Sections {
		if i > 0 {
			b.WriteString("\n")
		}
		if s.Title != "" {
			b.WriteString(s.Title + "\n")
		}
		if len(s.Header) > 0 || len(s.Rows) > 0 {
			tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
			if len(s.Header) > 0 {
				fmt.Fprintln(tw, strings.Join(s.Header, "\t"))
			}
			for _, r := range s.Rows {
				fmt.Fprintln(tw, strings.Join(r, "\t"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		for _, n := range s.Notes {
			b.WriteString(n + "\n")
		}
	}
	if len(doc.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range doc.Notes {
			b.WriteString(n + "\n")
		}
	}
	_, err := io.WriteString(w, trimTrailingSpaces(b.String()))
	return err
}

func trimTrailingSpaces(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// WriteMarkdown writes doc as GitHub-flavoured Markdown.
func WriteMarkdown(w io.Writer, doc Document) error {
	var b strings.Builder
	if doc.Title != "" {
		b.WriteString("# " + doc.Title + "\n\n")
	}
	for _, s := range doc.Sections {
		if s.Title != "" {
			b.WriteString("## " + s.Title + "\n\n")
		}
		if len(s.Header) > 0 {
			b.WriteString("| " + strings.Join(escapeCells(s.Header), " | ") + " |\n")
			seps := make([]string, len(s.Header))
			for i := range seps {
				seps[i] = "---"
			}
			b.WriteString("| " + strings.Join(seps, " | ") + " |\n")
			for _, r := range s.Rows {
				b.WriteString("| " + strings.Join(escapeCells(r), " | ") + " |\n")
			}
			b.WriteString("\n")
		}
		for _, n := range s.Notes {
			b.WriteString(n + "\n\n")
		}
	}
	for _, n := range doc.Notes {
		b.WriteString(n + "\n\n")
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func escapeCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return out
}
