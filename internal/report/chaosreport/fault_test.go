package chaosreport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaostest"
	"github.com/kplan-dev/kplan/internal/report"
)

// A result with a fault has a section setting the faulted broker's share
// beside the others', phase by phase, and says why there is no prediction.
func TestFaultSection(t *testing.T) {
	res := chaostest.Result()
	res.KilledBroker = -1
	res.Fault = &chaos.FaultResult{Fault: "delay:broker-2:200ms", Kind: chaos.FaultDelay, Broker: 2, Description: "delay broker 2's packets by 200ms",
		InjectedAtS: 10, InForceMS: 12.5, Phases: []string{"fault"}}
	for i := range res.Partitioners {
		p := &res.Partitioners[i]
		p.Phases["fault"] = &chaos.PhaseResult{Leaders: []int32{1, 2, 3}, Shares: map[string]float64{"1": 0.4, "2": 0.2, "3": 0.4}, NoPrediction: chaos.NoPredictionUnderFault}
	}
	out := render(t, report.Table, res, Document(res, false))
	assert.Contains(t, out, "kplan chaos: fault delay:broker-2:200ms")
	assert.Contains(t, out, "Network fault: delay broker 2's packets by 200ms (delay:broker-2:200ms)")
	name := res.Partitioners[0].Name
	row := rowOf(t, out, name, "fault", "yes")
	assert.Contains(t, row, "20.0%")
	assert.Contains(t, row, "1: 40.0%, 2: 20.0%, 3: 40.0%")
	assert.Contains(t, out, chaos.NoPredictionUnderFault)
	assert.Contains(t, out, "cleared when the run ended")
	j := render(t, report.JSON, res, Document(res, false))
	assert.True(t, strings.Contains(j, `"fault": "delay:broker-2:200ms"`), j)
	assert.Contains(t, j, `"no_prediction": "no prediction under a network fault"`)
}

// The plan of a --bootstrap-server run with --fault shows the fault's
// broker, steps and NetworkChaos (what --dry-run prints).
func TestWriteFaultPlan(t *testing.T) {
	b := int32(2)
	p := &chaos.Plan{Schema: chaos.PlanSchema, Label: "real", Killer: "chaos-mesh", Target: "none", Broker: -1, Topics: []string{"kplan-chaos-sqf"},
		Assignment: "1,2;2,3;3,1", DryRun: true, Fault: "delay:broker-2:200ms", FaultBroker: &b,
		FaultPlan: &chaos.KillPlan{Target: "pod kafka/my-cluster-pool-a-2", Steps: []string{"create NetworkChaos kafka/kplan-x"},
			Manifest: "apiVersion: chaos-mesh.org/v1alpha1\nkind: NetworkChaos\n"}}
	var sb strings.Builder
	require.NoError(t, WritePlan(&sb, report.Table, p))
	out := sb.String()
	assert.Contains(t, out, "fault:       delay:broker-2:200ms: broker 2\n")
	assert.Contains(t, out, "fault target: pod kafka/my-cluster-pool-a-2\n")
	assert.Contains(t, out, "  1. create NetworkChaos kafka/kplan-x\n")
	assert.Contains(t, out, "fault manifest:\n  apiVersion: chaos-mesh.org/v1alpha1\n  kind: NetworkChaos\n")
	sb.Reset()
	require.NoError(t, WritePlan(&sb, report.JSON, p))
	assert.Contains(t, sb.String(), `"fault_plan": {`)
}
