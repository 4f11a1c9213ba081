package chaos

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaostest"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
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
		golden.AssertString(t, tc.name, render(t, tc.format, k, killEachDoc(k)))
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

func TestKillEachOptions(t *testing.T) {
	o, err := parse(t, "--kill", "each")
	require.NoError(t, err)
	assert.Equal(t, chaos.TargetEach, o.Config.Target.Kind)
	_, err = parse(t, "--kill", "each", "--repeat", "2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--repeat: not with the target each")
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	_, err = parse(t, "--kill", "each", "--bootstrap-server", "localhost:9092", "--killer", "exec", "--kill-cmd", "true")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--restore-cmd: required with --kill each")
}

// TestKillEachEmbedded kills each broker of the embedded cluster in turn:
// one kill per broker, each restored (a fresh cluster), a prediction per
// kill equal to the audit's election, nothing lost.
func TestKillEachEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiments")
	}
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	cmd := NewCmdChaos(f, nil)
	cmd.SetArgs([]string{"--kill", "each", "--partitioner", "roundrobin", "--warmup", "300ms",
		"--phase-duration", "1s", "--rate", "20kB/s", "-o", "json"})
	require.NoError(t, cmd.Execute())
	var got chaos.KillEach
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, chaos.KillEachSchema, got.Schema)
	require.Len(t, got.Kills, 3)
	var killed []int32
	for _, k := range got.Kills {
		killed = append(killed, k.Broker)
		assert.True(t, k.Restored)
		require.Len(t, k.Partitioners, 1)
		p := k.Partitioners[0]
		assert.Zero(t, p.Lost)
		assert.Positive(t, p.Acked)
		// Ring 1,2;2,3;3,1 with RF 2: the dead broker's partition moves to
		// the next broker of the ring, which then carries two of three.
		heavy := strconv.Itoa(int(k.Broker%3 + 1))
		require.Contains(t, p.PredictedShare, heavy, "kill %d", k.Broker)
		assert.InDelta(t, 2/3.0, p.PredictedShare[heavy], 1e-3)
		assert.NotContains(t, p.PredictedShare, strconv.Itoa(int(k.Broker)))
		require.NotNil(t, p.PredictedMaxOverMean)
		assert.InDelta(t, 4/3.0, *p.PredictedMaxOverMean, 1e-3)
	}
	assert.Equal(t, []int32{1, 2, 3}, killed)
	for i := 1; i <= 3; i++ {
		assert.Contains(t, errOut.String(), fmt.Sprintf("cycle %d/3: killed broker %d", i, i))
	}
}

// TestFailover5Concentrates checks the shipped chaos/failover-5.yaml does
// what its comment says, by brute force over its layout: 5 brokers, RF 2
// and RF 3 topics, every broker leading the same number of partitions, and
// at least one kill after which round robin (every partition the same
// share, the topics at equal rates and sizes) puts max/mean >= 1.30 on the
// survivors, Kafka's election being the first live replica in order.
func TestFailover5Concentrates(t *testing.T) {
	o, err := parse(t, "--workload", "../../../chaos/failover-5.yaml")
	require.NoError(t, err)
	assert.Equal(t, chaos.TargetEach, o.Config.Target.Kind)
	assert.Equal(t, 5, o.Brokers)
	rfs := map[int]bool{}
	lead := map[int32]int{}
	worst := 0.0
	for _, w := range o.Config.Workload {
		rfs[len(w.Assignment[0])] = true
		for _, reps := range w.Assignment {
			lead[reps[0]]++
		}
	}
	assert.Equal(t, map[int]bool{2: true, 3: true}, rfs)
	assert.Len(t, lead, 5)
	for _, n := range lead {
		assert.Equal(t, lead[1], n, "leaders even before a kill")
	}
	for dead := int32(1); dead <= 5; dead++ {
		after := map[int32]float64{}
		for _, w := range o.Config.Workload {
			for _, reps := range w.Assignment {
				for _, r := range reps {
					if r != dead {
						after[r] += 1 / float64(len(w.Assignment))
						break
					}
				}
			}
		}
		var hi, sum float64
		for _, v := range after {
			hi, sum = max(hi, v), sum+v
		}
		worst = max(worst, hi*float64(len(after))/sum)
	}
	assert.GreaterOrEqual(t, worst, 1.30)
}
