//go:build !race

package reassign

// raceScale is 1 without the race detector: every instance runs (see
// race_on_test.go).
const raceScale = 1
