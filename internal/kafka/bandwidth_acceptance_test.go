//go:build acceptance

package kafka_test

import (
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/acceptance"
)

// TestAcceptBrokerBandwidth is issue 3's per-broker capacity figure, each
// measured ACCEPT_REPEAT times on one lab with a 5MB/s link per broker:
// writing to one broker stays within 5 +- 1.5 MB/s, and writing to all
// three carries more than twice what one does.
func TestAcceptBrokerBandwidth(t *testing.T) {
	bootstrap := bandwidthLab(t)
	var one, ratio []float64
	for range acceptance.Repeat(t) {
		o := throughput(t, bootstrap, "bw", []int32{0}, 4*time.Second)
		a := throughput(t, bootstrap, "bw", []int32{0, 1, 2}, 4*time.Second)
		t.Logf("one broker: %.2f MB/s; three brokers: %.2f MB/s", o, a)
		one = append(one, o)
		ratio = append(ratio, a/o)
	}
	acceptance.Check(t, "lab/bandwidth-5MBps/one-broker", "MB/s", acceptance.AtLeast, 3.5, one)
	acceptance.Check(t, "lab/bandwidth-5MBps/one-broker-max", "MB/s", acceptance.AtMost, 6.5, one)
	acceptance.Check(t, "lab/bandwidth-5MBps/three-over-one", "", acceptance.AtLeast, 2, ratio)
}
