package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

const layouts = "../../../testdata/layouts/"

func run(stdin string, args ...string) (int, string, string) {
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	return app.Run(context.Background(), f, args), out.String(), errOut.String()
}

type auditJSON struct {
	MaxGroups []struct {
		ID      int      `json:"id"`
		Brokers []int32  `json:"brokers"`
		Topics  []string `json:"topics"`
	} `json:"max_groups"`
	Overlaps []struct {
		Groups        [2]int  `json:"groups"`
		SharedBrokers []int32 `json:"shared_brokers"`
	} `json:"overlaps"`
	LeaderSkew  struct{ Min, Max int } `json:"leader_skew"`
	ReplicaSkew struct{ Min, Max int } `json:"replica_skew"`
	Findings    []struct{ Rule, Severity, Subject, Message string }
}

func TestFig33(t *testing.T) {
	code, out, errOut := run("", "audit", "--from", layouts+"thesis-fig3.3.json", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r auditJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.MaxGroups, 3)
	assert.Equal(t, []string{"B", "C"}, r.MaxGroups[1].Topics)
	require.Len(t, r.Overlaps, 2)
	assert.Equal(t, []int32{2, 3}, r.Overlaps[0].SharedBrokers)
	assert.Equal(t, []int32{1}, r.Overlaps[1].SharedBrokers)
	golden.AssertString(t, "fig3.3.json", out)
	code, out, _ = run("", "audit", "--from", layouts+"thesis-fig3.3.json")
	require.Equal(t, 0, code)
	golden.AssertString(t, "fig3.3.txt", out)
}

func TestKafkaKitMapSkew(t *testing.T) {
	code, out, errOut := run("", "audit", "--from", layouts+"kafkakit-optimize-input.json", "-o", "json", "--fail-on", "warning")
	assert.Equal(t, cmdutil.ExitFindings, code, errOut)
	var r auditJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, 2, r.LeaderSkew.Min)
	assert.Equal(t, 26, r.LeaderSkew.Max)
	assert.Equal(t, 6, r.ReplicaSkew.Min)
	assert.Equal(t, 45, r.ReplicaSkew.Max)
	code, _, _ = run("", "audit", "--from", layouts+"kafkakit-optimize-input.json", "--fail-on", "error")
	assert.Equal(t, 0, code, "skew is a warning, not an error")
}

func TestStdinDescribeAndTopicFilter(t *testing.T) {
	describe := "Topic: a\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\nTopic: b\tPartition: 0\tLeader: 2\tReplicas: 2,1\tIsr: 2\n"
	code, out, errOut := run(describe, "audit", "--from", "-", "--topics", "^b$", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r auditJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.MaxGroups, 1)
	assert.Equal(t, []string{"b"}, r.MaxGroups[0].Topics)
	var rules []string
	for _, f := range r.Findings {
		rules = append(rules, f.Rule)
	}
	assert.Contains(t, rules, "under-replicated", "describe output is live state: ISR 2 of 2,1")
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	ratesFile := filepath.Join(dir, "rates.txt")
	require.NoError(t, os.WriteFile(ratesFile, []byte("A=1\nZ=2\n"), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte("{\"partitions\":[\n {\"topic\":\"a\",\"partition\":0,\"replicas\":[1,1]}]}"), 0o644))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"audit"}, "no layout"},
		{[]string{"audit", "--from", bad, "--bootstrap-server", "x:1"}, "give one source"},
		{[]string{"audit", "--from", bad}, bad + ":2:2: replicas: a-0 names broker 1 twice"},
		{[]string{"audit", "--from", filepath.Join(dir, "none")}, "--from: open"},
		{[]string{"audit", "--from", bad, "--topics", "("}, "--topics: "},
		{[]string{"audit", "--from", bad, "--by", "racks"}, "--by: "},
		{[]string{"audit", "--from", bad, "--fail-on", "fatal"}, "--fail-on: "},
		{[]string{"audit", "--from", bad, "--max-overlaps", "-1"}, "--max-overlaps: want 0 (all) or more, got -1"},
		{[]string{"audit", "--from", bad, "--failover-threshold", "-1"}, "--failover-threshold: want 0 or more leaders, got -1"},
		{[]string{"audit", "--from", bad, "--min-insync", "0"}, "--min-insync: want 1 or more, got 0"},
		// Rates for a topic the layout lacks: refused, as kplan chaos does.
		{[]string{"audit", "--from", layouts + "thesis-6.4.json", "--rates", "A=1,Z=2"}, `--rates: no topic "Z" in this layout`},
		{[]string{"audit", "--from", layouts + "thesis-6.4.json", "--rates-file", ratesFile}, `--rates-file: no topic "Z" in this layout`},
	}
	for _, tt := range tests {
		code, out, errOut := run("", tt.args...)
		assert.Equal(t, cmdutil.ExitUsage, code, tt.args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, tt.want)
		assert.Equal(t, 1, strings.Count(errOut, "\n"))
	}
}

func TestUnreachableClusterExits1(t *testing.T) {
	code, out, errOut := run("", "audit", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2s")
	assert.Equal(t, cmdutil.ExitRuntime, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "cluster unreachable: no broker at 127.0.0.1:1 answered")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line")
}

func TestWhatIf(t *testing.T) {
	code, out, errOut := run("", "audit", "--from", layouts+"kafkakit-optimize-input.json", "--what-if", "broker-1760", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r struct {
		WhatIf []struct {
			Broker             int32    `json:"broker"`
			LeadersMoved       int      `json:"leaders_moved"`
			OfflinePartitions  []string `json:"offline_partitions"`
			SingleISR          []string `json:"single_isr_partitions"`
			LeadersMaxOverMean float64  `json:"leaders_max_over_mean"`
			Elections          []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				NewLeader *int32 `json:"new_leader"`
			} `json:"elections"`
		} `json:"what_if"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.WhatIf, 1)
	w := r.WhatIf[0]
	assert.Equal(t, int32(1760), w.Broker)
	assert.Equal(t, 26, w.LeadersMoved, "broker 1760 leads 26 partitions in this map")
	assert.Len(t, w.Elections, 26, "one election per partition it led")
	for _, e := range w.Elections {
		require.NotNil(t, e.NewLeader, "%s-%d", e.Topic, e.Partition)
		assert.NotEqual(t, int32(1760), *e.NewLeader)
		assert.GreaterOrEqual(t, *e.NewLeader, int32(0), "RF 2: every partition elects its follower")
	}
	assert.Empty(t, w.OfflinePartitions, "RF 2: every partition has another replica")
	assert.Len(t, w.SingleISR, 45, "and all 45 of its replicas' partitions are left with one")
	assert.Greater(t, w.LeadersMaxOverMean, 1.0)

	// RF 1 everywhere: losing any broker takes partitions offline, an
	// error, and none of them counts as a leader moved.
	code, out, _ = run("", "audit", "--from", layouts+"thesis-fig3.3.json", "--what-if", "all", "--fail-on", "error", "-o", "json")
	assert.Equal(t, cmdutil.ExitFindings, code)
	r.WhatIf = nil
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.NotEmpty(t, r.WhatIf)
	for _, w := range r.WhatIf {
		assert.Zero(t, w.LeadersMoved, "broker-%d", w.Broker)
		require.Len(t, w.Elections, len(w.OfflinePartitions), "broker-%d", w.Broker)
		for _, e := range w.Elections {
			assert.Equal(t, int32(-1), *e.NewLeader, "offline: no leader")
		}
	}

	code, out, errOut = run("", "audit", "--from", layouts+"thesis-fig3.3.json", "--what-if", "broker-9")
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Empty(t, out)
	assert.Equal(t, "kplan: --what-if: no broker-9 in this layout\n", errOut)
	code, _, errOut = run("", "audit", "--from", layouts+"thesis-fig3.3.json", "--what-if", "brokr-1")
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "--what-if: ")
}

func TestSaveSnapshotRoundTrips(t *testing.T) {
	describe := "Topic: a\tPartition: 0\tLeader: 2\tReplicas: 1,2\tIsr: 2\n"
	snap := filepath.Join(t.TempDir(), "snap.json")
	code, first, errOut := run(describe, "audit", "--from", "-", "--save-snapshot", snap, "-o", "json")
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(snap)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"leader":2,"isr":[2]`)
	code, second, errOut := run("", "audit", "--from", snap, "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, first, second, "the snapshot audits the same")

	code, _, errOut = run(describe, "audit", "--from", "-", "--save-snapshot", filepath.Join(t.TempDir(), "no", "dir.json"))
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "--save-snapshot: ")
}

// TestOverlapCountIsExact generates a scattered layout whose max groups
// overlap in more pairs than the list holds and checks overlap_count
// against every pair of the reported groups compared by brute force.
func TestOverlapCountIsExact(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scattered.json")
	code, _, errOut := run("", "generate", "layout", "--brokers", "150", "--topics", "400", "--partitions", "4000",
		"--replication-factor", "3", "--scatter", "1", "--seed", "3", "--out", file)
	require.Equal(t, 0, code, errOut)
	var r struct {
		MaxGroups []struct {
			Brokers []int32 `json:"brokers"`
		} `json:"max_groups"`
		OverlapCount      int               `json:"overlap_count"`
		Overlaps          []json.RawMessage `json:"overlaps"`
		OverlapsTruncated bool              `json:"overlaps_truncated"`
	}
	code, out, errOut := run("", "audit", "--from", file, "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	brute := 0
	for i := range r.MaxGroups {
		for j := i + 1; j < len(r.MaxGroups); j++ {
			if slices.ContainsFunc(r.MaxGroups[i].Brokers, func(b int32) bool { return slices.Contains(r.MaxGroups[j].Brokers, b) }) {
				brute++
			}
		}
	}
	require.Greater(t, brute, 10_000)
	assert.Equal(t, brute, r.OverlapCount)
	assert.Len(t, r.Overlaps, 10_000, "the default list")
	assert.True(t, r.OverlapsTruncated)

	for _, tt := range []struct {
		max  string
		want int
	}{{"0", brute}, {"7", 7}} {
		code, out, errOut = run("", "audit", "--from", file, "-o", "json", "--max-overlaps", tt.max)
		require.Equal(t, 0, code, errOut)
		r.Overlaps = nil
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		assert.Equal(t, brute, r.OverlapCount, "--max-overlaps %s", tt.max)
		assert.Len(t, r.Overlaps, tt.want, "--max-overlaps %s", tt.max)
	}
	code, out, errOut = run("", "audit", "--from", file, "--max-overlaps", "3")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, fmt.Sprintf("Partial overlaps (%d, the first 3 listed; --max-overlaps 0 lists all)", brute))
}

// TestFailoverSection: the section is in every audit, text and JSON; its
// worst loss is the kafka-kit map's (broker 1770 hands its leaders to
// 1760), the threshold decides the warning, --rates weigh its prediction.
func TestFailoverSection(t *testing.T) {
	type failoverJSON struct {
		Failover struct {
			Threshold int    `json:"threshold"`
			Rates     string `json:"rates"`
			Broker    *struct {
				Worst struct {
					Lost           []int32 `json:"lost"`
					Busiest        int32   `json:"busiest"`
					BusiestLeaders int     `json:"busiest_leaders"`
					Optimum        int     `json:"optimum"`
					Excess         int     `json:"excess"`
				} `json:"worst"`
				Topics     []struct{ Topic string } `json:"topics"`
				RoundRobin struct {
					MaxOverMean float64 `json:"max_over_mean"`
				} `json:"predicted_roundrobin"`
			} `json:"broker"`
			Rack *struct{} `json:"rack"`
		} `json:"failover"`
		Findings []struct{ Rule, Severity, Subject string }
	}
	code, out, errOut := run("", "audit", "--from", layouts+"kafkakit-optimize-input.json", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r failoverJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	f := r.Failover
	require.NotNil(t, f.Broker)
	assert.Nil(t, f.Rack, "no racks, no rack loss")
	assert.Equal(t, "equal", f.Rates)
	assert.Equal(t, 1, f.Threshold)
	w := f.Broker.Worst
	assert.Equal(t, w.BusiestLeaders-w.Optimum, w.Excess)
	assert.Greater(t, w.Excess, 1)
	assert.Len(t, f.Broker.Topics, 1)
	assert.Greater(t, f.Broker.RoundRobin.MaxOverMean, 1.0)
	assert.True(t, slices.ContainsFunc(r.Findings, func(x struct{ Rule, Severity, Subject string }) bool {
		return x.Rule == "failover-excess" && x.Severity == "warning" && x.Subject == fmt.Sprintf("broker-%d", w.Lost[0])
	}), "the worst loss is a warning")
	// A threshold at the excess: no warning.
	code, out, errOut = run("", "audit", "--from", layouts+"kafkakit-optimize-input.json", "-o", "json", "--failover-threshold", fmt.Sprint(w.Excess))
	require.Equal(t, 0, code, errOut)
	r = failoverJSON{}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.False(t, slices.ContainsFunc(r.Findings, func(x struct{ Rule, Severity, Subject string }) bool { return x.Rule == "failover-excess" }))
	// Racks: a rack row; text names the rates assumed.
	code, out, errOut = run("", "audit", "--from", layouts+"demo-cells.json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Failover: the worst loss")
	assert.Contains(t, out, "\nrack    rack-")
	assert.Contains(t, out, "every topic weighs 1 (no --rates given)")
}

// TestHugePartitionNumber: one valid partition numbered 2147483647 is
// audited in bounded memory (it used to allocate until the kernel killed
// kplan), with every section that predicts or simulates.
func TestHugePartitionNumber(t *testing.T) {
	file := filepath.Join(t.TempDir(), "huge.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"version":1,"partitions":[{"topic":"t","partition":2147483647,"replicas":[1,2]},{"topic":"t","partition":0,"replicas":[2,1]}]}`), 0o644))
	code, out, errOut := run("", "audit", "--from", file, "--what-if", "all", "--rates", "t=1", "--keys", "uniform:10", "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"failover"`)
}

// TestPairLossMinInsync: with RF 3, the pair section judges against
// --min-insync (Kafka's default 1 without it: two losses leave one replica).
func TestPairLossMinInsync(t *testing.T) {
	type pairJSON struct {
		Failover struct {
			Pair *struct {
				MinInsync   int `json:"min_insync"`
				UnderMinISR int `json:"under_min_isr"`
				Unavoidable []struct {
					RF         int `json:"rf"`
					Partitions int `json:"partitions"`
				} `json:"unavoidable"`
			} `json:"pair"`
		} `json:"failover"`
	}
	for _, tt := range []struct {
		args  []string
		m     int
		under bool
	}{{nil, 1, false}, {[]string{"--min-insync", "2"}, 2, true}} {
		code, out, errOut := run("", append([]string{"audit", "--from", layouts + "demo-cells.json", "-o", "json"}, tt.args...)...)
		require.Equal(t, 0, code, errOut)
		var r pairJSON
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.NotNil(t, r.Failover.Pair, "demo-cells has RF 3")
		assert.Equal(t, tt.m, r.Failover.Pair.MinInsync)
		assert.Equal(t, tt.under, r.Failover.Pair.UnderMinISR > 0)
		if tt.under {
			require.Len(t, r.Failover.Pair.Unavoidable, 1)
			assert.Equal(t, 3, r.Failover.Pair.Unavoidable[0].RF)
		}
	}
}
