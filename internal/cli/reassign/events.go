package reassign

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/report"
)

// EventSchema versions the JSON progress events of `kplan reassign apply
// --progress json`: one object a line on stderr.
const EventSchema = "kplan.reassign.apply.event/v1"

// Progress formats of --progress.
const (
	progressAuto = "auto"
	progressText = "text"
	progressJSON = "json"
)

// parseProgress reads --progress: auto is json with -o json, text
// otherwise.
func parseProgress(s string, format report.Format) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case progressText, progressJSON:
		return v, nil
	case progressAuto, "":
		if format == report.JSON {
			return progressJSON, nil
		}
		return progressText, nil
	}
	return "", errkind.Usagef("", "--progress: want auto, text or json, got %q", s)
}

// progressEvent is one JSON progress event.
type progressEvent struct {
	Schema string `json:"schema"`
	// Event is plan, accepted, progress, log-dirs, throttle, elected,
	// canary-started or canary-stopped.
	Event          string  `json:"event"`
	ElapsedSeconds float64 `json:"elapsed_s"`
	Partitions     int     `json:"partitions"`
	Complete       int     `json:"complete"`
	InProgress     int     `json:"in_progress"`
	Steps          int     `json:"steps"`
	Submitted      int     `json:"submitted"`
	// Wave and Moves are the request the controller accepted and its
	// moves (accepted).
	Wave  int `json:"wave,omitempty"`
	Moves int `json:"moves,omitempty"`
	// Bytes is the progress in bytes, with the rate and the ETA
	// (progress, when sizes are known).
	Bytes *apply.ByteProgress `json:"bytes,omitempty"`
	// Changes are the adaptive throttle's changes (throttle).
	Changes []apply.RateChange `json:"changes,omitempty"`
	// Plan is what is about to change (plan): the partitions not yet at
	// their target, and the throttle.
	Plan     []apply.PartitionStatus `json:"plan,omitempty"`
	Throttle int64                   `json:"throttle_bytes_per_s,omitempty"`
	ToElect  int                     `json:"to_elect,omitempty"`
	// LogDirs is where the plan's log_dirs stand (log-dirs).
	LogDirs *apply.DirProgress `json:"log_dirs,omitempty"`
	// Election is the preferred election's answer (elected).
	Election *apply.Election `json:"election,omitempty"`
	// Canary is the canary's topic and brokers (canary-started) or its
	// whole run (canary-stopped).
	Canary *loadgen.CanaryResult `json:"canary,omitempty"`
}

var eventNames = map[apply.EventKind]string{
	apply.EventPlan: "plan", apply.EventAccepted: "accepted", apply.EventProgress: "progress",
	apply.EventThrottle: "throttle", apply.EventElected: "elected", apply.EventDirs: "log-dirs",
}

// jsonEvent is e as a JSON progress event.
func jsonEvent(e apply.Event) progressEvent {
	ev := progressEvent{Schema: EventSchema, Event: eventNames[e.Kind], ElapsedSeconds: e.Elapsed.Seconds(), Wave: e.Wave, Moves: e.Moves, Bytes: e.Bytes, Changes: e.Changes}
	if r := e.Result; r != nil {
		ev.Partitions, ev.Complete, ev.InProgress, ev.Steps, ev.Submitted = len(r.Partitions), r.Complete, r.InProgress, r.Steps, r.Submitted
		switch e.Kind {
		case apply.EventElected:
			ev.Election = r.Election
		case apply.EventDirs:
			ev.LogDirs = r.Dirs
		case apply.EventPlan:
			ev.Plan, ev.ToElect = []apply.PartitionStatus{}, r.ToElect
			for _, p := range r.Partitions {
				if p.Status != apply.Complete {
					ev.Plan = append(ev.Plan, p)
				}
			}
		}
	}
	return ev
}

// writeEvent prints ev as one line on stderr.
func (o *ApplyOptions) writeEvent(ev progressEvent) {
	b, err := json.Marshal(ev)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"schema":%q,"event":"error","error":%q}`, EventSchema, err.Error()))
	}
	fmt.Fprintf(o.IO.ErrOut, "%s\n", b)
}

// canaryEvent reports the canary's start (its topic and brokers) or end.
func (o *ApplyOptions) canaryEvent(kind string, c *loadgen.CanaryResult) {
	o.writeEvent(progressEvent{Schema: EventSchema, Event: kind, Canary: c})
}
