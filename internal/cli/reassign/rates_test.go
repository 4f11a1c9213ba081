package reassign_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/testutil/golden"
	"github.com/kplan-dev/kplan/internal/topology"
)

// hot9 is `kplan generate layout --brokers 9 --topics 12 --partitions 300
// --replication-factor 3 --skew 1 --scatter 0.3 --seed 1`: RF 3, topic-00
// the largest (94 partitions); hotRates makes it 20 times as hot as each
// other topic.
const (
	hot9     = "testdata/hot-9.json"
	hotRates = "topic-00=20,*=1"
)

func TestNewCmdReassignRates(t *testing.T) {
	for _, tc := range []struct {
		args    string
		byTopic map[string]float64
		def     float64
		bps     bool
	}{
		{"--from x.json", nil, 0, false},
		{"--from x.json --rates topic-00=20,*=1", map[string]float64{"topic-00": 20}, 1, false},
		{"--from x.json --rates a=10MB/s,b=1MB/s --balance bytes", map[string]float64{"a": 10e6, "b": 1e6}, 0, true},
	} {
		t.Run(tc.args, func(t *testing.T) {
			got := parseOptions(t, tc.args)
			if tc.byTopic == nil {
				assert.Nil(t, got.Rates)
				return
			}
			require.NotNil(t, got.Rates)
			assert.Equal(t, tc.byTopic, got.Rates.ByTopic)
			assert.Equal(t, tc.def, got.Rates.Default)
			assert.Equal(t, tc.bps, got.Rates.BytesPerSecond)
		})
	}
}

// TestRatesBadInput: every fault of --rates is one line naming the flag,
// exit 2; a topic the layout lacks names the topic (audit's defect, which
// reassign must not repeat).
func TestRatesBadInput(t *testing.T) {
	dir := t.TempDir()
	notSnap := filepath.Join(dir, "rates.txt")
	require.NoError(t, os.WriteFile(notSnap, []byte("topic-00 20\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown topic", []string{"--from", hot9, "--rates", "topic-00=20,nope=1"}, `--rates: no topic "nope" in this layout`},
		{"unknown topic, bytes plan", []string{"--from", layouts + "sized-6.json", "--balance", "bytes", "--rates", "nope=1MB/s"}, `--rates: no topic "nope" in this layout`},
		{"with balance load", []string{"--from", "testdata/observed-skew-4.json", "--balance", "load", "--rates", "t=1"}, "--rates and --balance load:"},
		{"not a rate", []string{"--from", hot9, "--rates", "topic-00=fast"}, `--rates: topic-00: "fast" is not a rate`},
		{"negative", []string{"--from", hot9, "--rates", "topic-00=-1"}, `--rates: topic-00: "-1" is not a rate`},
		{"units and weights", []string{"--from", hot9, "--rates", "topic-00=1MB/s,topic-01=2"}, "--rates: mix of rates with units and plain weights"},
		{"twice", []string{"--from", hot9, "--rates", "topic-00=1,topic-00=2"}, "--rates: topic-00: rate given twice"},
		{"no such snapshot", []string{"--from", hot9, "--rates", filepath.Join(dir, "none.json")}, "--rates: "},
		{"a file that is no snapshot", []string{"--from", hot9, "--rates", notSnap}, "not a snapshot of kplan observe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertUsage(t, tc.want, append([]string{"reassign"}, tc.args...)...)
		})
	}
}

// TestRatesGolden: the summary of a plan weighted by --rates shows the
// worst single-broker loss by the rates before and after, its busiest
// survivor and the bound, in the rates' unit.
func TestRatesGolden(t *testing.T) {
	code, out, errOut := run("reassign", "--from", hot9, "--rates", hotRates)
	require.Equal(t, 0, code, errOut)
	golden.AssertString(t, "hot-9-rates.txt", out)
	assert.Contains(t, out, "broker lost, by --rates")
	assert.Contains(t, out, "weighted by --rates (relative weights")
}

// failoverJSON is the part of `kplan reassign -o json` these tests read.
type failoverJSON struct {
	ReplicasMoved int `json:"replicas_moved"`
	After         json.RawMessage
	Failover      struct {
		Rates  string `json:"rates"`
		Broker struct {
			Before, After struct {
				Load *struct {
					Lost        []int32 `json:"lost"`
					Busiest     int32   `json:"busiest"`
					BusiestLoad float64 `json:"busiest_load"`
					Bound       float64 `json:"bound"`
					Ratio       float64 `json:"ratio"`
				} `json:"load"`
			}
		} `json:"broker"`
	} `json:"failover"`
}

// roundRobinAfter runs `kplan audit --rates --what-if` on layout and
// returns, per lost broker, audit's predicted round-robin load of the
// busiest survivor and its max/mean.
func roundRobinAfter(t *testing.T, layout, rates, what string) map[int32][2]float64 {
	t.Helper()
	code, out, errOut := run("audit", "--from", layout, "--rates", rates, "--what-if", what, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var a struct {
		After []struct {
			Lost        int32 `json:"lost"`
			Predictions []struct {
				Partitioner string  `json:"partitioner"`
				MaxOverMean float64 `json:"max_over_mean"`
				Brokers     []struct {
					Load float64 `json:"load"`
				} `json:"brokers"`
			} `json:"predictions"`
		} `json:"predicted_after_loss"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &a))
	got := map[int32][2]float64{}
	for _, l := range a.After {
		for _, p := range l.Predictions {
			if p.Partitioner != "roundrobin" {
				continue
			}
			m := 0.0
			for _, b := range p.Brokers {
				m = max(m, b.Load)
			}
			got[l.Lost] = [2]float64{m, p.MaxOverMean}
		}
	}
	require.NotEmpty(t, got)
	return got
}

// TestRatesAgreeWithAudit: the plan written with --rates, applied to its
// layout (leaders first, as the elections leave them), audited by `kplan
// audit --rates` with the same rates: audit's predicted round-robin load
// of the busiest survivor after the summary's worst loss, and its
// max/mean, are the summary's; no other loss leaves a busier survivor;
// and the same holds of the layout before the plan. The plan without
// --rates moves the same replicas, keeps the steady-state balance, and
// leaves a worst loss busier by audit's prediction.
func TestRatesAgreeWithAudit(t *testing.T) {
	dir := t.TempDir()
	var sums [2]failoverJSON
	var after [2]string
	for k, extra := range [][]string{{"--rates", hotRates}, nil} {
		plan := filepath.Join(dir, "plan-"+strconv.Itoa(k)+".json")
		code, out, errOut := run(append([]string{"reassign", "--from", hot9, "--out", plan, "-o", "json"}, extra...)...)
		require.Equal(t, 0, code, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &sums[k]))
		c := load(t, hot9)
		for _, np := range load(t, plan).Partitions {
			c.Partitions[c.Find(np.Key())].Replicas = np.Replicas
		}
		for i := range c.Partitions {
			c.Partitions[i].Leader = c.Partitions[i].Replicas[0]
		}
		var b bytes.Buffer
		require.NoError(t, topology.WriteSnapshot(&b, c))
		after[k] = filepath.Join(dir, "after-"+strconv.Itoa(k)+".json")
		require.NoError(t, os.WriteFile(after[k], b.Bytes(), 0o644))
	}
	s := sums[0]
	require.Equal(t, "given", s.Failover.Rates)
	for _, tc := range []struct {
		name   string
		layout string
		fig    func() (lost []int32, load, ratio float64)
	}{
		{"after", after[0], func() ([]int32, float64, float64) {
			l := s.Failover.Broker.After.Load
			return l.Lost, l.BusiestLoad, l.Ratio
		}},
		{"before", hot9, func() ([]int32, float64, float64) {
			l := s.Failover.Broker.Before.Load
			return l.Lost, l.BusiestLoad, l.Ratio
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost, load, ratio := tc.fig()
			require.Len(t, lost, 1)
			all := roundRobinAfter(t, tc.layout, hotRates, "all")
			got := all[lost[0]]
			assert.InDelta(t, load, got[0], 1e-3, "the busiest survivor after losing broker %d", lost[0])
			assert.InDelta(t, ratio, got[1], 1e-9, "max/mean after losing broker %d", lost[0])
			for id, v := range all {
				assert.LessOrEqual(t, v[0], load+1e-3, "losing broker %d leaves a busier survivor than the summary's worst", id)
			}
		})
	}
	// Against the plan without --rates, by audit's prediction.
	worst := func(layout string) float64 {
		m := 0.0
		for _, v := range roundRobinAfter(t, layout, hotRates, "all") {
			m = max(m, v[0])
		}
		return m
	}
	rated, counted := worst(after[0]), worst(after[1])
	t.Logf("worst loss's busiest survivor by audit's round robin at %s: %.4f with --rates, %.4f without", hotRates, rated, counted)
	assert.Less(t, rated, counted)
	assert.Equal(t, sums[1].ReplicasMoved, s.ReplicasMoved, "moves")
	assert.JSONEq(t, string(sums[1].After), string(s.After), "steady-state balance")
	assert.Nil(t, sums[1].Failover.Broker.After.Load, "a figure by rates without --rates")
}
