//go:build integration

package failover5

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// TestKillEachFailover5 runs the shipped failover workload with --kill each
// on a 5-broker lab over 2 racks, short: every broker is killed once, each
// kill is restored (the broker back in every ISR, the preferred leaders
// elected) before the next and after the last, every kill has a prediction
// per partitioner, and no acknowledged record is lost. The shares
// themselves are figures for `make acceptance`, not checked here.
func TestKillEachFailover5(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Brokers: 5, Racks: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if s, err := localkafka.Load(lab.State.Dir); err == nil {
			lab.State.Nodes = s.Nodes
		}
	})
	var racks []string
	for _, n := range lab.State.Nodes {
		if n.Broker {
			racks = append(racks, n.Rack)
		}
	}
	require.Equal(t, []string{"rack-a", "rack-b", "rack-a", "rack-b", "rack-a"}, racks, "the layout's racks")

	args := []string{"chaos", "--cluster", "lab", "--lab-dir", lab.State.Dir, "--workload", "../../../chaos/failover-5.yaml",
		"--partitioner", "roundrobin", "--warmup", "1s", "--phase-duration", "2s", "--rate", "100kB/s", "-o", "json"}
	t.Logf("$ kplan %s", strings.Join(args, " "))
	ios, _, out, errOut := iostreams.Test()
	code := app.Run(ctx, &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}, args)
	require.Equal(t, 0, code, errOut.String())

	var got chaos.KillEach
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	assert.Equal(t, chaos.KillEachSchema, got.Schema)
	require.Len(t, got.Kills, 5)
	var killed []int32
	for _, k := range got.Kills {
		killed = append(killed, k.Broker)
		assert.True(t, k.Restored, "kill of broker %d restored", k.Broker)
		require.Len(t, k.Partitioners, 1)
		p := k.Partitioners[0]
		assert.Positive(t, p.Acked, "kill of broker %d", k.Broker)
		assert.Zero(t, p.Lost, "kill of broker %d: acknowledged records lost", k.Broker)
		require.NotNil(t, p.PredictedMaxOverMean, "kill of broker %d: a prediction", k.Broker)
		assert.NotContains(t, p.PredictedShare, strconv.Itoa(int(k.Broker)), "the dead broker takes nothing")
		assert.Len(t, p.PredictedShare, 4, "kill of broker %d: four survivors", k.Broker)
	}
	assert.Equal(t, []int32{1, 2, 3, 4, 5}, killed)
	assert.Regexp(t, `chaos: every broker \(\[1 2 3 4 5\]\) is back in every ISR`, errOut.String())
	// Every broker runs at the end.
	s, err := localkafka.Load(lab.State.Dir)
	require.NoError(t, err)
	var alive []int32
	for _, n := range s.Nodes {
		if n.Broker && n.Alive() {
			alive = append(alive, n.ID)
		}
	}
	slices.Sort(alive)
	assert.Equal(t, []int32{1, 2, 3, 4, 5}, alive)
}
