package chaosreport

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaostest"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

// killEachResult is --kill each on three brokers, hand-made: roundrobin
// with predictions (the survivor that takes the dead broker's partition
// carries two thirds), node without.
func killEachResult() *chaos.KillEach {
	var runs []*chaos.Result
	for _, id := range []int32{1, 2, 3} {
		res := chaostest.Result()
		res.Target, res.KilledBroker = fmt.Sprintf("broker-%d", id), id
		var surv []string
		for _, b := range []int32{1, 2, 3} {
			if b != id {
				surv = append(surv, strconv.Itoa(int(b)))
			}
		}
		// Ring 1,2;2,3;3,1: the dead broker's partition fails over to the
		// next broker in the ring.
		heavy := strconv.Itoa(int(id%3 + 1))
		after := res.Partitioners[0].Phases["after"]
		after.PredictedShare, after.MeasuredShare = map[string]float64{}, map[string]float64{}
		for _, b := range surv {
			p, m := 1/3.0, 0.3341
			if b == heavy {
				p, m = 2/3.0, 0.6659
			}
			after.PredictedShare[b], after.MeasuredShare[b] = p, m
		}
		after.PredictedMaxOverMean, after.MaxErrorPts = fp(1.3333), fp(0.08)
		runs = append(runs, res)
	}
	return chaos.NewKillEach(runs, []bool{true, true, true})
}

func TestKillEachGolden(t *testing.T) {
	k := killEachResult()
	for _, tc := range []struct {
		format report.Format
		name   string
	}{{report.Table, "kill-each.txt"}, {report.Markdown, "kill-each.md"}} {
		golden.AssertString(t, tc.name, render(t, tc.format, k, KillEachDocument(k)))
	}
	var got struct {
		Schema string `json:"schema"`
		Kills  []struct {
			Broker       int32 `json:"broker"`
			Partitioners []struct {
				Name      string   `json:"name"`
				Predicted *float64 `json:"predicted_max_over_mean"`
				Measured  *float64 `json:"measured_max_over_mean"`
			} `json:"partitioners"`
		} `json:"kills"`
		Runs []json.RawMessage `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(render(t, report.JSON, k, report.Document{})), &got))
	assert.Equal(t, chaos.KillEachSchema, got.Schema)
	require.Len(t, got.Kills, 3)
	assert.Len(t, got.Runs, 3)
	for i, kl := range got.Kills {
		assert.Equal(t, int32(i+1), kl.Broker)
		require.Len(t, kl.Partitioners, 2)
		assert.InDelta(t, 1.3333, *kl.Partitioners[0].Predicted, 1e-9)
		assert.InDelta(t, 1.3318, *kl.Partitioners[0].Measured, 1e-9, "the largest measured share over the mean")
		assert.Nil(t, kl.Partitioners[1].Predicted, "node has no prediction here")
	}
}
