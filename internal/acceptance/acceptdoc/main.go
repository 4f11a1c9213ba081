// Command acceptdoc rewrites the acceptance section of docs/BENCHMARKS.md
// from the figures `make acceptance` wrote:
//
//	go run ./internal/acceptance/acceptdoc out/acceptance docs/BENCHMARKS.md
//
// It exits 1 with one line when the figures or the document cannot be read
// or written, and 2 on bad usage.
package main

import (
	"fmt"
	"os"

	"github.com/kplan-dev/kplan/internal/acceptance"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: acceptdoc FIGURES_DIR BENCHMARKS.md")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintf(os.Stderr, "acceptdoc: %v\n", err)
		os.Exit(1)
	}
}

func run(dir, doc string) error {
	figs, err := acceptance.Read(dir)
	if err != nil {
		return err
	}
	if len(figs) == 0 {
		return fmt.Errorf("no figures in %s (run the acceptance tests first)", dir)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		return fmt.Errorf("read %s: %w", doc, err)
	}
	out, err := acceptance.UpdateSection(string(b), acceptance.Markdown(figs))
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	if err := os.WriteFile(doc, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", doc, err)
	}
	return nil
}
