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
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

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
