//go:build race

package reassign

// raceScale divides the instance counts of the heaviest property tests
// under the race detector (make test's unit run), which slows this
// single-goroutine planning code about 8x and finds nothing in it: with
// -race they check their laws on a third of the instances; `go test
// ./internal/reassign/` runs them all.
const raceScale = 3
