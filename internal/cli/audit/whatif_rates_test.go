package audit_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

type lossJSON struct {
	Rates              string `json:"rates"`
	Keys               string `json:"keys"`
	SQFSharedRegime    string `json:"sqf_shared_regime"`
	PredictedAfterLoss []struct {
		Lost        int32   `json:"lost"`
		SkewBrokers []int32 `json:"skew_brokers"`
		Predictions []struct {
			Partitioner string `json:"partitioner"`
			Brokers     []struct {
				Broker int32   `json:"broker"`
				Load   float64 `json:"load"`
				Share  float64 `json:"share"`
			} `json:"brokers"`
			MaxOverMean float64 `json:"max_over_mean"`
			Basis       string  `json:"basis"`
		} `json:"predictions"`
	} `json:"predicted_after_loss"`
}

// TestWhatIfWithRates: §6.4 with a follower per partition at A=2, B=1,
// losing broker 2 (A-1 elects 3, A-2 and B-0 elect 1). Partition-balancing
// partitioners: broker 1 2·2/3 + 1/2 = 11/6, broker 3 2/3 + 1/2 = 7/6,
// max/mean 11/9 over brokers 1 and 3; broker-balancing ones 3/2 each.
func TestWhatIfWithRates(t *testing.T) {
	args := []string{"audit", "--from", layouts + "thesis-6-4.json", "--rates", "A=2,B=1", "--what-if", "broker-2"}
	code, out, errOut := run("", append(args, "-o", "json")...)
	require.Equal(t, 0, code, errOut)
	var r lossJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.PredictedAfterLoss, 1)
	l := r.PredictedAfterLoss[0]
	assert.Equal(t, int32(2), l.Lost)
	assert.Equal(t, []int32{1, 3}, l.SkewBrokers)
	var names []string
	for _, p := range l.Predictions {
		names = append(names, p.Partitioner)
		assert.NotEmpty(t, p.Basis)
		want := []float64{11.0 / 6, 0, 7.0 / 6}
		mm := 11.0 / 9
		if p.Partitioner == audit.Node || p.Partitioner == audit.SQF || p.Partitioner == audit.SQFShared {
			want, mm = []float64{1.5, 0, 1.5}, 1
		}
		require.Len(t, p.Brokers, 3)
		for i, b := range p.Brokers {
			assert.InDelta(t, want[i], b.Load, 1e-5, p.Partitioner)
			assert.InDelta(t, want[i]/3, b.Share, 1e-5, p.Partitioner)
		}
		assert.InDelta(t, mm, p.MaxOverMean, 1e-3, p.Partitioner)
	}
	assert.Equal(t, []string{"roundrobin", "node", "sqf", "sqf-shared", "default", "random", "hash", "leastbackup", "kip794"}, names)
	golden.AssertString(t, "thesis-6-4-whatif-rates.json", out)
	for _, f := range []string{"table", "markdown"} {
		code, out, errOut = run("", append(args, "-o", f)...)
		require.Equal(t, 0, code, errOut)
		golden.AssertString(t, "thesis-6-4-whatif-rates."+map[string]string{"table": "txt", "markdown": "md"}[f], out)
	}
}

// TestWhatIfSkewOverLiveLeaders is the mismatch: on §6.4 without
// followers at A=2, B=1, losing broker 2 leaves A on broker 1 (2) and B
// on broker 3 (1): max/mean 2/1.5 over the live leaders, as chaos
// measures, not 2/1 over all three brokers.
func TestWhatIfSkewOverLiveLeaders(t *testing.T) {
	code, out, errOut := run("", "audit", "--from", layouts+"thesis-6.4.json", "--rates", "A=2,B=1", "--what-if", "broker-2", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r lossJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.PredictedAfterLoss, 1)
	assert.Equal(t, []int32{1, 3}, r.PredictedAfterLoss[0].SkewBrokers)
	require.Len(t, r.PredictedAfterLoss[0].Predictions, 9)
	for _, p := range r.PredictedAfterLoss[0].Predictions {
		assert.InDelta(t, 1.333, p.MaxOverMean, 1e-9, p.Partitioner)
	}
}

// TestWhatIfWithoutRates: a what-if alone predicts no loads (the audit
// without rates stays as it was).
func TestWhatIfWithoutRates(t *testing.T) {
	code, out, errOut := run("", "audit", "--from", layouts+"thesis-6-4.json", "--what-if", "broker-2", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r lossJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Empty(t, r.PredictedAfterLoss)
}

// TestKeysAndSaturated: with keys every partitioner gets its own column and
// basis, and saturated sqf-shared balances A=2, B=1 on §6.4 to 1, 1, 1.
func TestKeysAndSaturated(t *testing.T) {
	args := []string{"audit", "--from", layouts + "thesis-6-4.json", "--rates", "A=2,B=1", "--keys", "A=zipf:1.2:1000,B=uniform:100", "--saturated"}
	code, out, errOut := run("", append(args, "-o", "json")...)
	require.Equal(t, 0, code, errOut)
	var r struct {
		Keys            string `json:"keys"`
		SQFSharedRegime string `json:"sqf_shared_regime"`
		Predicted       []struct {
			Partitioner string `json:"partitioner"`
			Brokers     []struct {
				Load float64 `json:"load"`
			} `json:"brokers"`
			Basis string `json:"basis"`
		} `json:"predicted_load"`
		Equivalents []any `json:"predicted_equivalents"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, "A=zipf:1.2:1000,B=uniform:100", r.Keys)
	assert.Equal(t, "saturated", r.SQFSharedRegime)
	assert.Empty(t, r.Equivalents, "no partitioner is said to equal another when each is predicted")
	require.Len(t, r.Predicted, len(audit.SharePartitioners))
	for i, p := range r.Predicted {
		assert.Equal(t, audit.SharePartitioners[i], p.Partitioner)
		assert.NotEmpty(t, p.Basis)
		if p.Partitioner == audit.SQFShared {
			for _, b := range p.Brokers {
				assert.InDelta(t, 1, b.Load, 1e-5)
			}
		}
	}
	code, out, errOut = run("", append(args, "--what-if", "broker-2")...)
	require.Equal(t, 0, code, errOut)
	golden.AssertString(t, "thesis-6-4-keys-saturated.txt", out)
}

func TestKeysFlagBadInput(t *testing.T) {
	tests := []struct {
		keys string
		want string
	}{
		{"zipf", "--keys: keys \"zipf\""},
		{"uniform:0", "--keys: keys \"uniform:0\""},
		{"A=hot:3", "--keys: A: keys \"hot:3\""},
		{"A=uniform:3,A=none", "--keys: keys for A given twice"},
		{"A", "--keys: keys \"A\": unknown distribution"},
		{"A=uniform:2,B", "--keys: keys \"B\": want TOPIC=SPEC"},
		{"", "--keys: keys \"\""},
		{"C=uniform:3", "--keys: no topic \"C\" in this layout"},
	}
	for _, tt := range tests {
		code, out, errOut := run("", "audit", "--from", layouts+"thesis-6-4.json", "--rates", "A=1", "--keys", tt.keys)
		assert.Equal(t, cmdutil.ExitUsage, code, tt.keys)
		assert.Empty(t, out, tt.keys)
		assert.Contains(t, errOut, tt.want, tt.keys)
	}
	// A bad --keys writes no snapshot.
	snap := t.TempDir() + "/snap.json"
	code, _, errOut := run("", "audit", "--from", layouts+"thesis-6-4.json", "--keys", "Z=uniform:3", "--save-snapshot", snap)
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "--keys: no topic \"Z\"")
	assert.NoFileExists(t, snap)
	code, _, errOut = run("", "audit", "--from", layouts+"thesis-6-4.json", "--rates", "A=1", "--what-if", "broker-7")
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Equal(t, "kplan: --what-if: no broker-7 in this layout\n", errOut)
}
