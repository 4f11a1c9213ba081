// Package experiment holds the workflows of `kplan measure` as actions
// (Helm's pkg/action, kubectl's drain.Helper): Inputs (Tp, Tc, l_r and u
// measured on a live cluster), Unavailability (broker kills against the
// partitions the broker led) and Batching (seed 003's linger x batch-size
// sweep). Each is a struct holding its settings and the cluster it works
// on, with a progress callback and a Run method returning data; none
// parses flags or renders. The maths stays in internal/measure (which
// internal/loadgen imports, hence this separate package); the Kafka side
// is internal/loadgen, internal/kafka and internal/chaos.
package experiment
