//go:build acceptance

package embedded

import (
	"testing"

	"github.com/kplan-dev/kplan/internal/acceptance"
)

// TestAcceptKillWindow measures, ACCEPT_REPEAT times, how much less of the
// blind window's records sqf partitions to the dead broker than node does
// (node's share minus sqf's): sqf sees broker 3's in-flight grow and stops
// choosing it, so the difference is above 0.
func TestAcceptKillWindow(t *testing.T) {
	var diff []float64
	for range acceptance.Repeat(t) {
		toDead := killWindow(t)
		diff = append(diff, toDead["node"]-toDead["sqf"])
	}
	acceptance.Check(t, "chaos/embedded-kill-window/node-minus-sqf-share-to-dead", "", acceptance.AtLeast, 0, diff)
}
