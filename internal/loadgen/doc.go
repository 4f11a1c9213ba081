// Package loadgen is kplan's one traffic engine: it produces paced records
// stamped with an envelope (run, producer, sequence number, send time),
// reads them back with one checking consumer, and counts loss, duplicates
// and end-to-end latency record by record. Experiments (chaos, the measure
// verbs) configure it instead of writing producer and consumer loops of
// their own; it builds its clients through internal/kafka, so TLS, SASL and
// the client id hold everywhere.
//
// The pieces: Envelope (envelope.go), Acks (acks.go), Pacer (pacer.go),
// Tally and Reader, the checking consumer (check.go); the raw measurements
// of `kplan measure` (Measurer, Prober) and the batching study (BatchRun)
// are built from them.
package loadgen
