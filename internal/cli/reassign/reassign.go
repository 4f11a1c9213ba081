// Package reassign implements `kplan reassign`.
package reassign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/cli/source"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/observe"
	"github.com/kplan-dev/kplan/internal/reassign"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Options are the parsed flags of `kplan reassign`.
type Options struct {
	IO     *iostreams.IOStreams
	Source source.Options
	Format report.Format

	// Out, Rollback and ElectionOut are the files to write ("" = none).
	Out         string
	Rollback    string
	ElectionOut string
	// Waves and MaxMovesPerWave split the plan into FILE.wave-N.json.
	Waves           int
	MaxMovesPerWave int

	// Brokers is the target broker set (nil: the cluster's).
	Brokers           []topology.Broker
	ReplicationFactor int
	FixOverlaps       bool
	CellSize          int
	// Tolerance and MaxMoves: see reassign.Options.
	Tolerance float64
	MaxMoves  int
	// FailoverDomain is --failover-domain ("" = both when racks exist).
	FailoverDomain string
	// ReorderOnly is --reorder-only: keep every replica set.
	ReorderOnly bool
	// FailoverMoves is --failover-moves (reassign.FailoverMovesAuto for
	// auto), parsed from failoverMoves.
	FailoverMoves int
	failoverMoves string
	// Balance is --balance: replicas (default), bytes or load.
	Balance string
	// Loads is --loads: a kplan observe snapshot whose per-partition rates
	// --balance load balances ("": the --from file when it is one).
	Loads string
	// Rates is --rates (nil: none): the producers' rates per topic, as
	// kplan audit reads them, that weigh the failover order.
	Rates *audit.Rates
	rates string
	// Cordon is --cordon: brokers that receive no new replica.
	Cordon []int32
	// LogDirs is --log-dirs: balance (target dirs on a JBOD cluster, the
	// default) or any (no log_dirs: Kafka's choice everywhere).
	LogDirs string
	// MaxMoveBytes is --max-move-bytes (0: no budget), parsed from
	// maxMoveBytes.
	MaxMoveBytes int64
	maxMoveBytes string
	cordon       string
	// Seed shuffles ties between equally loaded brokers when SeedSet.
	Seed    uint64
	SeedSet bool

	f *cmdutil.Factory
}

// DefaultTolerance is --tolerance's default: brokers within ±5% of the mean
// are left alone, so an almost balanced cluster gets few or no moves. Below
// 20 replicas (or leaders) per broker the band is floor/ceil of the mean,
// as without tolerance.
const DefaultTolerance = 0.05

// NewCmdReassign returns `kplan reassign`. runF replaces the run function
// in tests.
func NewCmdReassign(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, f: f}
	var out cmdutil.OutputFlag
	var brokers string
	cmd := &cobra.Command{
		Use:   "reassign (--from FILE | --bootstrap-server HOST:PORT) [--out FILE] [flags]",
		Short: "Plan the fewest replica moves that balance a cluster, in Kafka's reassignment JSON",
		Long: `Plan a partition reassignment with the fewest replica moves that, all at once:

- puts floor or ceil of the mean replicas on every target broker, and the
  same for leaders (leaders move by reordering replica lists, never by
  copying data);
- spreads each topic's leaders to floor or ceil of its partitions per broker
  where its replicas allow;
- keeps the replicas of a partition in distinct racks when there are at
  least as many racks as replicas, and spreads them over the racks as far
  as they allow when there are fewer (one rack constrains nothing); when
  racks keep replicas per broker from an even spread, the summary names
  the racks, shows the rack-aware targets and the --brokers that would
  allow one;
- empties brokers left out of --brokers and fills brokers new in it with
  every topic in proportion to its fair share;
- orders each partition's followers so that every single-broker loss (and
  every rack loss when racks exist; --failover-domain) spreads the lost
  leaderships as evenly over the survivors as the replica sets allow, since
  Kafka hands a dead leader's partitions to the first live in-sync replica
  in assignment order; the summary's Failover section shows the worst loss
  before and after, its optimum and what the sets allow;
- with --fix-overlaps, places every topic in one cell (the whole cluster, or
  --cell-size brokers) and leads every topic with at least as many
  partitions as the cell from all of the cell, so leader broker sets are
  pairwise identical or disjoint (Burato 2019, §6.4); overlaps that remain
  are reported with the reason.

--out writes Kafka's reassignment JSON (only the partitions that change,
intended leader first), accepted as-is by kafka-reassign-partitions
--execute; --rollback the current assignment of the same partitions;
--election-out the partitions whose leader then needs a preferred election
(kafka-leader-election --election-type PREFERRED --path-to-json-file).
--waves N or --max-moves-per-wave K also split the plan into FILE.wave-1.json,
FILE.wave-2.json, ... to run one after another.

The summary compares the moves with a lower bound: what the brokers under
their target must receive, i.e. the replicas on drained brokers plus each
broker's excess over a target of floor/ceil of the mean, the ceilings given
to the most loaded brokers.

--tolerance (default 0.05) is a relative band around the mean: a broker
holding between mean×(1-tol) and mean×(1+tol) replicas keeps them, and
brokers outside move to the band's edge, no further; leaders per broker and
each topic's leaders per broker get the same band. The band is never
narrower than floor/ceil of the mean, so it changes nothing below 20 per
broker; --tolerance 0 balances to floor/ceil everywhere. --max-moves N
keeps the changes that fit in N replica moves (emptying drained brokers
first) and the summary counts the moves left for a later run. With --fix-overlaps it also shows the
count-balance bound (the bound without --fix-overlaps), since cells and
leader blocks move more by design. Without --out nothing is written.

--rates weighs the failover order by the producers' rates, with kplan
audit's syntax and meaning: topic=100MB/s,... or relative weights
topic=3,...; *=rate for the others (0 without it); or a kplan observe
--out snapshot's file name. Each partition weighs its topic's rate over
the topic's partitions (audit's round-robin share), and after the counted
order each broker's partitions go, among their followers, where the
busiest survivor of its loss carries the least (the weighted pass of
--balance load). Leaders, replicas per broker and the moves stay the
plan's without --rates; the counted figures (leaders after a loss) may end
above theirs, since the rates are then what the order balances. The
Failover section adds the worst loss by
--rates, before and after: the busiest survivor's share of the rates and
the bound no order beats, max(the rates left online / survivors, the
heaviest partition), in the rates' unit; kplan audit --rates --what-if on
the plan's layout predicts the same. With --balance load the snapshot's
loads weigh the order, so --rates is refused there; so is a topic the
layout lacks.

--reorder-only keeps every replica set and changes only orders (the best
leaders and failover order the sets allow): no data moves, and kplan
reassign apply sets no throttle for it.

--balance bytes balances disk bytes instead of replica counts: every target
broker's disk (the sum of its replicas' sizes) ends within --tolerance of
the mean (default 5%), with the fewest bytes copied, where a move costs what
the new replica copies (size_bytes, or local_bytes for a tiered topic, whose
new followers copy only the local tail). It needs every partition's size:
"size_bytes" in the layout (kplan generate layout --sizes draws them) or a
live cluster's log dirs; without them it refuses, naming how many lack one.
Rack rules, replication factors, leader balance and the failover order hold
as in the count plan. The summary shows disk bytes per broker before and
after, the bytes copied, the lower bound, the count plan's bytes and balance
on the same input, and the balance reached within several budgets of bytes
copied. --max-move-bytes SIZE plans the best balance it finds within that
budget.

--balance load balances traffic instead, from the per-partition rates of a
kplan observe snapshot: each partition's produce bytes/s P and consumer
bytes/s C. A broker's bytes in are P for every replica it holds (leader:
from producers; follower: replication), its bytes out C + (RF-1)·P for every
partition it leads, and its leader bytes P for every partition it leads.
All three end within --tolerance of their means on every broker (default
5%), with the fewest bytes copied (a move costs what bytes mode counts).
Bytes out and leader bytes move first by handing leaderships over (no byte
copied); replicas move only for bytes in and where leaders cannot do it.
The loads come from --loads SNAPSHOT, which goes with any layout source (a
live cluster included: its partitions are matched by topic and partition,
those the snapshot lacks count as idle, and sizes the layout lacks are
taken from the snapshot), or, without --loads, from --from when that file is
a snapshot. A snapshot of a cluster without traffic is refused. The summary
shows bytes in, bytes out, leader bytes and disk per broker before and
after, the bytes copied, and the count plan's figures on the same input.
--max-move-bytes SIZE is a budget here too: the moves that bring the most
inside the bands per byte copied come first, and the summary shows what
the plan without the budget copies and reaches.

Cordons (KIP-1066): --cordon 3,5 names brokers that receive no new replica
in any plan (their own may leave). From a live cluster, the brokers whose
every log dir is in cordoned.log.dirs (kafka-configs --alter --entity-type
brokers --entity-name 3 --add-config cordoned.log.dirs=*) are added, and
the summary's title names them. A count plan with cordons may leave the
brokers around them above their targets; --failover-moves is refused with
cordons.

JBOD log dirs: when some broker has two or more log dirs (a live cluster's
DescribeLogDirs, or a layout file's log_dirs), each new replica on such a
broker gets its least-filled dir that is not cordoned, and where a broker's
dirs still leave the --tolerance band replicas change dir on the broker
(intra-broker moves: disk to disk, no network), with the fewest bytes
moved. The plan's log_dirs name them ("any" elsewhere); the summary shows
each broker's dirs before and after and the intra-broker moves.`,
		Example: `  $ kplan reassign --from testdata/layouts/kafkakit-optimize-input.json
  $ kplan reassign --from layout.json --brokers 1,2,3,4,5:rack-b --out plan.json --rollback rollback.json
  $ kplan reassign --bootstrap-server k1:9092 --out plan.json --election-out elect.json --waves 4
  $ kplan reassign --from layout.json --fix-overlaps --cell-size 3 -o json
  $ kplan reassign --from layout.json --reorder-only --out reorder.json
  $ kplan reassign --from layout.json --rates orders=50MB/s,clicks=5MB/s,*=1MB/s --out plan.json
  $ kplan reassign --from sized.json --balance bytes --tolerance 0.05 --out plan.json
  $ kplan reassign --from sized.json --balance bytes --max-move-bytes 500GiB --cordon 3,5
  $ kplan observe --cluster lab --window 60s --out snap.json && kplan reassign --from snap.json --balance load --out plan.json
  $ kplan reassign --bootstrap-server k1:9092 --balance load --loads snap.json --out plan.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Format, err = out.Format(); err != nil {
				return err
			}
			if err := opts.Source.Validate(); err != nil {
				return err
			}
			if brokers != "" {
				if opts.Brokers, err = ParseBrokers(brokers); err != nil {
					return errkind.Usagef("", "--brokers: %w", err)
				}
			}
			opts.SeedSet = cmd.Flags().Changed("seed")
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReassign(cmd.Context(), opts)
		},
	}
	source.AddFlags(cmd, &opts.Source)
	fs := cmd.Flags()
	fs.StringVar(&opts.Out, "out", "", "write the plan (Kafka's reassignment JSON) to this file")
	fs.StringVar(&opts.Rollback, "rollback", "", "write the current assignment of the changed partitions to this file")
	fs.StringVar(&opts.ElectionOut, "election-out", "", "write the partitions needing a preferred leader election (kafka-leader-election JSON) to this file")
	fs.IntVar(&opts.Waves, "waves", 0, "also split the plan into this many wave files (needs --out)")
	fs.IntVar(&opts.MaxMovesPerWave, "max-moves-per-wave", 0, "also split the plan into wave files of at most this many replica moves (needs --out)")
	fs.StringVar(&brokers, "brokers", "", "target brokers: ID[:RACK] comma list or ID-ID ranges; brokers left out are drained, new ones filled")
	fs.IntVar(&opts.ReplicationFactor, "replication-factor", 0, "set every partition's replication factor (default: keep each one's)")
	fs.BoolVar(&opts.FixOverlaps, "fix-overlaps", false, "make leader broker sets pairwise identical or disjoint where partition counts allow")
	fs.IntVar(&opts.CellSize, "cell-size", 0, "with --fix-overlaps: split the target brokers into cells of this many brokers")
	fs.Float64Var(&opts.Tolerance, "tolerance", DefaultTolerance, "leave brokers within this relative band around the mean alone (replicas, leaders, topic leaders; 0: balance to floor/ceil)")
	fs.IntVar(&opts.MaxMoves, "max-moves", 0, "move at most this many replicas; the summary counts what is left (0: no cap)")
	fs.StringVar(&opts.FailoverDomain, "failover-domain", "", "order followers so the leaderships of every lost broker, rack, or both spread evenly over the survivors: broker, rack, both or none (default: both when every broker has a rack, else broker)")
	fs.BoolVar(&opts.ReorderOnly, "reorder-only", false, "keep every replica set and change only replica order, to the best leaders and failover spread the sets allow: no data moves (apply sets no throttle)")
	fs.StringVar(&opts.failoverMoves, "failover-moves", "0", "allow this many replica moves beyond the plan's to place followers so every single-broker loss reaches its failover optimum; auto: the fewest that reach it (at most a tenth of the plan's moves, at least 32; none if it cannot)")
	fs.StringVar(&opts.Balance, "balance", reassign.BalanceReplicas, "what to balance: replicas (counts, fewest replica moves), bytes (disk bytes, fewest bytes copied) or load (bytes in, bytes out and leader bytes from observed rates, fewest bytes copied)")
	fs.StringVar(&opts.Loads, "loads", "", "with --balance load: a kplan observe snapshot (--out) whose per-partition rates to balance (default: --from, when it is a snapshot)")
	fs.StringVar(&opts.rates, "rates", "", ratesUsage)
	fs.StringVar(&opts.cordon, "cordon", "", "brokers (comma list or FIRST-LAST ranges) that receive no new replica; from a live cluster, its cordoned brokers (cordoned.log.dirs) are added")
	fs.StringVar(&opts.maxMoveBytes, "max-move-bytes", "", "with --balance bytes or load: copy at most this many bytes (e.g. 500GiB), the best balance within it (default: no budget)")
	fs.StringVar(&opts.LogDirs, "log-dirs", logDirsBalance, "on brokers with several log dirs (JBOD): balance (give replicas target dirs in log_dirs so each broker's dirs end within --tolerance, with intra-broker moves where needed) or any (no log_dirs: Kafka chooses)")
	fs.Uint64Var(&opts.Seed, "seed", 0, "break ties between equally loaded brokers at random with this seed (default: by broker id)")
	cmdutil.AddOutputFlag(cmd, &out)
	cmd.AddCommand(NewCmdApply(f, nil))
	return cmd
}

func (o *Options) validate() error {
	for _, step := range []func() error{o.validateBalance, o.validateRates, o.validateFailoverMoves, o.validateCounts, o.validateFiles} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// validateBalance reads --balance, --loads, --cordon and --max-move-bytes.
func (o *Options) validateBalance() error {
	switch o.Balance {
	case reassign.BalanceReplicas, reassign.BalanceBytes, reassign.BalanceLoad:
	default:
		return errkind.Usagef("", "--balance: want replicas, bytes or load, got %q", o.Balance)
	}
	if o.Loads != "" && o.Balance != reassign.BalanceLoad {
		return errkind.Usagef("", "--loads: applies with --balance load only")
	}
	if o.Balance == reassign.BalanceLoad && o.Loads == "" && (o.Source.From == "" || o.Source.From == "-") {
		return errkind.Usagef("", "--loads: --balance load needs each partition's produce and consumer bytes/s: give a kplan observe snapshot (--out) as --loads, or as --from")
	}
	if o.cordon != "" {
		bs, err := ParseBrokers(o.cordon)
		if err != nil || slices.ContainsFunc(bs, func(b topology.Broker) bool { return b.Rack != "" }) {
			if err == nil {
				err = errors.New("want broker ids, no racks")
			}
			return errkind.Usagef("", "--cordon: %w", err)
		}
		o.Cordon = nil
		for _, b := range bs {
			o.Cordon = append(o.Cordon, b.ID)
		}
	}
	if v := o.maxMoveBytes; v != "" && v != "0" {
		x, err := topology.ParseBytes(v)
		if err != nil {
			return errkind.Usagef("", "--max-move-bytes: %w", err)
		}
		o.MaxMoveBytes = int64(x)
	}
	if o.Balance == reassign.BalanceReplicas && o.MaxMoveBytes > 0 {
		return errkind.Usagef("", "--max-move-bytes: applies with --balance bytes or load only (the count plan's cap is --max-moves)")
	}
	return nil
}

// validateFailoverMoves reads --failover-moves N|auto.
func (o *Options) validateFailoverMoves() error {
	switch v := o.failoverMoves; v {
	case "", "0":
	case "auto":
		o.FailoverMoves = reassign.FailoverMovesAuto
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errkind.Usagef("", "--failover-moves: must be a count of moves or auto, got %q", v)
		}
		o.FailoverMoves = n
	}
	if o.FailoverMoves != 0 && o.ReorderOnly {
		return errkind.Usagef("", "--failover-moves: moves replicas: it cannot go with --reorder-only")
	}
	return nil
}

// The values of --log-dirs.
const (
	logDirsBalance = "balance"
	logDirsAny     = "any"
)

// validateCounts checks the numeric flags and the ones that need another.
func (o *Options) validateCounts() error {
	switch {
	case o.LogDirs != logDirsBalance && o.LogDirs != logDirsAny:
		return errkind.Usagef("", "--log-dirs: want balance or any, got %q", o.LogDirs)
	case o.Waves < 0:
		return errkind.Usagef("", "--waves: must be positive, got %d", o.Waves)
	case o.MaxMovesPerWave < 0:
		return errkind.Usagef("", "--max-moves-per-wave: must be positive, got %d", o.MaxMovesPerWave)
	case (o.Waves > 0 || o.MaxMovesPerWave > 0) && o.Out == "":
		return errkind.Usagef("", "--waves/--max-moves-per-wave: need --out FILE to name the wave files")
	case o.ReplicationFactor < 0:
		return errkind.Usagef("", "--replication-factor: must be at least 1, got %d", o.ReplicationFactor)
	case o.Tolerance < 0 || o.Tolerance >= 1 || o.Tolerance != o.Tolerance:
		return errkind.Usagef("", "--tolerance: must be at least 0 and below 1, got %g", o.Tolerance)
	case o.MaxMoves < 0:
		return errkind.Usagef("", "--max-moves: must be positive, got %d", o.MaxMoves)
	case o.CellSize < 0:
		return errkind.Usagef("", "--cell-size: must be positive, got %d", o.CellSize)
	case o.CellSize > 0 && !o.FixOverlaps:
		return errkind.Usagef("", "--cell-size: only applies with --fix-overlaps")
	}
	return nil
}

// validateFiles refuses two output flags naming one file.
func (o *Options) validateFiles() error {
	files := map[string]string{}
	for flag, path := range map[string]string{"--out": o.Out, "--rollback": o.Rollback, "--election-out": o.ElectionOut} {
		if path == "" {
			continue
		}
		abs, _ := filepath.Abs(path)
		if other, ok := files[abs]; ok {
			a, b := min(flag, other), max(flag, other)
			return errkind.Usagef("", "%s and %s: both name %s", a, b, path)
		}
		files[abs] = flag
	}
	return nil
}

// ParseBrokers reads a --brokers list: comma-separated ID, ID:RACK or
// FIRST-LAST ranges.
func ParseBrokers(s string) ([]topology.Broker, error) {
	var out []topology.Broker
	seen := map[int32]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, errors.New("empty entry")
		}
		idPart, rack, _ := strings.Cut(item, ":")
		lo, hi := idPart, idPart
		if a, b, ok := strings.Cut(idPart, "-"); ok && a != "" {
			lo, hi = a, b
		}
		first, err1 := strconv.ParseInt(lo, 10, 32)
		last, err2 := strconv.ParseInt(hi, 10, 32)
		if err1 != nil || err2 != nil || first < 0 || last < first {
			return nil, fmt.Errorf("%q is not a broker id, ID:RACK or FIRST-LAST range", item)
		}
		if last-first > 100_000 {
			return nil, fmt.Errorf("%q: range too large", item)
		}
		for id := first; id <= last; id++ {
			if seen[int32(id)] {
				return nil, fmt.Errorf("broker %d is listed twice", id)
			}
			seen[int32(id)] = true
			out = append(out, topology.Broker{ID: int32(id), Rack: rack})
		}
	}
	slices.SortFunc(out, func(a, b topology.Broker) int { return int(a.ID) - int(b.ID) })
	return out, nil
}

// targetError spells a *reassign.TargetError's field as its flag; a fault
// of the layout itself names the file it came from. Other errors pass
// unchanged.
func targetError(err error, from string) error {
	var te *reassign.TargetError
	if errors.As(err, &te) && te.Field == "" && from != "" {
		return fmt.Errorf("%s: %w", from, err)
	}
	return cmdutil.SpellFlag(err, nil)
}

// result is the JSON of `kplan reassign -o json`: the summary and the
// files written.
type result struct {
	reassign.Summary
	Files []string `json:"files"`
}

func runReassign(ctx context.Context, opts *Options) error {
	c, err := opts.Source.Load(ctx, opts.f)
	if err != nil {
		return err
	}
	var ongoing map[topology.Key]topology.Ongoing
	var dirs *reassign.DirLayout
	if opts.Source.From == "" {
		if ongoing, dirs, err = readLive(ctx, opts, c); err != nil {
			return err
		}
	} else {
		dirs = reassign.DirLayoutOf(c)
	}
	if opts.LogDirs == logDirsAny {
		dirs = nil
	}
	var loads map[topology.Key]reassign.Load
	if opts.Balance == reassign.BalanceLoad {
		if loads, err = readLoads(opts, c); err != nil {
			return err
		}
	}
	ro := reassign.Options{Loads: loads, Ongoing: ongoing, Brokers: opts.Brokers, ReplicationFactor: opts.ReplicationFactor, FixOverlaps: opts.FixOverlaps, CellSize: opts.CellSize,
		Tolerance: opts.Tolerance, MaxMoves: opts.MaxMoves, FailoverDomain: opts.FailoverDomain, ReorderOnly: opts.ReorderOnly, FailoverMoves: opts.FailoverMoves,
		Balance: opts.Balance, Cordon: opts.Cordon, MaxMoveBytes: opts.MaxMoveBytes, Dirs: dirs, Rates: opts.Rates}
	if opts.SeedSet {
		ro.Rand = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	}
	plan, err := reassign.Compute(c, ro)
	if err != nil {
		return targetError(err, opts.Source.From)
	}
	if err := reassign.Check(c, plan, ro); err != nil {
		return fmt.Errorf("refusing to write the plan: %w", err)
	}
	written, err := writePlanFiles(opts, c, plan)
	if err != nil {
		return err
	}
	r := result{Summary: plan.Summary, Files: written}
	return report.Render(opts.IO.Out, opts.Format, r, func() report.Document { return doc(r) })
}

// readLive reads from a live cluster what its metadata does not carry:
// partition sizes (into c), the reassignments in progress (returned), the
// cordoned brokers (added to opts.Cordon) and, on a JBOD cluster, each
// broker's log dirs and each replica's (returned; nil when no broker has
// two).
func readLive(ctx context.Context, opts *Options, c *topology.Cluster) (map[topology.Key]topology.Ongoing, *reassign.DirLayout, error) {
	conn, err := opts.Source.ConnOptions() // resolved by Load: not read again
	if err != nil {
		return nil, nil, err
	}
	admin := kafka.NewAdmin(conn, opts.f.Version)
	defer admin.Close()
	// Sizes make "bytes moved" real; without them the plan still stands.
	// Every topic's, internal ones too: the snapshot holds them.
	reps, err := admin.ReplicaDirs(ctx, func(string) bool { return true })
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "kplan reassign: partition sizes unknown (%v); bytes moved not reported\n", err)
	} else {
		kafka.ApplySizes(c, kafka.LargestReplicas(reps))
	}
	// Partitions mid-reassignment list old and new replicas together:
	// the planner needs their targets.
	ongoing, err := admin.AllOngoing(ctx)
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "kplan reassign: reassignments in progress unknown (%v); a partition adding replicas would be planned with all of them\n", err)
	}
	cordons, err := admin.Cordons(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the brokers' cordons (cordoned.log.dirs): %w", err)
	}
	opts.Cordon = withCordons(opts.Cordon, kafka.CordonedBrokers(cordons), opts.Brokers, c, opts.IO.ErrOut)
	var dirs *reassign.DirLayout
	if reps != nil {
		dirs = liveDirs(cordons, reps, c)
	}
	return ongoing, dirs, nil
}

// liveDirs is a live cluster's dir layout: each broker's dirs (empty and
// cordoned ones included) and each replica's dir; nil when no broker has
// two dirs. Replicas of partitions outside c (topics the plan leaves
// alone) are the dirs' fixed load.
func liveDirs(cordons []kafka.BrokerCordon, reps []kafka.ReplicaDir, c *topology.Cluster) *reassign.DirLayout {
	l := &reassign.DirLayout{Brokers: map[int32]reassign.BrokerDirs{}, Current: map[reassign.DirReplica]string{}, Others: map[reassign.DirName]reassign.DirLoad{}}
	for _, bc := range cordons {
		l.Brokers[bc.Broker] = reassign.BrokerDirs{Dirs: bc.Dirs, Cordoned: bc.Cordoned}
	}
	for _, r := range reps {
		if c.Find(r.Key) < 0 {
			o := l.Others[reassign.DirName{Broker: r.Broker, Dir: r.Dir}]
			o.Bytes += r.Bytes
			o.Replicas++
			l.Others[reassign.DirName{Broker: r.Broker, Dir: r.Dir}] = o
			continue
		}
		l.Current[reassign.DirReplica{Key: r.Key, Broker: r.Broker}] = r.Dir
	}
	if !l.Multi() {
		return nil
	}
	return l
}

// writePlanFiles writes the plan's files (all rendered first, so a failure
// leaves nothing half-written), the sidecar PLAN.kplan.json (what of the
// cluster the plan was made from: kplan reassign apply refuses when it has
// drifted since), and removes an earlier plan's wave files.
func writePlanFiles(opts *Options, c *topology.Cluster, plan *reassign.Plan) ([]string, error) {
	// The targets once: a million-partition plan's copy costs a tenth of
	// a second.
	news := plan.New()
	files, err := planFiles(opts, plan, news)
	if err != nil {
		return nil, err
	}
	written, err := writeAll(files)
	if err != nil {
		return nil, err
	}
	if _, err := apply.WriteSourceFile(opts.Out, c, news); err != nil {
		return nil, err
	}
	if opts.Out != "" {
		removed, err := removeStaleWaves(opts.Out, written)
		if len(removed) > 0 {
			fmt.Fprintf(opts.IO.ErrOut, "kplan reassign: removed wave files of an earlier plan: %s\n", strings.Join(removed, ", "))
		}
		if err != nil {
			return nil, err
		}
	}
	return written, nil
}

type file struct {
	path string
	data []byte
}

// planFiles renders every requested file in memory, so that a failure
// leaves nothing half-written.
func planFiles(opts *Options, plan *reassign.Plan, news []topology.Partition) ([]file, error) {
	var files []file
	add := func(path string, write func(*bytes.Buffer) error) error {
		if path == "" {
			return nil
		}
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return err
		}
		files = append(files, file{path, b.Bytes()})
		return nil
	}
	if err := add(opts.Out, func(b *bytes.Buffer) error { return topology.WriteReassignment(b, news) }); err != nil {
		return nil, err
	}
	if err := add(opts.Rollback, func(b *bytes.Buffer) error { return topology.WriteReassignment(b, plan.Rollback()) }); err != nil {
		return nil, err
	}
	if err := add(opts.ElectionOut, func(b *bytes.Buffer) error { return topology.WriteElection(b, plan.Elections) }); err != nil {
		return nil, err
	}
	if opts.Waves > 0 || opts.MaxMovesPerWave > 0 {
		base := strings.TrimSuffix(opts.Out, ".json")
		for i, wave := range reassign.SplitWaves(plan, opts.Waves, opts.MaxMovesPerWave) {
			parts := make([]topology.Partition, len(wave))
			for j, ch := range wave {
				parts[j] = ch.New
			}
			if err := add(fmt.Sprintf("%s.wave-%d.json", base, i+1), func(b *bytes.Buffer) error { return topology.WriteReassignment(b, parts) }); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// removeStaleWaves removes the wave files of an earlier plan beside out
// (kplan's own pattern, OUT.wave-N.json, regular files only) that this run
// did not write: re-planning with fewer waves, or none, used to leave them
// beside the new plan, where running them all would apply two plans.
func removeStaleWaves(out string, written []string) ([]string, error) {
	base := strings.TrimSuffix(out, ".json")
	dir := filepath.Dir(base)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("looking for stale wave files in %s: %w", dir, err)
	}
	keep := map[string]bool{}
	for _, w := range written {
		if filepath.Dir(w) == dir {
			keep[filepath.Base(w)] = true
		}
	}
	pattern := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Base(base)) + `\.wave-[1-9][0-9]*\.json$`)
	var removed []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !pattern.MatchString(e.Name()) || keep[e.Name()] {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil {
			return removed, fmt.Errorf("removing the stale wave file %s: %w", path, err)
		}
		removed = append(removed, path)
	}
	return removed, nil
}

// writeAll writes every file to a temp file beside it, then renames them
// all; on any error it removes the temp files and leaves the targets as
// they were.
func writeAll(files []file) ([]string, error) {
	var temps []string
	cleanup := func() {
		for _, t := range temps {
			os.Remove(t) //nolint:errcheck // best effort: the error reported is the first one
		}
	}
	for _, f := range files {
		tmp, err := report.CreateTemp(f.path, report.PermShared)
		if err != nil {
			cleanup()
			return nil, errkind.Usagef("", "cannot write %s: %w", f.path, err)
		}
		temps = append(temps, tmp.Name())
		_, werr := tmp.Write(f.data)
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr); err != nil {
			cleanup()
			return nil, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	var written []string
	for i, f := range files {
		if err := os.Rename(temps[i], f.path); err != nil {
			cleanup()
			return written, fmt.Errorf("writing %s: %w", f.path, err)
		}
		written = append(written, f.path)
	}
	if written == nil {
		written = []string{}
	}
	return written, nil
}

// withCordons adds to the --cordon list the brokers the cluster reports
// cordoned (every log dir in cordoned.log.dirs) that are target brokers
// (a drained broker takes no replica anyway), and says so on w.
func withCordons(flag, live []int32, targets []topology.Broker, c *topology.Cluster, w io.Writer) []int32 {
	if targets == nil {
		targets = c.Brokers
	}
	var added []int32
	for _, b := range live {
		if slices.Contains(flag, b) || !slices.ContainsFunc(targets, func(t topology.Broker) bool { return t.ID == b }) {
			continue
		}
		added = append(added, b)
	}
	if len(added) > 0 {
		fmt.Fprintf(w, "kplan reassign: %s cordoned on the cluster (cordoned.log.dirs): no new replica there\n", brokerList(added))
	}
	return append(slices.Clone(flag), added...)
}

func brokerList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	if len(ids) == 1 {
		return "broker " + s[0] + " is"
	}
	return "brokers " + strings.Join(s, ", ") + " are"
}

// readLoads reads --balance load's per-partition rates: --loads, or the
// --from file when it is a kplan observe snapshot. Partitions of c without
// a size take the snapshot's (it is a layout too). Every fault is a usage
// error naming the flag the snapshot came through.
func readLoads(opts *Options, c *topology.Cluster) (map[topology.Key]reassign.Load, error) {
	flag, path := "--loads", opts.Loads
	if path == "" {
		flag, path = "--from", opts.Source.From
	}
	if path == "" || path == "-" {
		return nil, errkind.Usagef("", "--loads: --balance load needs each partition's produce and consumer bytes/s: give a kplan observe snapshot (--out) as --loads, or as --from")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errkind.Usagef("", "%s: %w", flag, err)
	}
	if !observe.IsSnapshot(data) {
		return nil, errkind.Usagef("", "--loads: --balance load needs each partition's produce and consumer bytes/s: %s is a layout, not a kplan observe snapshot (give one as --loads)", path)
	}
	sl, err := observe.ParseSnapshotLoads(data, path)
	if err != nil {
		var se *observe.SnapshotError
		if errors.As(err, &se) && se.Field == observe.KeySchema && !strings.Contains(se.Msg, "version") {
			return nil, errkind.Usagef("", "--loads: --balance load needs each partition's produce and consumer bytes/s: %s is a layout, not a kplan observe snapshot (give one as --loads)", path)
		}
		return nil, errkind.Usagef("", "%s: %w", flag, err)
	}
	if flag == "--loads" {
		if err := sizesFrom(c, data, path); err != nil {
			return nil, err
		}
	}
	out := make(map[topology.Key]reassign.Load, len(sl.Partitions))
	for k, r := range sl.Partitions {
		out[k] = reassign.Load{Produce: r.ProduceBytesPerSecond, Consume: r.ConsumerBytesPerSecond}
	}
	return out, nil
}

// sizesFrom gives the partitions of c without a size the size (and local
// bytes) the snapshot data records.
func sizesFrom(c *topology.Cluster, data []byte, path string) error {
	missing := slices.ContainsFunc(c.Partitions, func(p topology.Partition) bool { return p.SizeBytes < 0 })
	if !missing {
		return nil
	}
	snap, err := topology.Load(bytes.NewReader(data), path)
	if err != nil {
		return errkind.Usagef("", "--loads: %w", err)
	}
	for i := range c.Partitions {
		p := &c.Partitions[i]
		if p.SizeBytes >= 0 {
			continue
		}
		if j := snap.Find(p.Key()); j >= 0 && snap.Partitions[j].SizeBytes >= 0 {
			p.SizeBytes, p.LocalBytes = snap.Partitions[j].SizeBytes, snap.Partitions[j].LocalBytes
		}
	}
	return nil
}
