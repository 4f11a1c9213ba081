// Package observe turns samples of a live cluster's offsets, log-dir sizes
// and consumer groups' committed offsets into loads: per partition the
// produce rate (records/s from log end offsets, bytes/s from the leader's
// size on disk), bytes per replica and per log dir, local against remote
// bytes (tiered storage), the consumer groups reading each topic and their
// fetch rate, and per broker the bytes in and out those imply. Everything
// comes from the Kafka protocol (ListOffsets, DescribeLogDirs, OffsetFetch):
// no broker-side agent.
//
// The package is pure: the samples come in as values with the time each
// was taken (from a clock the caller injects, see Run), the loads go out
// as a Result; nothing here talks to Kafka or prints.
package observe

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/internal/topology"
)

// Sample is one read of the cluster.
type Sample struct {
	// At is when the sample was taken (read before its end offsets).
	At time.Time
	// Offsets per partition.
	Offsets []PartitionOffsets
	// Replicas are DescribeLogDirs' answers: one entry per replica.
	Replicas []ReplicaSize
	// Committed are the consumer groups' committed offsets.
	Committed []Committed
}

// PartitionOffsets are one partition's offsets in a sample.
type PartitionOffsets struct {
	Topic     string
	Partition int32
	// End is the log end offset (high watermark).
	End int64
	// Start is the log start offset (earliest, remote included).
	Start int64
	// LocalStart is the earliest offset on the brokers' disks (ListOffsets
	// timestamp -4); -1 when the cluster did not say.
	LocalStart int64
}

// ReplicaSize is one replica's size in one log dir.
type ReplicaSize struct {
	Topic     string
	Partition int32
	Broker    int32
	Dir       string
	Bytes     int64
}

// Committed is a consumer group's committed offset of one partition.
type Committed struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// Rate is a rate over the whole window (Mean) and its spread over the
// intervals between consecutive samples (Min, Max; equal to Mean with two
// samples).
type Rate struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Produce is what producers wrote to a partition or topic in the window.
type Produce struct {
	// Records is the number of records written (end offset delta).
	Records          int64 `json:"records"`
	RecordsPerSecond Rate  `json:"records_per_second"`
	BytesPerSecond   Rate  `json:"bytes_per_second"`
	// BytesPerRecord is the leader's size delta over the records written;
	// without writes, the log's size over the records it holds (0 for an
	// empty log).
	BytesPerRecord float64 `json:"bytes_per_record"`
	// BytesEstimated is true when the size shrank in the window (retention
	// deleted a segment) so bytes/s is records/s times bytes/record.
	BytesEstimated bool `json:"bytes_estimated,omitempty"`
}

// Replica is one replica's bytes on disk at the last sample.
type Replica struct {
	Broker int32  `json:"broker"`
	Dir    string `json:"dir"`
	Bytes  int64  `json:"bytes"`
}

// PartitionLoad is what was observed of one partition.
type PartitionLoad struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Leader    int32  `json:"leader"`
	// RF is the number of replicas the layout assigns.
	RF      int     `json:"replication_factor"`
	Produce Produce `json:"produce"`
	// Idle is true when no record was written to it in the window.
	Idle bool `json:"idle"`
	// Replicas as DescribeLogDirs reported them at the last sample, by
	// broker.
	Replicas []Replica `json:"replicas"`
	// SizeBytes is the largest replica's size (what a move copies at
	// most); -1 when no broker reported one.
	SizeBytes int64 `json:"size_bytes"`
	// LocalBytes and RemoteBytes split the partition's data: everything is
	// local unless the earliest local offset is past the earliest offset
	// (tiered storage), and the remote part is then estimated from
	// bytes/record (RemoteEstimated).
	LocalBytes      int64 `json:"local_bytes"`
	RemoteBytes     int64 `json:"remote_bytes"`
	RemoteEstimated bool  `json:"remote_estimated,omitempty"`
	// ConsumerBytesPerSecond sums the groups' fetch rates from it.
	ConsumerBytesPerSecond float64 `json:"consumer_bytes_per_second"`
	// Observed is the time the partition was watched (a partition created
	// during the window is watched for less than the window).
	ObservedSeconds float64 `json:"observed_seconds"`
	// recs and bytes are the rates of each interval between samples; nil
	// unless every sample read the partition.
	recs, bytes []float64
}

// GroupRead is one consumer group reading one topic.
type GroupRead struct {
	Group string `json:"group"`
	Topic string `json:"topic"`
	// Partitions is how many of the topic's partitions it committed.
	Partitions int `json:"partitions"`
	// Records is how far its committed offsets moved in the window.
	Records          int64   `json:"records"`
	RecordsPerSecond Rate    `json:"records_per_second"`
	BytesPerSecond   float64 `json:"bytes_per_second"`
	// Lag is the end offsets minus the committed ones at the last sample.
	Lag int64 `json:"lag"`
}

// TopicLoad sums a topic's partitions.
type TopicLoad struct {
	Topic      string  `json:"topic"`
	Partitions int     `json:"partitions"`
	Produce    Produce `json:"produce"`
	Idle       bool    `json:"idle"`
	// SizeBytes sums the partitions' largest replicas; ReplicaBytes every
	// replica.
	SizeBytes    int64    `json:"size_bytes"`
	ReplicaBytes int64    `json:"replica_bytes"`
	RemoteBytes  int64    `json:"remote_bytes"`
	Groups       []string `json:"groups"`
}

// BrokerLoad is one broker's disk and network load.
type BrokerLoad struct {
	Broker int32 `json:"broker"`
	// Leaders and Replicas count its partitions.
	Leaders  int   `json:"leaders"`
	Replicas int   `json:"replicas"`
	Bytes    int64 `json:"bytes"`
	// BytesIn is what producers write to its leaders plus what it
	// replicates into its followers; BytesOut what consumers fetch from
	// its leaders plus what followers replicate from them.
	BytesIn  float64 `json:"bytes_in_per_second"`
	BytesOut float64 `json:"bytes_out_per_second"`
	// ProduceIn, ReplicationIn, ConsumeOut and ReplicationOut split them.
	ProduceIn      float64 `json:"produce_in_per_second"`
	ReplicationIn  float64 `json:"replication_in_per_second"`
	ConsumeOut     float64 `json:"consume_out_per_second"`
	ReplicationOut float64 `json:"replication_out_per_second"`
}

// LogDir is one log dir's bytes at the last sample.
type LogDir struct {
	Broker   int32  `json:"broker"`
	Dir      string `json:"dir"`
	Replicas int    `json:"replicas"`
	Bytes    int64  `json:"bytes"`
}

// Result is what a window of samples shows.
type Result struct {
	// Schema is SchemaVersion: the version of this JSON.
	Schema        int       `json:"schema"`
	Samples       int       `json:"samples"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	WindowSeconds float64   `json:"window_seconds"`
	// Traffic is false when no record was written and no group moved in
	// the window: the rates then say nothing about the cluster's load, and
	// Note says so.
	Traffic    bool            `json:"traffic"`
	Note       string          `json:"note,omitempty"`
	Partitions []PartitionLoad `json:"partitions"`
	Topics     []TopicLoad     `json:"topics"`
	Groups     []GroupRead     `json:"groups"`
	Brokers    []BrokerLoad    `json:"brokers"`
	LogDirs    []LogDir        `json:"log_dirs"`
}

// NoTrafficNote is Result.Note when the cluster had no traffic.
const NoTrafficNote = "no traffic in the window: no record was written and no consumer group committed a new offset, so no rate was observed (the bytes on disk are)"

// ErrTooFewSamples is returned for fewer than two samples.
var ErrTooFewSamples = errors.New("observe: need at least two samples")

// Compute derives the loads from samples (in time order, at least two) over
// layout (normalized: partitions sorted), the cluster's layout at the last
// sample: its leaders and replica sets decide who replicates to whom and
// who serves consumers. Partitions
// of layout missing from every sample have no rate (Produce zero, Idle);
// partitions of the samples missing from layout are ignored.
func Compute(layout *topology.Cluster, samples []Sample) (*Result, error) {
	if len(samples) < 2 {
		return nil, ErrTooFewSamples
	}
	for i := 1; i < len(samples); i++ {
		if !samples[i].At.After(samples[i-1].At) {
			return nil, fmt.Errorf("observe: sample %d (%s) is not after sample %d (%s)", i, samples[i].At.Format(time.RFC3339Nano), i-1, samples[i-1].At.Format(time.RFC3339Nano))
		}
	}
	first, last := samples[0], samples[len(samples)-1]
	idx := make([]sampleIndex, len(samples))
	for i := range samples {
		idx[i] = index(&samples[i])
	}
	r := &Result{Schema: SchemaVersion, Samples: len(samples), Start: first.At, End: last.At, WindowSeconds: last.At.Sub(first.At).Seconds()}
	bpr := map[topology.Key]float64{}
	for i := range layout.Partitions {
		p := &layout.Partitions[i]
		pl := partitionLoad(p, samples, idx)
		bpr[p.Key()] = pl.Produce.BytesPerRecord
		r.Partitions = append(r.Partitions, pl)
	}
	rd := readings(layout, samples, idx)
	r.Groups = groupReads(rd, idx[len(idx)-1], bpr)
	consumed := consumerBytes(rd, bpr)
	for i := range r.Partitions {
		r.Partitions[i].ConsumerBytesPerSecond = consumed[topology.Key{Topic: r.Partitions[i].Topic, Partition: r.Partitions[i].Partition}]
	}
	r.Topics = topicLoads(r.Partitions, r.Groups, r.WindowSeconds)
	r.Brokers = brokerLoads(layout, r.Partitions)
	r.LogDirs = logDirs(r.Partitions)
	for _, p := range r.Partitions {
		if !p.Idle {
			r.Traffic = true
		}
	}
	for _, g := range r.Groups {
		if g.Records > 0 {
			r.Traffic = true
		}
	}
	if !r.Traffic {
		r.Note = NoTrafficNote
	}
	return r, nil
}

// sampleIndex looks a sample's entries up by partition.
type sampleIndex struct {
	offsets  map[topology.Key]PartitionOffsets
	replicas map[topology.Key][]ReplicaSize
	// committed[group][key]
	committed map[string]map[topology.Key]int64
}

func index(s *Sample) sampleIndex {
	x := sampleIndex{offsets: make(map[topology.Key]PartitionOffsets, len(s.Offsets)), replicas: make(map[topology.Key][]ReplicaSize, len(s.Offsets)),
		committed: map[string]map[topology.Key]int64{}}
	for _, o := range s.Offsets {
		x.offsets[topology.Key{Topic: o.Topic, Partition: o.Partition}] = o
	}
	for _, r := range s.Replicas {
		k := topology.Key{Topic: r.Topic, Partition: r.Partition}
		x.replicas[k] = append(x.replicas[k], r)
	}
	for _, c := range s.Committed {
		m := x.committed[c.Group]
		if m == nil {
			m = map[topology.Key]int64{}
			x.committed[c.Group] = m
		}
		m[topology.Key{Topic: c.Topic, Partition: c.Partition}] = c.Offset
	}
	return x
}

// leaderBytes is the size of the leader's replica, else the largest
// replica's (a leader that moved, or that did not answer); ok is false when
// no broker reported the partition.
func leaderBytes(reps []ReplicaSize, leader int32) (int64, bool) {
	var largest int64 = -1
	for _, r := range reps {
		if r.Broker == leader {
			return r.Bytes, true
		}
		largest = max(largest, r.Bytes)
	}
	return largest, largest >= 0
}

// point is one sample's reading of a partition.
type point struct {
	at       time.Time
	end      int64
	bytes    int64
	hasBytes bool
}

func partitionLoad(p *topology.Partition, samples []Sample, idx []sampleIndex) PartitionLoad {
	k := p.Key()
	pl := PartitionLoad{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader, RF: len(p.Replicas), SizeBytes: -1, Idle: true, Replicas: []Replica{}}
	var pts []point
	var lastOff PartitionOffsets
	for i := range samples {
		o, ok := idx[i].offsets[k]
		if !ok {
			continue
		}
		b, hasB := leaderBytes(idx[i].replicas[k], p.Leader)
		pts = append(pts, point{at: samples[i].At, end: o.End, bytes: b, hasBytes: hasB})
		lastOff = o
	}
	last := idx[len(idx)-1]
	for _, r := range last.replicas[k] {
		pl.Replicas = append(pl.Replicas, Replica{Broker: r.Broker, Dir: r.Dir, Bytes: r.Bytes})
		pl.SizeBytes = max(pl.SizeBytes, r.Bytes)
	}
	slices.SortFunc(pl.Replicas, func(a, b Replica) int { return cmp.Or(cmp.Compare(a.Broker, b.Broker), cmp.Compare(a.Dir, b.Dir)) })
	leaderNow, hasLeaderNow := leaderBytes(last.replicas[k], p.Leader)
	if len(pts) >= 2 {
		var recs, bytes []float64
		pl.Produce, recs, bytes = produce(pts)
		if len(pts) == len(samples) {
			pl.recs, pl.bytes = recs, bytes
		}
		pl.Idle = pl.Produce.Records == 0
		pl.ObservedSeconds = pts[len(pts)-1].at.Sub(pts[0].at).Seconds()
	}
	if pl.Produce.Records == 0 && hasLeaderNow {
		// No writes to measure bytes/record by: the log's own average.
		if held := lastOff.End - localStart(lastOff); held > 0 {
			pl.Produce.BytesPerRecord = float64(leaderNow) / float64(held)
		}
	}
	if hasLeaderNow {
		pl.LocalBytes = leaderNow
		if lastOff.LocalStart >= 0 && lastOff.LocalStart > lastOff.Start {
			// Tiered: the records before the local start are remote only;
			// DescribeLogDirs counts local bytes, so the remote bytes are
			// estimated at the partition's bytes/record.
			pl.RemoteBytes = int64(math.Round(float64(lastOff.LocalStart-lastOff.Start) * pl.Produce.BytesPerRecord))
			pl.RemoteEstimated = true
		}
	}
	return pl
}

// localStart is the first offset on disk: the local start when known,
// else the log start.
func localStart(o PartitionOffsets) int64 {
	if o.LocalStart >= 0 {
		return max(o.LocalStart, o.Start)
	}
	return o.Start
}

// produce is the rate of one partition's points (at least two).
func produce(pts []point) (pr Produce, recs, byts []float64) {
	a, z := pts[0], pts[len(pts)-1]
	secs := z.at.Sub(a.at).Seconds()
	pr.Records = max(0, z.end-a.end)
	// shrank: some interval's size went down (retention deleted a segment)
	// or was not reported, so the size delta hides what was written.
	shrank := false
	for i := 1; i < len(pts); i++ {
		s := pts[i].at.Sub(pts[i-1].at).Seconds()
		recs = append(recs, float64(max(0, pts[i].end-pts[i-1].end))/s)
		if d := pts[i].bytes - pts[i-1].bytes; pts[i].hasBytes && pts[i-1].hasBytes && d >= 0 {
			byts = append(byts, float64(d)/s)
		} else {
			shrank = true
		}
	}
	pr.RecordsPerSecond = spread(float64(pr.Records)/secs, recs)
	if pr.Records == 0 {
		return pr, recs, make([]float64, len(recs))
	}
	if !shrank {
		bytes := z.bytes - a.bytes
		pr.BytesPerRecord = float64(bytes) / float64(pr.Records)
		pr.BytesPerSecond = spread(float64(bytes)/secs, byts)
		return pr, recs, byts
	}
	// Records/s times bytes/record of the intervals that grew (0 when
	// none did) stands in.
	pr.BytesEstimated = true
	pr.BytesPerRecord = grownBytesPerRecord(pts)
	byts = make([]float64, len(recs))
	for i := range recs {
		byts[i] = recs[i] * pr.BytesPerRecord
	}
	pr.BytesPerSecond = spread(pr.RecordsPerSecond.Mean*pr.BytesPerRecord, byts)
	return pr, recs, byts
}

// grownBytesPerRecord is bytes/record over the intervals whose size grew.
func grownBytesPerRecord(pts []point) float64 {
	var recs, bytes int64
	for i := 1; i < len(pts); i++ {
		d, n := pts[i].bytes-pts[i-1].bytes, pts[i].end-pts[i-1].end
		if pts[i].hasBytes && pts[i-1].hasBytes && d >= 0 && n > 0 {
			recs, bytes = recs+n, bytes+d
		}
	}
	if recs == 0 {
		return 0
	}
	return float64(bytes) / float64(recs)
}

func spread(mean float64, per []float64) Rate {
	r := Rate{Mean: mean, Min: mean, Max: mean}
	if len(per) > 0 {
		r.Min, r.Max = slices.Min(per), slices.Max(per)
	}
	return r
}

// groupPartition is one group's reading of one partition: how far its
// committed offset moved from the first sample that had it to the last,
// over how long, and by how much in each interval (NaN where a sample
// lacked it).
type groupPartition struct {
	moved     int64
	seconds   float64
	intervals []float64
	last      int64
	hasLast   bool
}

// rate is the partition's fetch rate in records/s over the span the group
// was seen (0 when it was seen once).
func (g groupPartition) rate() float64 {
	if g.seconds <= 0 {
		return 0
	}
	return float64(g.moved) / g.seconds
}

// readings are every group's readings of every partition of layout.
func readings(layout *topology.Cluster, samples []Sample, idx []sampleIndex) map[string]map[topology.Key]groupPartition {
	inLayout := map[topology.Key]bool{}
	for i := range layout.Partitions {
		inLayout[layout.Partitions[i].Key()] = true
	}
	out := map[string]map[topology.Key]groupPartition{}
	for i := range idx {
		for g, m := range idx[i].committed {
			for k := range m {
				if !inLayout[k] {
					continue
				}
				if out[g] == nil {
					out[g] = map[topology.Key]groupPartition{}
				}
				if _, done := out[g][k]; done {
					continue
				}
				out[g][k] = reading(samples, idx, g, k)
			}
		}
	}
	return out
}

func reading(samples []Sample, idx []sampleIndex, g string, k topology.Key) groupPartition {
	gp := groupPartition{intervals: make([]float64, len(samples)-1)}
	var firstAt time.Time
	var first, prev int64
	seen, prevSeen := false, false
	for i := range samples {
		off, ok := idx[i].committed[g][k]
		if i > 0 {
			gp.intervals[i-1] = math.NaN()
			if ok && prevSeen {
				gp.intervals[i-1] = float64(max(0, off-prev)) / samples[i].At.Sub(samples[i-1].At).Seconds()
			}
		}
		prev, prevSeen = off, ok
		if !ok {
			continue
		}
		if !seen {
			firstAt, first, seen = samples[i].At, off, true
		}
		gp.moved = max(0, off-first)
		gp.seconds = samples[i].At.Sub(firstAt).Seconds()
	}
	if off, ok := idx[len(idx)-1].committed[g][k]; ok {
		gp.last, gp.hasLast = off, true
	}
	return gp
}

// groupReads is each group's fetch rate per topic: its committed offsets'
// movement (from the first sample that had each offset to the last one), in
// records/s and, at each partition's bytes/record, bytes/s, summed over the
// topic's partitions; and its lag at the last sample.
func groupReads(rd map[string]map[topology.Key]groupPartition, last sampleIndex, bpr map[topology.Key]float64) []GroupRead {
	type gt struct{ group, topic string }
	reads := map[gt]*GroupRead{}
	perInterval := map[gt][]float64{}
	for _, g := range slices.Sorted(maps.Keys(rd)) {
		for _, k := range slices.SortedFunc(maps.Keys(rd[g]), compareKeys) {
			gp := rd[g][k]
			id := gt{g, k.Topic}
			gr := reads[id]
			if gr == nil {
				gr = &GroupRead{Group: g, Topic: k.Topic}
				reads[id] = gr
				perInterval[id] = make([]float64, len(gp.intervals))
			}
			gr.Partitions++
			gr.Records += gp.moved
			gr.RecordsPerSecond.Mean += gp.rate()
			gr.BytesPerSecond += gp.rate() * bpr[k]
			for i, x := range gp.intervals {
				perInterval[id][i] += x // NaN when a sample lacked it
			}
			if o, ok := last.offsets[k]; ok && gp.hasLast {
				gr.Lag += max(0, o.End-gp.last)
			}
		}
	}
	out := make([]GroupRead, 0, len(reads))
	for id, gr := range reads {
		var known []float64
		for _, x := range perInterval[id] {
			if !math.IsNaN(x) {
				known = append(known, x)
			}
		}
		gr.RecordsPerSecond = spread(gr.RecordsPerSecond.Mean, known)
		out = append(out, *gr)
	}
	slices.SortFunc(out, func(a, b GroupRead) int { return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Group, b.Group)) })
	return out
}

// consumerBytes is the bytes/s every group together fetched per partition.
func consumerBytes(rd map[string]map[topology.Key]groupPartition, bpr map[topology.Key]float64) map[topology.Key]float64 {
	out := map[topology.Key]float64{}
	for _, m := range rd {
		for k, gp := range m {
			out[k] += gp.rate() * bpr[k]
		}
	}
	return out
}

func compareKeys(a, b topology.Key) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

func topicLoads(parts []PartitionLoad, groups []GroupRead, window float64) []TopicLoad {
	var out []TopicLoad
	for i := 0; i < len(parts); {
		j := i
		t := TopicLoad{Topic: parts[i].Topic, Idle: true, Groups: []string{}}
		var bytesWritten float64
		for ; j < len(parts) && parts[j].Topic == t.Topic; j++ {
			p := parts[j]
			t.Partitions++
			t.Produce.Records += p.Produce.Records
			t.Produce.RecordsPerSecond.Mean += p.Produce.RecordsPerSecond.Mean
			t.Produce.BytesPerSecond.Mean += p.Produce.BytesPerSecond.Mean
			t.Produce.BytesEstimated = t.Produce.BytesEstimated || p.Produce.BytesEstimated
			bytesWritten += p.Produce.BytesPerSecond.Mean * window
			t.Idle = t.Idle && p.Idle
			t.SizeBytes += max(0, p.SizeBytes)
			t.RemoteBytes += p.RemoteBytes
			for _, r := range p.Replicas {
				t.ReplicaBytes += r.Bytes
			}
		}
		if t.Produce.Records > 0 {
			t.Produce.BytesPerRecord = bytesWritten / float64(t.Produce.Records)
		}
		t.Produce.RecordsPerSecond = intervalSpread(t.Produce.RecordsPerSecond.Mean, parts[i:j], func(p *PartitionLoad) ([]float64, Rate) { return p.recs, p.Produce.RecordsPerSecond })
		t.Produce.BytesPerSecond = intervalSpread(t.Produce.BytesPerSecond.Mean, parts[i:j], func(p *PartitionLoad) ([]float64, Rate) { return p.bytes, p.Produce.BytesPerSecond })
		for _, g := range groups {
			if g.Topic == t.Topic {
				t.Groups = append(t.Groups, g.Group)
			}
		}
		out = append(out, t)
		i = j
	}
	return out
}

// intervalSpread is the spread of a topic's rate over the intervals: the
// sum of its partitions' rates in each interval when every sample read
// every partition, else the sum of their least and most (bounds on it).
func intervalSpread(mean float64, parts []PartitionLoad, of func(*PartitionLoad) ([]float64, Rate)) Rate {
	var sum []float64
	for i := range parts {
		iv, _ := of(&parts[i])
		if iv == nil {
			r := Rate{Mean: mean}
			for j := range parts {
				_, pr := of(&parts[j])
				r.Min, r.Max = r.Min+pr.Min, r.Max+pr.Max
			}
			return r
		}
		if sum == nil {
			sum = make([]float64, len(iv))
		}
		for j, x := range iv {
			sum[j] += x
		}
	}
	return spread(mean, sum)
}

func brokerLoads(layout *topology.Cluster, parts []PartitionLoad) []BrokerLoad {
	byID := map[int32]*BrokerLoad{}
	get := func(id int32) *BrokerLoad {
		b := byID[id]
		if b == nil {
			b = &BrokerLoad{Broker: id}
			byID[id] = b
		}
		return b
	}
	for _, br := range layout.Brokers {
		if !br.Missing {
			get(br.ID)
		}
	}
	for i := range layout.Partitions {
		p := &layout.Partitions[i]
		pl := parts[i]
		in := pl.Produce.BytesPerSecond.Mean
		for _, r := range p.Replicas {
			b := get(r)
			b.Replicas++
			if r != p.Leader && p.Leader != topology.NoLeader {
				b.ReplicationIn += in
			}
		}
		if p.Leader != topology.NoLeader {
			b := get(p.Leader)
			b.Leaders++
			b.ProduceIn += in
			b.ConsumeOut += pl.ConsumerBytesPerSecond
			b.ReplicationOut += in * float64(followers(p))
		}
		for _, r := range pl.Replicas {
			get(r.Broker).Bytes += r.Bytes
		}
	}
	out := make([]BrokerLoad, 0, len(byID))
	for _, b := range byID {
		b.BytesIn = b.ProduceIn + b.ReplicationIn
		b.BytesOut = b.ConsumeOut + b.ReplicationOut
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b BrokerLoad) int { return cmp.Compare(a.Broker, b.Broker) })
	return out
}

// followers counts the replicas other than the leader.
func followers(p *topology.Partition) int {
	n := 0
	for _, r := range p.Replicas {
		if r != p.Leader {
			n++
		}
	}
	return n
}

func logDirs(parts []PartitionLoad) []LogDir {
	type bd struct {
		b int32
		d string
	}
	m := map[bd]*LogDir{}
	for _, p := range parts {
		for _, r := range p.Replicas {
			k := bd{r.Broker, r.Dir}
			d := m[k]
			if d == nil {
				d = &LogDir{Broker: r.Broker, Dir: r.Dir}
				m[k] = d
			}
			d.Replicas++
			d.Bytes += r.Bytes
		}
	}
	out := make([]LogDir, 0, len(m))
	for _, d := range m {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b LogDir) int { return cmp.Or(cmp.Compare(a.Broker, b.Broker), cmp.Compare(a.Dir, b.Dir)) })
	return out
}
