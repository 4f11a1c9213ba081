package measure

import (
	"time"

	"github.com/kplan-dev/kplan/internal/stats"
)

// BatchCounts is what the Kafka side measured in one cell.
type BatchCounts struct {
	// Sent is the records handed to the producer during the cell.
	Sent int64
	// Acked is the records the producer saw acknowledged (with acks=0:
	// written to the socket); Failed the ones it gave up on.
	Acked, Failed int64
	// Received is the distinct records (by sequence number) the checking
	// consumer read back; Duplicates the extra copies.
	Received, Duplicates int64
	// Batches and BatchRecords are the batches the brokers acknowledged
	// and the records in them (franz-go's produce hook; none with acks=0).
	Batches, BatchRecords int64
	// Window is how long the producer was sending.
	Window time.Duration
	// Latency is the end-to-end latency of every received record
	// (consumer receipt minus the time Produce was called, one clock).
	Latency *stats.Latency
}

// BatchCellResult is one measured cell.
type BatchCellResult struct {
	// Linger is the cell's linger (linger.ms), as a duration string.
	Linger string `json:"linger" yaml:"linger"`
	// LingerMS is Linger in milliseconds.
	LingerMS int64 `json:"linger_ms" yaml:"linger_ms"`
	// BatchSize is the size as given (records or bytes).
	BatchSize BatchSize `json:"batch_size" yaml:"batch_size"`
	// BatchBytes is franz-go's ProducerBatchMaxBytes, Kafka's batch.size.
	BatchBytes int32 `json:"batch_bytes" yaml:"batch_bytes"`

	Sent       int64 `json:"sent" yaml:"sent"`
	Acked      int64 `json:"acked" yaml:"acked"`
	Failed     int64 `json:"failed" yaml:"failed"`
	Received   int64 `json:"received" yaml:"received"`
	Lost       int64 `json:"lost" yaml:"lost"`
	Duplicates int64 `json:"duplicates" yaml:"duplicates"`
	// RecordsPerBatch is the mean records per acknowledged batch (0 when
	// not known, as with acks=0).
	RecordsPerBatch float64 `json:"records_per_batch" yaml:"records_per_batch"`

	// Latency is the end-to-end latency distribution in milliseconds
	// (count, mean, p50, p95, p99, p99.9, max, violation rate).
	Latency stats.LatencySummary `json:"latency_ms" yaml:"latency_ms"`
	// ViolationRate is the share of received records later than the
	// objective.
	ViolationRate float64 `json:"violation_rate" yaml:"violation_rate"`
	// LossRate is the share of sent records the consumer never read.
	LossRate float64 `json:"loss_rate" yaml:"loss_rate"`
	// Throughput is the producer's throughput: records sent over the
	// window, in records/s and bytes/s.
	Throughput      float64 `json:"throughput_records_per_s" yaml:"throughput_records_per_s"`
	ThroughputBytes float64 `json:"throughput_bytes_per_s" yaml:"throughput_bytes_per_s"`
	// Timely is seed 003's timely throughput, Throughput x (1 -
	// ViolationRate) x (1 - LossRate), in records/s and bytes/s.
	Timely      float64 `json:"timely_throughput_records_per_s" yaml:"timely_throughput_records_per_s"`
	TimelyBytes float64 `json:"timely_throughput_bytes_per_s" yaml:"timely_throughput_bytes_per_s"`
}

// NewBatchCellResult turns a cell's counts into its figures. recordSize is
// the value size in bytes.
func NewBatchCellResult(c BatchCell, n BatchCounts, recordSize int) BatchCellResult {
	r := BatchCellResult{
		Linger: c.Linger.String(), LingerMS: c.Linger.Milliseconds(), BatchSize: c.Size, BatchBytes: c.MaxBytes,
		Sent: n.Sent, Acked: n.Acked, Failed: n.Failed, Received: min(n.Received, n.Sent), Duplicates: n.Duplicates,
	}
	r.Lost = n.Sent - r.Received
	if n.Batches > 0 {
		r.RecordsPerBatch = float64(n.BatchRecords) / float64(n.Batches)
	}
	if n.Latency != nil {
		r.Latency = n.Latency.Summary()
		r.ViolationRate = n.Latency.ViolationRate()
	}
	r.LossRate = stats.LossRate(r.Lost, n.Sent)
	if n.Window > 0 {
		r.Throughput = float64(n.Sent) / n.Window.Seconds()
	}
	r.ThroughputBytes = r.Throughput * float64(recordSize)
	r.Timely = stats.TimelyThroughput(r.Throughput, r.ViolationRate, r.LossRate)
	r.TimelyBytes = r.Timely * float64(recordSize)
	return r
}

// BatchChoice names a cell of the sweep and why it was chosen.
type BatchChoice struct {
	// Cell is the index into BatchStudy.Cells.
	Cell int `json:"cell" yaml:"cell"`
	// Linger and BatchSize repeat the cell's settings.
	Linger    string    `json:"linger" yaml:"linger"`
	BatchSize BatchSize `json:"batch_size" yaml:"batch_size"`
	// Rule says how the cell was chosen.
	Rule string `json:"rule" yaml:"rule"`
}

// Rules of the two choices, as outputs state them.
const (
	BatchRuleTimely = "highest timely throughput: throughput x (1 - violation rate) x (1 - loss rate) (seed 003)"
	BatchRuleMean   = "batch as much as possible while the mean latency meets the objective (the mean-latency method seed 003 argues against)"
)

// BatchRecommend picks the cell with the highest timely throughput
// (ties: lower violation rate, then lower p99, then grid order) and the
// cell a mean-latency criterion would pick: of the cells whose mean
// end-to-end latency is within objective, the one that batches most
// (largest batch.size, then longest linger, then highest throughput).
// Cells that delivered nothing are never chosen; either choice is nil when
// no cell qualifies.
func BatchRecommend(cells []BatchCellResult, objective time.Duration) (timely, mean *BatchChoice) {
	best, bestMean := -1, -1
	for i, c := range cells {
		if c.Received == 0 {
			continue
		}
		if best < 0 || batchBetterTimely(c, cells[best]) {
			best = i
		}
		if c.Latency.Mean <= float64(objective)/float64(time.Millisecond) && (bestMean < 0 || batchBatchesMore(c, cells[bestMean])) {
			bestMean = i
		}
	}
	choice := func(i int, rule string) *BatchChoice {
		if i < 0 {
			return nil
		}
		return &BatchChoice{Cell: i, Linger: cells[i].Linger, BatchSize: cells[i].BatchSize, Rule: rule}
	}
	return choice(best, BatchRuleTimely), choice(bestMean, BatchRuleMean)
}

func batchBetterTimely(a, b BatchCellResult) bool {
	if a.Timely != b.Timely {
		return a.Timely > b.Timely
	}
	if a.ViolationRate != b.ViolationRate {
		return a.ViolationRate < b.ViolationRate
	}
	return a.Latency.P99 < b.Latency.P99
}

func batchBatchesMore(a, b BatchCellResult) bool {
	if a.BatchBytes != b.BatchBytes {
		return a.BatchBytes > b.BatchBytes
	}
	if a.LingerMS != b.LingerMS {
		return a.LingerMS > b.LingerMS
	}
	return a.Throughput > b.Throughput
}

// BatchStudy is the result of `kplan measure batching`.
type BatchStudy struct {
	// Cluster says what was measured ("lab" or the bootstrap servers).
	Cluster string `json:"cluster" yaml:"cluster"`
	// Topic is the scratch topic, with its partitions and replication.
	Topic             string `json:"topic" yaml:"topic"`
	Partitions        int    `json:"partitions" yaml:"partitions"`
	ReplicationFactor int    `json:"replication_factor" yaml:"replication_factor"`
	// Objective is the latency objective.
	Objective   string  `json:"latency_objective" yaml:"latency_objective"`
	ObjectiveMS float64 `json:"latency_objective_ms" yaml:"latency_objective_ms"`
	Acks        string  `json:"acks" yaml:"acks"`
	RecordSize  int     `json:"record_size" yaml:"record_size"`
	// Rate is the offered rate as given; RatePerSecond in records/s (0:
	// unlimited).
	Rate          string  `json:"rate" yaml:"rate"`
	RatePerSecond float64 `json:"rate_records_per_s" yaml:"rate_records_per_s"`
	CellDuration  string  `json:"cell_duration" yaml:"cell_duration"`
	// Producer lists the producer settings every cell shares.
	Producer []string `json:"producer" yaml:"producer"`
	// Cells are in grid order: lingers outer, batch sizes inner.
	Cells []BatchCellResult `json:"cells" yaml:"cells"`
	// Recommended is the highest timely throughput; MeanChoice the
	// mean-latency criterion's pick. Either is absent when no cell
	// qualifies.
	Recommended *BatchChoice `json:"recommended,omitempty" yaml:"recommended,omitempty"`
	MeanChoice  *BatchChoice `json:"mean_latency_choice,omitempty" yaml:"mean_latency_choice,omitempty"`
	// Complete is false when the run was interrupted: Cells holds the
	// cells measured so far.
	Complete bool `json:"complete" yaml:"complete"`
	// Date is when the study ran (RFC 3339, UTC).
	Date string `json:"date" yaml:"date"`
}
