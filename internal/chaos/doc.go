// Package chaos runs broker-failure experiments against Kafka clusters: one
// producer per partitioner writes while a broker is killed, and Run returns
// a Result (records per broker and skew, throughput, latency, loss) per
// partitioner and phase. It renders nothing and writes no files: tables,
// Markdown, PNGs and report files are internal/cli/chaos's and
// internal/report's. Each kind of cluster (internal/chaos/embedded,
// internal/chaos/lab) implements Cluster in its own package.
package chaos
