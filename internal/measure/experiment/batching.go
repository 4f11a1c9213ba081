package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
)

// Batching is the action behind `kplan measure batching`: seed 003's
// study, one cell per linger x batch size, each a new producer writing to
// one scratch topic and a consumer reading it back, summed up as a
// measure.BatchStudy with its recommendation. The scratch topic is
// deleted at the end, also on error and Ctrl-C, unless Keep.
type Batching struct {
	// Conn reaches the cluster (a lab's seeds already in it); Cluster is
	// its name in the study.
	Conn    kafka.ConnOptions
	Cluster string
	Version string
	// Now and Rand, when set, replace the clock and the topic name's
	// random suffix.
	Now  func() time.Time
	Rand func() uint64

	Cells      []measure.BatchCell
	Objective  time.Duration
	Acks       loadgen.Acks
	RecordSize int
	// Rate as given, and in records/s (0: unlimited).
	Rate          string
	RatePerSecond float64
	CellDuration  time.Duration
	// Warmup is produced before each cell's measurement.
	Warmup time.Duration
	// DeliveryTimeout and DrainTimeout bound each cell's end.
	DeliveryTimeout time.Duration
	DrainTimeout    time.Duration
	MaxBuffered     int

	TopicPrefix       string
	Partitions        int
	ReplicationFactor int
	Keep              bool

	// Progress, when set, gets one line of progress at a time.
	Progress func(format string, a ...any)
}

func (b *Batching) progress(format string, a ...any) {
	if b.Progress != nil {
		b.Progress(format, a...)
	}
}

// Run sweeps the cells. It returns nil with the error when no cell could
// start; a study that is not Complete with the error that stopped it
// (the cells measured so far in it); or the complete study with the error
// of deleting the scratch topic, if any.
func (b *Batching) Run(ctx context.Context) (*measure.BatchStudy, error) {
	now, rnd := b.Now, b.Rand
	if now == nil {
		now = time.Now
	}
	if rnd == nil {
		rnd = rand.Uint64
	}
	start := now().UTC()
	topic := fmt.Sprintf("%s-%s-%s", b.TopicPrefix, start.Format("20060102-150405"), strconv.FormatUint(rnd()%(36*36*36*36), 36))
	b.progress("measure batching: %d cells of %s on %s, scratch topic %s", len(b.Cells), b.CellDuration, b.Cluster, topic)
	run, err := loadgen.StartBatchRun(ctx, b.Conn, b.Version, loadgen.BatchTopic{Name: topic, Partitions: b.Partitions, ReplicationFactor: b.ReplicationFactor})
	if run == nil {
		return nil, fmt.Errorf("measure batching: %w", err)
	}
	closeRun := func() error {
		if cerr := run.Close(ctx, b.Keep); cerr != nil {
			return fmt.Errorf("measure batching: %w (delete it with kafka-topics --delete)", cerr)
		}
		if b.Keep {
			b.progress("measure batching: kept topic %s", topic)
		}
		return nil
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("measure batching: %w", err), closeRun())
	}
	t := run.Topic()
	study := &measure.BatchStudy{
		Cluster: b.Cluster, Topic: topic, Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor,
		Objective: b.Objective.String(), ObjectiveMS: float64(b.Objective) / float64(time.Millisecond),
		Acks: b.Acks.String(), RecordSize: b.RecordSize, Rate: b.Rate, RatePerSecond: b.RatePerSecond,
		CellDuration: b.CellDuration.String(), Date: start.Format(time.RFC3339),
	}
	runErr := b.cells(ctx, run, study)
	closeErr := closeRun()
	study.Complete = runErr == nil
	study.Recommended, study.MeanChoice = measure.BatchRecommend(study.Cells, b.Objective)
	if runErr != nil {
		return study, errors.Join(fmt.Errorf("measure batching: %w", runErr), closeErr)
	}
	return study, closeErr
}

// cells measures every cell in turn into study, stopping at the first
// error.
func (b *Batching) cells(ctx context.Context, run *loadgen.BatchRun, study *measure.BatchStudy) error {
	for i, cell := range b.Cells {
		spec := loadgen.BatchCellSpec{Index: i, Linger: cell.Linger, MaxBytes: cell.MaxBytes, Acks: b.Acks,
			RecordSize: b.RecordSize, Rate: b.RatePerSecond, Warmup: b.Warmup, Duration: b.CellDuration,
			DeliveryTimeout: b.DeliveryTimeout, DrainTimeout: b.DrainTimeout, MaxBuffered: b.MaxBuffered, Objective: b.Objective}
		if i == 0 {
			study.Producer = loadgen.BatchProducerSettings(spec)
		}
		counts, err := run.RunCell(ctx, spec)
		if err != nil {
			return err
		}
		r := measure.NewBatchCellResult(cell, counts, b.RecordSize)
		study.Cells = append(study.Cells, r)
		b.progress("cell %d/%d linger %s batch %s: %d sent, p50 %.1f ms, p99 %.1f ms, max %.1f ms, violation %.2f%%, loss %.2f%%",
			i+1, len(b.Cells), r.Linger, r.BatchSize, r.Sent, r.Latency.P50, r.Latency.P99, r.Latency.Max, 100*r.ViolationRate, 100*r.LossRate)
	}
	return nil
}
