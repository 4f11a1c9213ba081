package experiment

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kplan-dev/kplan/internal/measure"
)

// UnavailSchema versions the JSON of `measure unavailability`.
const UnavailSchema = "kplan.measure-unavailability/v1"

// UnavailabilityResult is what `measure unavailability` measured and fitted.
type UnavailabilityResult struct {
	Schema string `json:"schema"`
	// Date is when the measurement started (UTC, RFC 3339).
	Date    string `json:"date"`
	Cluster string `json:"cluster"`
	Label   string `json:"label"`
	// Victim is the broker killed; Controller the active KRaft controller
	// before the first kill (-1: unknown).
	Victim            int32  `json:"victim"`
	Controller        int32  `json:"controller"`
	ReplicationFactor int    `json:"replication_factor"`
	Repeat            int    `json:"repeat"`
	Counts            []int  `json:"counts"`
	Method            string `json:"method"`
	// Runs are every kill's figures, by count then repetition.
	Runs []measure.UnavailRun `json:"runs"`
	// Fit is nil when the runs cannot give a line (FitError says why).
	Fit      *measure.UnavailFit `json:"fit,omitempty"`
	FitError string              `json:"fit_error,omitempty"`
	// ElectionTime is the u a plan takes (election-time); ElectionTimeBound
	// says it is the slope's upper 95% bound rather than the slope.
	ElectionTime      string `json:"election_time,omitempty"`
	ElectionTimeBound bool   `json:"election_time_is_bound,omitempty"`
	// PlanLines are the lines for a `kplan size` plan file.
	PlanLines []string `json:"plan_lines,omitempty"`
	// Partial is set when the measurement stopped early (error or Ctrl-C).
	Partial bool `json:"partial,omitempty"`
}

// UnavailMethod says how the probe works, in every output.
const UnavailMethod = "one franz-go producer, acks=all, idempotence off; one record per partition produced right after the kill and retried every 25ms until acknowledged; a partition is available again at its acknowledgement; unavailability for N = until all N partitions were"

// Finish fills the fit, the election time and the plan lines from the runs.
func (r *UnavailabilityResult) Finish() {
	f, err := measure.FitUnavailability(r.Runs)
	if err != nil {
		r.FitError = err.Error()
		return
	}
	r.Fit = f
	u, bound := f.ElectionTime()
	r.ElectionTime, r.ElectionTimeBound = FormatElectionTime(u), bound
	r.PlanLines = r.planLines()
}

// FormatElectionTime spells d for a plan file: whole microseconds as
// "850us", else milliseconds as "1.25ms".
func FormatElectionTime(d time.Duration) string {
	if d < time.Millisecond {
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// ElectionComment is the comment beside election-time in a plan.
func (r *UnavailabilityResult) ElectionComment() string {
	if r.ElectionTimeBound {
		return "u: upper 95% bound of the slope (not significant), kplan measure unavailability " + r.Date[:10]
	}
	return "u: slope of the fit, kplan measure unavailability " + r.Date[:10]
}

// planLines are the plan-file lines with the fit in comments.
func (r *UnavailabilityResult) planLines() []string {
	f := r.Fit
	return []string{
		fmt.Sprintf("# kplan measure unavailability, %s, %s: broker %d killed, replication factor %d, partitions %s, %d runs each", r.Date, r.Label, r.Victim, r.ReplicationFactor, JoinCounts(r.Counts), r.Repeat),
		fmt.Sprintf("# detection (intercept) %s; u (slope) %s per partition; R² %.3f; %s", plusMinus(f.DetectionMS, f.DetectionSEMS, "ms"), plusMinus(f.UPerPartitionMS, f.USEMS, "ms"), f.R2, f.Verdict),
		fmt.Sprintf("election-time: %-14s # %s", r.ElectionTime, r.ElectionComment()),
	}
}

// plusMinus spells v ± se.
func plusMinus(v float64, se *float64, unit string) string {
	if se == nil {
		return fmt.Sprintf("%.4g %s", v, unit)
	}
	return fmt.Sprintf("%.4g ± %.2g %s", v, *se, unit)
}
