// Package measurereport renders what `kplan measure` measured: the plan of
// inputs and what a run will do, the batching study (tables, heatmap,
// --report directory, --apply-to properties) and the unavailability fit
// (tables, plot, --report directory, the plan file's election-time and
// the remote run's plan). Its functions are pure functions of
// internal/measure's and internal/measure/experiment's result types, or
// write files from them.
package measurereport
