// Package generate implements `kplan generate`, synthetic inputs for tests,
// benchmarks and demos.
package generate

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Options are the parsed flags of `kplan generate layout`.
type Options struct {
	IO     *iostreams.IOStreams
	Layout topology.GenOptions
	Seed   uint64
	// Out is the file to write (atomically); empty means stdout.
	Out string
	// Format is the summary's format, printed when Out is set.
	Format report.Format
}

// Summary is what `kplan generate layout --out FILE` prints: what it
// wrote, in the -o format.
type Summary struct {
	Schema            string `json:"schema"`
	Out               string `json:"out"`
	Bytes             int    `json:"bytes"`
	Brokers           int    `json:"brokers"`
	Racks             int    `json:"racks"`
	Topics            int    `json:"topics"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Seed              uint64 `json:"seed"`
}

// NewCmdGenerate returns `kplan generate` with its `layout` subcommand.
// runF replaces the run function in tests.
func NewCmdGenerate(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Generate synthetic inputs for tests, benchmarks and demos",
		Example: `  $ kplan generate layout --brokers 6 --topics 20 --partitions 120 --replication-factor 3 --seed 7 --out /tmp/layout.json
  $ kplan audit --from /tmp/layout.json`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newCmdLayout(f, runF))
	return cmd
}

func newCmdLayout(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	var firstID int
	var sizes string
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "layout --brokers N --topics T --partitions P --replication-factor R [flags]",
		Short: "Write a synthetic cluster layout as Kafka's reassignment JSON",
		Long: `Write a synthetic cluster layout as Kafka's reassignment JSON, the form
kplan audit --from reads, plus kplan's "brokers" key with every broker and
its rack (Kafka's tools ignore it). It is a testing and demo aid: the same
flags and --seed always give the same file.

--partitions is the total over all topics (each topic gets at least one).
Topics are placed as Kafka places a new topic (a random first broker,
leaders round robin from it, followers at a random shift; rack-aware with
--racks). --skew spreads the partition counts over topics like Zipf's law;
--cells keeps each topic inside one of that many disjoint broker cells (less
overlap); --scatter places that fraction of topics on random brokers (more
overlap); --uneven packs that fraction of topics onto fewer leader brokers
than partitions (thesis Fig 3.8).

--sizes draws every partition's size ("size_bytes", read by kplan reassign
--balance bytes) from a heavy-tailed distribution, seeded by --seed:
lognormal:median=SIZE,sigma=X (size = median·e^(sigma·Z); sigma 2 puts the
largest of 100,000 partitions about 5,000x the median) or
pareto:alpha=X,min=SIZE (alpha 1.2: a few partitions hold much of the data).
Sizes take B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB). The placement of a
seed is the same with or without --sizes.

With --out the layout goes to that file and a summary of it to stdout, as
a table or in the -o format; without --out stdout is the layout itself.`,
		Example: `  $ kplan generate layout --brokers 6 --topics 20 --partitions 120 --replication-factor 3 --seed 7
  $ kplan generate layout --brokers 6 --topics 20 --partitions 120 --replication-factor 3 | kplan audit --from -
  $ kplan generate layout --brokers 1000 --topics 30000 --partitions 2000000 --replication-factor 3 --out /tmp/big.json
  $ kplan generate layout --brokers 1000 --topics 30000 --partitions 2000000 --replication-factor 3 --scatter 1 --out /tmp/scattered.json -o json
  $ kplan generate layout --brokers 12 --racks 3 --topics 40 --partitions 400 --replication-factor 3 --skew 1 --scatter 0.2 --uneven 0.1
  $ kplan generate layout --brokers 9 --racks 3 --cells 3 --topics 30 --partitions 180 --replication-factor 3 --out /tmp/cells.json
  $ kplan generate layout --brokers 100 --racks 3 --topics 1000 --partitions 100000 --sizes lognormal:median=1GiB,sigma=2 --out /tmp/sized.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Format, err = out.Format(); err != nil {
				return err
			}
			if cmd.Flags().Changed("output") && opts.Out == "" {
				return errkind.Usagef("", "--output: the summary is printed only with --out; without it stdout is the layout")
			}
			if firstID < 0 || firstID > 1<<31-1 {
				return errkind.Usagef("", "--first-id: %d is out of range", firstID)
			}
			opts.Layout.FirstID = int32(firstID)
			if sizes != "" {
				d, err := topology.ParseSizeDist(sizes)
				if err != nil {
					return errkind.Usagef("", "--sizes: %w", err)
				}
				opts.Layout.Sizes = &d
			}
			if err := opts.Layout.Validate(); err != nil {
				return errkind.Usagef("", "--%w", err)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runLayout(opts)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&opts.Layout.Brokers, "brokers", 6, "number of brokers")
	fs.IntVar(&firstID, "first-id", 1, "id of the first broker; the others follow")
	fs.IntVar(&opts.Layout.Topics, "topics", 10, "number of topics")
	fs.IntVar(&opts.Layout.Partitions, "partitions", 60, "total number of partitions over all topics")
	fs.IntVar(&opts.Layout.ReplicationFactor, "replication-factor", 3, "replicas per partition")
	fs.IntVar(&opts.Layout.Racks, "racks", 0, "spread brokers over this many racks and place replicas rack-aware (0: no racks)")
	fs.Float64Var(&opts.Layout.Skew, "skew", 0, "Zipf exponent of partition counts over topics (0: even)")
	fs.IntVar(&opts.Layout.Cells, "cells", 0, "place each topic inside one of this many disjoint broker cells (0: one cell)")
	fs.Float64Var(&opts.Layout.Scatter, "scatter", 0, "fraction of topics placed on random brokers (partial overlap)")
	fs.Float64Var(&opts.Layout.Uneven, "uneven", 0, "fraction of topics led unevenly by fewer brokers than partitions")
	fs.StringVar(&sizes, "sizes", "", "draw partition sizes: lognormal:median=1GiB,sigma=2 or pareto:alpha=1.2,min=64MiB (default: none)")
	fs.Uint64Var(&opts.Seed, "seed", 1, "random seed")
	fs.StringVar(&opts.Out, "out", "", "write to this file (atomically) instead of stdout, and print a summary")
	cmdutil.AddOutputFlag(cmd, &out)
	return cmd
}

func runLayout(opts *Options) error {
	c, err := topology.Generate(opts.Layout, rand.New(rand.NewPCG(opts.Seed, 0x6b706c616e))) //nolint:gosec // synthetic data, not security
	if err != nil {
		return errkind.Wrap(errkind.Usage, "", err)
	}
	if opts.Out == "" {
		return topology.WriteLayout(opts.IO.Out, c)
	}
	var b bytes.Buffer
	if err := topology.WriteLayout(&b, c); err != nil {
		return err
	}
	if err := report.WriteFileAtomic(opts.Out, b.Bytes()); err != nil {
		return errkind.Usagef("", "--out: %w", err)
	}
	racks := map[string]bool{}
	for _, br := range c.Brokers {
		if br.Rack != "" {
			racks[br.Rack] = true
		}
	}
	sum := Summary{Schema: "kplan.generate.layout/v1", Out: opts.Out, Bytes: b.Len(), Brokers: len(c.Brokers), Racks: len(racks),
		Topics: len(c.Topics()), Partitions: len(c.Partitions), ReplicationFactor: opts.Layout.ReplicationFactor, Seed: opts.Seed}
	return report.Render(opts.IO.Out, opts.Format, sum, func() report.Document { return summaryDoc(sum) })
}

func summaryDoc(s Summary) report.Document {
	racks := "none"
	if s.Racks > 0 {
		racks = strconv.Itoa(s.Racks)
	}
	return report.Document{Title: fmt.Sprintf("kplan generate layout: wrote %s (%d bytes)", s.Out, s.Bytes), Sections: []report.Section{{
		Header: []string{"BROKERS", "RACKS", "TOPICS", "PARTITIONS", "REPLICATION FACTOR", "SEED"},
		Rows: [][]string{{strconv.Itoa(s.Brokers), racks, strconv.Itoa(s.Topics), strconv.Itoa(s.Partitions),
			strconv.Itoa(s.ReplicationFactor), strconv.FormatUint(s.Seed, 10)}},
		Notes: []string{"kplan audit --from " + s.Out + " audits it"},
	}}}
}
