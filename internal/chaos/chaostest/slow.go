package chaostest

import (
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/stats"
)

// Slow is a hand-made slow-broker run on the lab (--slow
// broker-2:bandwidth=2MB/s, no kill): default and sqf, each at rest
// (before) and slow (fault); sqf's slow-phase throughput is scaled by
// sqfScale (to vary repetitions). Its recommendation is chaos.Recommend's.
func Slow(sqfScale float64) *chaos.Result {
	lat := func(p50, p99 float64) stats.LatencySummary {
		return stats.LatencySummary{Count: 2000, Mean: p50 * 1.2, P50: p50, P95: p99 * 0.8, P99: p99, P999: p99 * 1.5, Max: p99 * 2}
	}
	phase := func(shares map[string]float64, mbps, p50, p99 float64, lost int64) *chaos.PhaseResult {
		per := map[string]int64{}
		for b, s := range shares {
			per[b] = int64(s * 10000)
		}
		return &chaos.PhaseResult{DurationS: 10, Leaders: []int32{1, 2, 3, 4}, Acked: 10000, Lost: lost, PerBroker: per, Shares: shares,
			ThroughputMBps: mbps, LatencyMS: lat(p50, p99), E2ELatencyMS: lat(p50*1.3, p99*1.1),
			ViolationRate: 0.1, ViolationLatency: chaos.LatencyE2E, TimelyThroughputMBps: mbps * 0.9}
	}
	even := map[string]float64{"1": 0.25, "2": 0.25, "3": 0.25, "4": 0.25}
	res := &chaos.Result{
		Schema: chaos.Schema, Cluster: "lab", Label: "real (kplan lab: Kafka brokers on this machine)", Target: "none", KilledBroker: -1,
		Assignment: "1,2;2,3;3,4;4,1", Acks: "all", Idempotent: true, SQFSlack: 64, MaxBufferedRecords: 1000, Stick: 1, RecordSize: 10240,
		Sequential: true, LatencyObjectiveMS: 200, MetadataMinAgeMS: 100,
		Fault: &chaos.FaultResult{Fault: "bandwidth:broker-2:2MB/s", Kind: chaos.FaultBandwidth, Broker: 2, Description: "cap what broker 2 sends at 2MB/s",
			InjectedAtS: 13, InForceMS: 40, Phases: []string{"fault"}},
		Slow:  "broker-2:bandwidth=2MB/s",
		Notes: []string{"cluster: real (kplan lab: Kafka brokers on this machine)"},
		Partitioners: []chaos.PartitionerResult{
			{Name: "default", Topic: "kplan-chaos", Sent: 20000, Acked: 20000, KilledBroker: -1, FirstSuccessMS: -1,
				Phases: map[string]*chaos.PhaseResult{
					"before": phase(even, 40, 60, 900, 0),
					"fault":  phase(map[string]float64{"1": 0.27, "2": 0.18, "3": 0.28, "4": 0.27}, 5, 1100, 9000, 0),
				}},
			{Name: "sqf", Topic: "kplan-chaos", Sent: 20000, Acked: 20000, KilledBroker: -1, FirstSuccessMS: -1,
				Phases: map[string]*chaos.PhaseResult{
					"before": phase(even, 39, 70, 850, 0),
					"fault":  phase(map[string]float64{"1": 0.32, "2": 0.04, "3": 0.32, "4": 0.32}, 20*sqfScale, 190, 4000, 0),
				}},
		},
	}
	res.Recommendation = chaos.Recommend([]*chaos.Result{res}, chaos.ByThroughput)
	return res
}
