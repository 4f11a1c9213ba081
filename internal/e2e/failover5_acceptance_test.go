//go:build acceptance

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/acceptance"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/stats"
)

// Issue 20's acceptance bounds for the failover-5 workload after the plan.
const (
	// maxOverMeanBound bounds round robin's measured max/mean over the
	// survivors of every kill: the upper end of its confidence interval
	// over the repetitions.
	maxOverMeanBound = 1.10
	// predictionPts bounds, per kill and survivor, the distance in
	// percentage points between the mean measured share and the predicted
	// one.
	predictionPts = 3.0
	// ciLevel is the confidence level of the interval.
	ciLevel = 0.95
)

// detailOut is where the detailed figures go (shares per survivor, the
// plan's moves), from this package: beside, not inside, the acceptance
// figures' directory, which holds acceptance.Figure files only.
const detailOut = "../../out/failover5/failover5.json"

// proofFigures is the JSON of out/failover5/failover5.json.
type proofFigures struct {
	Workload    string  `json:"workload"`
	Repetitions int     `json:"repetitions"`
	Bound       float64 `json:"max_over_mean_bound"`
	PredPts     float64 `json:"prediction_bound_pts"`
	Level       float64 `json:"ci_level"`
	// Moves are the partitions each repetition's plan changed.
	Moves []int `json:"plan_partitions"`
	// Kills are per broker killed, before and after the plan.
	Kills []killFigures `json:"kills"`
}

// killFigures is one broker's kill over the repetitions.
type killFigures struct {
	Broker int32        `json:"broker"`
	Before phaseFigures `json:"before"`
	After  phaseFigures `json:"after"`
}

// phaseFigures is round robin's after-kill phase of one side of the plan.
type phaseFigures struct {
	// Measured is the measured max/mean of each repetition, CI its
	// interval (absent with one repetition); Predicted the prediction (the
	// same for every repetition of a side).
	Measured  []float64       `json:"measured_max_over_mean"`
	CI        *stats.Interval `json:"measured_ci,omitempty"`
	Predicted float64         `json:"predicted_max_over_mean"`
	// MeanShare is each survivor's mean measured share (fractions of 1), PredictedShare
	// the prediction, MaxErrorPts the largest distance between the two.
	MeanShare      map[string]float64 `json:"mean_measured_share"`
	PredictedShare map[string]float64 `json:"predicted_share"`
	MaxErrorPts    float64            `json:"max_error_pts"`
	// ErrorPts is, per repetition, the largest distance between a
	// survivor's measured share and its prediction.
	ErrorPts []float64 `json:"error_pts"`
}

// TestAcceptanceReassignFailover5 is issue 20's proof on real brokers with
// repetitions (ACCEPT_REPEAT, default 3): each repetition runs the sequence
// (--kill each, reassign, apply, --kill each) on topics of its own with the
// workload's rate and phases. After the plan, round robin's max/mean after
// every kill stays at most 1.10 (the upper end of its 95% interval) and
// every survivor's mean measured share is within 3 points of the
// prediction. Each kill's two figures go through acceptance.Check (to
// out/acceptance, then docs/BENCHMARKS.md); the details go to
// out/failover5/failover5.json.
func TestAcceptanceReassignFailover5(t *testing.T) {
	reps := acceptance.Repeat(t)
	lab := labtest.Start(t, labtest.Options{Brokers: 5, Racks: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(reps)*15*time.Minute)
	defer cancel()

	var before, after []*chaos.KillEach
	fig := proofFigures{Workload: "chaos/failover-5.yaml", Repetitions: reps, Bound: maxOverMeanBound, PredPts: predictionPts, Level: ciLevel}
	for i := range reps {
		seq := sequence{Prefix: "accept" + strconv.Itoa(i+1)}
		res := seq.run(ctx, t, lab)
		checkKillEach(t, seq.Prefix+" before", res.Before, seq.Prefix)
		checkKillEach(t, seq.Prefix+" after", res.After, seq.Prefix)
		if t.Failed() {
			t.FailNow()
		}
		before, after = append(before, res.Before), append(after, res.After)
		fig.Moves = append(fig.Moves, len(res.Plan))
	}
	for k := range before[0].Kills {
		kf := killFigures{Broker: before[0].Kills[k].Broker, Before: phaseOf(t, before, k), After: phaseOf(t, after, k)}
		fig.Kills = append(fig.Kills, kf)
	}

	b, err := json.MarshalIndent(fig, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(detailOut), 0o755))
	require.NoError(t, os.WriteFile(detailOut, append(b, '\n'), 0o644))
	t.Logf("details in %s:\n%s", detailOut, b)

	for _, kf := range fig.Kills {
		name := fmt.Sprintf("e2e/failover5/after-plan/kill-broker-%d/roundrobin", kf.Broker)
		acceptance.Check(t, name+"/max-over-mean", "", acceptance.AtMost, maxOverMeanBound, kf.After.Measured)
		acceptance.Check(t, name+"/max-error", "pts", acceptance.AtMost, predictionPts, kf.After.ErrorPts)
	}
}

// phaseOf gathers kill k of every repetition in runs.
func phaseOf(t *testing.T, runs []*chaos.KillEach, k int) phaseFigures {
	t.Helper()
	pf := phaseFigures{MeanShare: map[string]float64{}}
	for _, r := range runs {
		kl := r.Kills[k]
		require.Equal(t, runs[0].Kills[k].Broker, kl.Broker, "the kills' order")
		p := kl.Partitioners[0]
		pf.Measured = append(pf.Measured, *p.MeasuredMaxOverMean)
		worst := 0.0
		for b, s := range p.PredictedShare {
			worst = math.Max(worst, 100*math.Abs(p.MeasuredShare[b]-s))
		}
		pf.ErrorPts = append(pf.ErrorPts, worst)
		pf.Predicted = *p.PredictedMaxOverMean
		pf.PredictedShare = p.PredictedShare
		for b, s := range p.MeasuredShare {
			pf.MeanShare[b] += s / float64(len(runs))
		}
	}
	if len(runs) > 1 {
		ci, err := stats.MeanCI(pf.Measured, ciLevel)
		require.NoError(t, err)
		pf.CI = &ci
	}
	for b, s := range pf.PredictedShare {
		pf.MaxErrorPts = math.Max(pf.MaxErrorPts, 100*math.Abs(pf.MeanShare[b]-s))
	}
	return pf
}
