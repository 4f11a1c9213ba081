package dist

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/stats"
)

// Input is what Merge merges.
type Input struct {
	Plan *Plan
	// Ran are the phases the coordinator ran, in order: every worker owes
	// a report per stream for each.
	Ran []string
	// Reports are the workers' reports as read from the results topic (a
	// report read twice counts once).
	Reports []PhaseReport
	// Reads are the checking consumer's read counts by envelope producer
	// index (ProducerIndex): Reads[i][seq] is how many times producer i's
	// record seq was read back at distinct positions (loadgen.Tally.Counts).
	Reads map[int][]uint8
	// Leaders are, by phase and partitioner, the brokers that led a
	// partition of its topics during the phase: the skew is computed over
	// them. Without an entry, over the brokers that acknowledged records.
	Leaders map[string]map[string][]int32
}

// Merged is a distributed run's figures.
type Merged struct {
	// Partitioners in the plan's order of first appearance.
	Partitioners []PartitionerFigures
	// Workers, by index.
	Workers []WorkerFigures
	// Missing names each worker and phase without a complete report, in
	// worker then phase order: none of that worker's figures for the phase
	// are in Partitioners.
	Missing []Missing
}

// Missing is one worker's missing phase.
type Missing struct {
	Worker int
	Phase  string
	// Reason is the worker's own (PhaseReport.Missed), or "no report" for
	// streams it never reported.
	Reason string
}

// WorkerFigures is one worker's totals over the phases it reported.
type WorkerFigures struct {
	Index int
	// Sent and Acked over its complete phases; Read the distinct records of
	// its producers the checking consumer read back (each counted once,
	// however often it was read).
	Sent, Acked, Read int64
	// Missed are the phases it has no complete report of.
	Missed []string
	// Clock is its clock against the coordinator's, as its reports say
	// (nil: it measured none).
	Clock *WorkerClock
}

// WorkerClock is a worker's clock against the coordinator's.
type WorkerClock struct {
	// Skew: the coordinator's time is the worker's plus Skew.Offset.
	Skew Offset
	// Corrected: the worker timed its phases and records on its clock
	// plus Skew.Offset.
	Corrected bool
}

// PartitionerFigures is one partitioner over every worker and topic.
type PartitionerFigures struct {
	Name   string
	Topics []string
	// Over the phases merged: Sent, Acked, Failed; Lost acknowledged but
	// never read back; NeverAcked neither acknowledged nor failed (no
	// answer); Duplicates extra reads of a record at another position,
	// over every record of its producers.
	Sent, Acked, Failed, Lost, NeverAcked, Duplicates int64
	// Phases by name, only those Ran lists.
	Phases map[string]*PhaseFigures
}

// PhaseFigures is one partitioner's merged figures in one phase.
type PhaseFigures struct {
	// Workers are the workers whose reports are merged in.
	Workers                         []int
	Sent, Acked, Failed, AckedBytes int64
	Lost                            int64
	PerBroker                       map[int32]BrokerCount
	PerPartition                    map[string]int64 // "TOPIC/PARTITION"
	Batches, BatchRecords           int64
	Skew                            stats.Skew
	Latency                         *stats.Latency
}

type reportKey struct {
	worker, stream int
	phase          string
}

// Merge merges the workers' reports. A worker with no complete set of
// reports for a phase (a stream missing, or a report saying Missed) is
// named in Missing and left out of that phase's figures entirely: partial
// data is never mixed in. Errors (errkind usage, naming the report field)
// come from reports that cannot belong to the plan.
func Merge(in Input) (*Merged, error) {
	p := in.Plan
	if p == nil {
		return nil, errkind.Usagef("plan", "missing")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	byKey := map[reportKey]PhaseReport{}
	for _, r := range in.Reports {
		if r.Worker >= p.Workers {
			return nil, errkind.Usagef("result.worker", "worker %d of a run of %d", r.Worker, p.Workers)
		}
		if r.Stream >= len(p.Streams) {
			return nil, errkind.Usagef("result.stream", "stream %d of a plan of %d", r.Stream, len(p.Streams))
		}
		k := reportKey{r.Worker, r.Stream, r.Phase}
		if _, ok := byKey[k]; !ok {
			byKey[k] = r
		}
	}
	ceiling, objective := time.Duration(p.LatencyCeilingNS), time.Duration(p.ObjectiveNS)

	out := &Merged{}
	partIdx := map[string]int{}
	for _, s := range p.Streams {
		i, ok := partIdx[s.Partitioner]
		if !ok {
			i = len(out.Partitioners)
			partIdx[s.Partitioner] = i
			out.Partitioners = append(out.Partitioners, PartitionerFigures{Name: s.Partitioner, Phases: map[string]*PhaseFigures{}})
		}
		if !slices.Contains(out.Partitioners[i].Topics, s.Topic) {
			out.Partitioners[i].Topics = append(out.Partitioners[i].Topics, s.Topic)
		}
	}

	for w := range p.Workers {
		wf := WorkerFigures{Index: w}
		for _, r := range in.Reports {
			if r.Worker == w && r.ClockKnown {
				wf.Clock = &WorkerClock{Skew: Offset{Offset: time.Duration(r.ClockSkewNS), Uncertainty: time.Duration(r.ClockUncertaintyNS)}, Corrected: r.ClockCorrected}
				break
			}
		}
		for s := range p.Streams {
			for _, n := range in.Reads[ProducerIndex(w, s, len(p.Streams))] {
				if n > 0 {
					wf.Read++
				}
			}
		}
		for _, ph := range in.Ran {
			reason := ""
			for s := range p.Streams {
				r, ok := byKey[reportKey{w, s, ph}]
				switch {
				case !ok:
					reason = "no report"
				case r.Missed != "":
					reason = r.Missed
				}
				if reason != "" {
					break
				}
			}
			if reason != "" {
				wf.Missed = append(wf.Missed, ph)
				out.Missing = append(out.Missing, Missing{Worker: w, Phase: ph, Reason: reason})
				continue
			}
			for s, st := range p.Streams {
				r := byKey[reportKey{w, s, ph}]
				wf.Sent += r.Sent
				wf.Acked += r.Acked
				pf := &out.Partitioners[partIdx[st.Partitioner]]
				f := pf.Phases[ph]
				if f == nil {
					f = &PhaseFigures{PerBroker: map[int32]BrokerCount{}, PerPartition: map[string]int64{}}
					pf.Phases[ph] = f
				}
				if err := f.add(r, st, ceiling, objective); err != nil {
					return nil, err
				}
				if !slices.Contains(f.Workers, w) {
					f.Workers = append(f.Workers, w)
				}
				lost := countLost(r.AckedSeqs, in.Reads[ProducerIndex(w, s, len(p.Streams))])
				f.Lost += lost
				pf.Sent += r.Sent
				pf.Acked += r.Acked
				pf.Failed += r.Failed
				pf.Lost += lost
				pf.NeverAcked += r.Sent - r.Acked - r.Failed
			}
		}
		out.Workers = append(out.Workers, wf)
	}

	for i := range out.Partitioners {
		pf := &out.Partitioners[i]
		for w := range p.Workers {
			for s, st := range p.Streams {
				if st.Partitioner == pf.Name {
					pf.Duplicates += loadgen.Duplicates(in.Reads[ProducerIndex(w, s, len(p.Streams))])
				}
			}
		}
		for ph, f := range pf.Phases {
			if f.Latency == nil {
				// Nothing acknowledged: an empty histogram (the plan's
				// ceiling was validated, so this cannot fail).
				l, err := stats.NewLatency(ceiling, objective)
				if err != nil {
					return nil, err
				}
				f.Latency = l
			}
			counts := map[int32]int64{}
			if leaders, ok := in.Leaders[ph][pf.Name]; ok {
				for _, id := range leaders {
					counts[id] = f.PerBroker[id].Records
				}
			} else {
				for id, bc := range f.PerBroker {
					if id >= 0 {
						counts[id] = bc.Records
					}
				}
			}
			f.Skew = stats.SkewOfCounts(counts)
		}
	}
	return out, nil
}

// add merges one report into the phase's figures.
func (f *PhaseFigures) add(r PhaseReport, st Stream, ceiling, objective time.Duration) error {
	f.Sent += r.Sent
	f.Acked += r.Acked
	f.Failed += r.Failed
	f.AckedBytes += r.AckedBytes
	f.Batches += r.Batches
	f.BatchRecords += r.BatchRecords
	for k, bc := range r.PerBroker {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return errkind.Usagef("result.per_broker", "key %q: %w", k, err)
		}
		o := f.PerBroker[int32(id)]
		o.Records += bc.Records
		o.Bytes += bc.Bytes
		f.PerBroker[int32(id)] = o
	}
	for part, n := range r.PerPartition {
		f.PerPartition[st.Topic+"/"+part] += n
	}
	if r.Latency == "" {
		return nil
	}
	l, err := stats.DecodeLatency(r.Latency, ceiling, objective, r.Violating, r.Clamped)
	if err != nil {
		return errkind.Wrap(errkind.Usage, "result.latency", fmt.Errorf("worker %d stream %d phase %s: %w", r.Worker, r.Stream, r.Phase, err))
	}
	if f.Latency == nil {
		f.Latency = l
		return nil
	}
	return f.Latency.Merge(l)
}

// countLost counts the acknowledged sequence numbers never read.
func countLost(acked []Range, reads []uint8) int64 {
	var lost int64
	n := uint64(len(reads))
	for _, rg := range acked {
		if rg.To > n {
			lost += int64(rg.To - max(rg.From, n)) //nolint:gosec // bounded by the report's acked count
		}
		for q := rg.From; q < min(rg.To, n); q++ {
			if reads[q] == 0 {
				lost++
			}
		}
	}
	return lost
}

// MergeBuckets adds up the acknowledged bytes over time of reports (their
// Buckets), index by index since the epoch: sums[i] is bucket first+i.
// Reports without buckets add nothing; reports of another bucket width
// than the first's are an error naming the worker.
func MergeBuckets(reps []PhaseReport) (width time.Duration, first int, sums []int64, err error) {
	last := -1
	for _, r := range reps {
		if len(r.Buckets) == 0 {
			continue
		}
		if r.BucketNS <= 0 || r.FirstBucket < 0 {
			return 0, 0, nil, errkind.Usagef("results.bucket_ns", "worker %d: buckets of %dns from %d", r.Worker, r.BucketNS, r.FirstBucket)
		}
		if width == 0 {
			width, first = time.Duration(r.BucketNS), r.FirstBucket
		}
		if time.Duration(r.BucketNS) != width {
			return 0, 0, nil, errkind.Usagef("results.bucket_ns", "worker %d: buckets of %v, others %v", r.Worker, time.Duration(r.BucketNS), width)
		}
		first = min(first, r.FirstBucket)
		last = max(last, r.FirstBucket+len(r.Buckets)-1)
	}
	if width == 0 {
		return 0, 0, nil, nil
	}
	sums = make([]int64, last-first+1)
	for _, r := range reps {
		for i, b := range r.Buckets {
			sums[r.FirstBucket-first+i] += b
		}
	}
	return width, first, sums, nil
}
