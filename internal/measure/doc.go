// Package measure is the pure side of `kplan measure`: it turns raw
// samples taken on a live cluster into the sizing model's measured inputs
// (seed 002: Tp, Tc, l_r, u, Hmax), each with its spread, and writes the
// plan file `kplan size --plan` reads; it fits unavailability after a
// broker loss against the partitions the broker led (detection plus u per
// partition); and it holds seed 003's batching study (grid, per-cell
// results, recommendation). It does no I/O and renders nothing: the Kafka
// side lives in internal/loadgen, the rendering in internal/cli and
// internal/report, the clock and machine come from the caller.
package measure
