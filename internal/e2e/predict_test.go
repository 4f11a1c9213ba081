package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
)

// TestAuditPredictsChaosAfterPhase: `kplan audit --what-if broker-2 --rates`
// prints, per partitioner, the shares `kplan chaos` prints as predicted for
// the after phase of the same layout and rates with broker 2 killed (the
// shipped §6.4 workload on the embedded cluster), over the same brokers and
// with the same max/mean.
func TestAuditPredictsChaosAfterPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an in-process cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, out, errOut := kplan(ctx, "audit", "--from", repo("testdata/layouts/thesis-6-4.json"), "--rates", "A=2,B=1", "--what-if", "broker-2", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var audit struct {
		After []struct {
			Lost        int32   `json:"lost"`
			SkewBrokers []int32 `json:"skew_brokers"`
			Predictions []struct {
				Partitioner string `json:"partitioner"`
				Brokers     []struct {
					Broker int32   `json:"broker"`
					Share  float64 `json:"share"`
				} `json:"brokers"`
				MaxOverMean float64 `json:"max_over_mean"`
			} `json:"predictions"`
		} `json:"predicted_after_loss"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &audit))
	require.Len(t, audit.After, 1)
	assert.Equal(t, int32(2), audit.After[0].Lost)

	code, out, errOut = kplan(ctx, "chaos", "--workload", repo("chaos/thesis-6-4.yaml"), "--kill", "broker-2",
		"--partitioner", "roundrobin,node,sqf,sqf-shared,default,random,hash,leastbackup",
		"--warmup", "200ms", "--phase-duration", "500ms", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var res chaos.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Partitioners, 8)
	compared := 0
	for _, p := range res.Partitioners {
		after := p.Phases["after"]
		require.NotNil(t, after, p.Name)
		require.NotEmpty(t, after.PredictedShare, "%s: %s", p.Name, p.Prediction)
		for _, a := range audit.After[0].Predictions {
			if a.Partitioner != p.Name {
				continue
			}
			compared++
			var ids []string
			for _, b := range a.Brokers {
				if b.Broker == audit.After[0].Lost {
					continue
				}
				ids = append(ids, strconv.Itoa(int(b.Broker)))
				assert.InDelta(t, b.Share, after.PredictedShare[strconv.Itoa(int(b.Broker))], 1e-4, "%s broker %d", p.Name, b.Broker)
			}
			var keys []string
			for k := range after.PredictedShare {
				keys = append(keys, k)
			}
			assert.ElementsMatch(t, ids, keys, "%s: the same brokers", p.Name)
			require.NotNil(t, after.PredictedMaxOverMean, p.Name)
			assert.InDelta(t, a.MaxOverMean, *after.PredictedMaxOverMean, 1e-3, p.Name)
		}
	}
	assert.Equal(t, 8, compared, "every partitioner in both")
}
