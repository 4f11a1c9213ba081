// Package chaostest holds test data shared by the chaos experiment's tests
// and its renderers' tests.
package chaostest

import (
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/stats"
)

func ptr(x float64) *float64 { return &x }

// Result is a hand-made result of the default experiment on the embedded
// cluster: roundrobin and node, broker 3 killed, no failover time (a
// simulated cluster), a failover phase too short for skew figures.
func Result() *chaos.Result {
	lat := stats.LatencySummary{Count: 1000, Mean: 7, P50: 6.3, P95: 10, P99: 11.3, P999: 13.3, Max: 20.8, ViolationRate: 0.001}
	phase := func(per map[string]int64, leaders []int32, mom float64) *chaos.PhaseResult {
		return &chaos.PhaseResult{DurationS: 8, Leaders: leaders, PerBroker: per, MaxOverMean: ptr(mom), CV: ptr(mom - 1), Jain: ptr(1 / mom),
			ThroughputMBps: 0.1, RecordsPerS: 1000, Batches: 40, RecordsPerBatch: 25, LatencyMS: lat, E2ELatencyMS: lat,
			ViolationRate: 0.001, ViolationLatency: chaos.LatencyE2E, TimelyThroughputMBps: 0.0999}
	}
	short := func() *chaos.PhaseResult {
		ph := phase(map[string]int64{"1": 30, "2": 10}, []int32{1, 2}, 1.5)
		ph.MaxOverMean, ph.CV, ph.Jain = nil, nil, nil // 20 records per leader
		ph.DurationS = 0.2
		return ph
	}
	return &chaos.Result{
		Schema: chaos.Schema, Cluster: "embedded", Label: "simulated (embedded kfake)", Target: "broker-3", KilledBroker: 3,
		Assignment: "1,2;2,3;3,1", Acks: "all", Idempotent: true, SQFSlack: 64, MaxBufferedRecords: 50000, Stick: 1, RateBytesPerS: 100000, RecordSize: 100,
		LatencyObjectiveMS: 100, MetadataMinAgeMS: 100, ConsumerRereads: 12,
		Notes: []string{"cluster: simulated (embedded kfake)", "failover time: not applicable on a simulated cluster (its election is done before the kill returns)"},
		Partitioners: []chaos.PartitionerResult{
			{Name: "roundrobin", Topic: "kplan-chaos-roundrobin", Sent: 18000, Acked: 18000, KilledBroker: 3, FirstSuccessMS: 273.3,
				Phases: map[string]*chaos.PhaseResult{
					"before":   phase(map[string]int64{"1": 2667, "2": 2667, "3": 2666}, []int32{1, 2, 3}, 1),
					"failover": short(),
					"after":    phase(map[string]int64{"1": 5332, "2": 2666}, []int32{1, 2}, 1.333),
				},
				KSProduce: &stats.KSResult{D: 0.072, P: 1.3e-18, N1: 8000, N2: 8000}},
			{Name: "node", Topic: "kplan-chaos-node", Sent: 18000, Acked: 18000, KilledBroker: 3, FirstSuccessMS: -1,
				Phases: map[string]*chaos.PhaseResult{
					"before":   phase(map[string]int64{"1": 2667, "2": 2667, "3": 2666}, []int32{1, 2, 3}, 1),
					"failover": short(),
					"after":    phase(map[string]int64{"1": 4000, "2": 4000, "-1": 2}, []int32{1, 2}, 1),
				}},
		},
	}
}

// ConsumeAfter turns r into a run whose records were consumed only after the
// producers stopped: no end-to-end latency, violations judged on produce
// latency.
func ConsumeAfter(r *chaos.Result) *chaos.Result {
	r.ConsumeAfter = true
	for _, p := range r.Partitioners {
		for _, ph := range p.Phases {
			ph.E2ELatencyMS = stats.LatencySummary{}
			ph.ViolationRate, ph.ViolationLatency = ph.LatencyMS.ViolationRate, chaos.LatencyProduce
		}
	}
	return r
}

// Lab turns r into a run on a real cluster with a measured failover.
func Lab(r *chaos.Result, failoverMS float64) *chaos.Result {
	r.Cluster, r.Label = "lab", "real (kplan lab: Kafka brokers on this machine)"
	r.FailoverMS = ptr(failoverMS)
	r.Notes = []string{"cluster: " + r.Label}
	for i := range r.Partitioners {
		r.Partitioners[i].FailoverMS = ptr(failoverMS)
	}
	return r
}
