package reassign

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/stats"
	"github.com/kplan-dev/kplan/internal/topology"
)

// slowBroker is a canary whose p99 on broker 3 is over the objective in
// the first window and calm after; every other broker is in the band.
type slowBroker struct {
	started []int32
	windows int
}

func (s *slowBroker) Start(_ context.Context, brokers []int32) error {
	s.started = slices.Clone(brokers)
	return nil
}

func (s *slowBroker) Window() map[int32]stats.LatencySummary {
	out := map[int32]stats.LatencySummary{}
	for _, b := range s.started {
		p99 := 180.0
		if b == 3 {
			p99 = 5
			if s.windows == 0 {
				p99 = 700
			}
		}
		out[b] = stats.LatencySummary{Count: 100, P50: p99 / 2, P99: p99}
	}
	s.windows++
	return out
}

// A guarded apply on the fake cluster: the throttle changes are said on
// stderr as they happen, shown in the report and in its JSON, and the
// throttle is removed at the end.
func TestApplyGuarded(t *testing.T) {
	for _, format := range []report.Format{report.Table, report.JSON} {
		var parts []topology.Partition
		var plan []string
		for p := range int32(6) {
			parts = append(parts, applytest.Part("a", p, 1, 2))
			plan = append(plan, fmt.Sprintf(`{"topic":"a","partition":%d,"replicas":[1,3]}`, p))
		}
		adm := applytest.New([]int32{1, 2, 3}, parts...)
		adm.FinishPerPoll = 1
		src := &slowBroker{}
		code, out, errOut, msg := runFake(t, adm, `{"version":1,"partitions":[`+strings.Join(plan, ",")+`]}`, func(o *ApplyOptions) {
			o.Format, o.Yes, o.Throttle = format, true, 10_000_000
			// Raises at once (internal/reassign/apply tests the ramps).
			o.Rule = &apply.ThrottleRule{Objective: 200 * time.Millisecond, Min: 1_000_000, Max: 40_000_000, Period: time.Second, Ramp: -1}
			o.latency = src
			o.MaxInflightPerBroker = 1
		})
		require.Equal(t, cmdutil.ExitOK, code, msg)
		assert.Equal(t, []int32{1, 2, 3}, src.started)
		assert.Contains(t, errOut, "kplan reassign apply: throttle on broker 3: 10.0MB/s -> 2.86MB/s (p99 700 ms above the objective 200ms: cut)")
		assert.Contains(t, adm.Calls, "SetBrokerRates 3=2857142")
		assert.Contains(t, adm.Calls[len(adm.Calls)-1], "ClearThrottle [1 2 3] [a]")
		if format == report.Table {
			assert.Contains(t, out, "Throttle changes")
			continue
		}
		var got struct {
			Adaptive struct {
				Objective int64 `json:"objective_ns"`
				Changes   []struct {
					Broker int32  `json:"broker"`
					To     int64  `json:"to_bytes_per_s"`
					Reason string `json:"reason"`
				} `json:"changes"`
				Windows []struct{} `json:"windows"`
			} `json:"adaptive_throttle"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		assert.Equal(t, int64(200*time.Millisecond), got.Adaptive.Objective)
		require.NotEmpty(t, got.Adaptive.Changes)
		assert.Equal(t, int32(3), got.Adaptive.Changes[0].Broker)
		assert.Equal(t, int64(2_857_142), got.Adaptive.Changes[0].To, "10MB/s x 200/700")
		assert.NotEmpty(t, got.Adaptive.Windows)
	}
}
