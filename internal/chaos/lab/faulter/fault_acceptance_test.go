//go:build acceptance

package faulter_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/acceptance"
	"github.com/kplan-dev/kplan/internal/labtest"
)

// TestAcceptLabNetClientsDelay measures, ACCEPT_REPEAT times, what 50ms on
// the clients' path does to a produce's round trip. The fastest round trip
// of each run of 31 is the one least disturbed by the other processes of a
// loaded machine: with the delay it is at least 50 ms, it grows by at least
// 40 ms over the fastest without it, and after the clear it is back at
// least 25 ms below the delayed one.
func TestAcceptLabNetClientsDelay(t *testing.T) {
	lab := labtest.Shared(t)
	var fastest, grown, gone []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i := range acceptance.Repeat(t) {
		base, delayed, after := clientsDelay(t, lab, fmt.Sprintf("accdelay%d", i))
		fastest = append(fastest, ms(delayed[0]))
		grown = append(grown, ms(delayed[0]-min(base[0], after[0])))
		gone = append(gone, ms(delayed[0]-after[0]))
	}
	acceptance.Check(t, "lab-net/clients-delay-50ms/fastest-delayed-rtt", "ms", acceptance.AtLeast, 50, fastest)
	acceptance.Check(t, "lab-net/clients-delay-50ms/rtt-growth", "ms", acceptance.AtLeast, 40, grown)
	acceptance.Check(t, "lab-net/clients-delay-50ms/drop-after-clear", "ms", acceptance.AtLeast, 25, gone)
}
