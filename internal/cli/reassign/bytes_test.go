package reassign_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cli/reassign"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
	"github.com/kplan-dev/kplan/internal/topology"
)

const (
	sized  = layouts + "sized-6.json"
	tiered = layouts + "tiered-4.json"
)

func TestNewCmdReassignBalance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  string
		check func(*testing.T, *reassign.Options)
	}{
		{"default replicas", "--from x.json", func(t *testing.T, o *reassign.Options) {
			assert.Equal(t, "replicas", o.Balance)
			assert.Nil(t, o.Cordon)
			assert.Zero(t, o.MaxMoveBytes)
		}},
		{"bytes", "--from x.json --balance bytes --cordon 3,5-6 --max-move-bytes 1.5GiB --tolerance 0.1", func(t *testing.T, o *reassign.Options) {
			assert.Equal(t, "bytes", o.Balance)
			assert.Equal(t, []int32{3, 5, 6}, o.Cordon)
			assert.Equal(t, int64(3<<29), o.MaxMoveBytes)
			assert.Equal(t, 0.1, o.Tolerance)
		}},
		{"budget in decimal units", "--from x.json --balance bytes --max-move-bytes 500GB", func(t *testing.T, o *reassign.Options) {
			assert.Equal(t, int64(500e9), o.MaxMoveBytes)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseOptions(t, tc.args)
			tc.check(t, got)
		})
	}
}

func TestBadBalanceInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"objective", []string{"--from", sized, "--balance", "cpu"}, `--balance: want replicas, bytes or load, got "cpu"`},
		{"cordon syntax", []string{"--from", sized, "--balance", "bytes", "--cordon", "3,x"}, `--cordon: "x" is not a broker id`},
		{"cordon rack", []string{"--from", sized, "--balance", "bytes", "--cordon", "3:r1"}, "--cordon: want broker ids, no racks"},
		{"cordon with failover moves", []string{"--from", sized, "--cordon", "3", "--failover-moves", "auto"}, "--failover-moves: moves followers without regard to cordons"},
		{"cordon unknown broker, count plan", []string{"--from", sized, "--cordon", "9"}, "--cordon: broker 9 is not a target broker"},
		{"cordon unknown broker", []string{"--from", sized, "--balance", "bytes", "--cordon", "9"}, "--cordon: broker 9 is not a target broker"},
		{"budget syntax", []string{"--from", sized, "--balance", "bytes", "--max-move-bytes", "lots"}, `--max-move-bytes: "lots" is not a size`},
		{"budget without bytes", []string{"--from", sized, "--max-move-bytes", "1GiB"}, "--max-move-bytes: applies with --balance bytes or load only"},
		{"no band", []string{"--from", sized, "--balance", "bytes", "--tolerance", "0"}, "--tolerance: --balance bytes needs a band above 0"},
		{"fix overlaps", []string{"--from", sized, "--balance", "bytes", "--fix-overlaps"}, "--fix-overlaps: applies with --balance replicas only"},
		{"sizes unknown", []string{"--from", kafkakit, "--balance", "bytes"}, "--balance: bytes needs every partition's size: 256 of 256 partitions have none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertUsage(t, tc.want, append([]string{"reassign"}, tc.args...)...)
		})
	}
}

// The summary of a bytes plan: disk per broker before and after, the
// bytes copied beside the count plan's, the trade-off, the cordon named.
func TestBytesGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"sized-6-bytes-cordon-5.txt", []string{"--from", sized, "--balance", "bytes", "--cordon", "5"}},
		{"sized-6-bytes-budget-20GiB.txt", []string{"--from", sized, "--balance", "bytes", "--max-move-bytes", "20GiB"}},
		{"tiered-4-bytes.txt", []string{"--from", tiered, "--balance", "bytes"}},
		{"tiered-4-bytes.json", []string{"--from", tiered, "--balance", "bytes", "-o", "json"}},
		// JBOD: each broker's dirs before and after, the intra-broker moves.
		{"jbod-3-bytes.txt", []string{"--from", layouts + "jbod-3.json", "--balance", "bytes", "--tolerance", "0.1"}},
		{"jbod-3-bytes.json", []string{"--from", layouts + "jbod-3.json", "--balance", "bytes", "--tolerance", "0.1", "-o", "json"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := run(append([]string{"reassign"}, tc.args...)...)
			require.Equal(t, 0, code, errOut)
			golden.AssertString(t, tc.golden, out)
		})
	}
}

// The JSON carries the same figures, and the plan file moves exactly the
// replicas the summary counts, never onto the cordoned broker.
func TestBytesJSONAndPlan(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "plan.json")
	code, stdout, errOut := run("reassign", "--from", sized, "--balance", "bytes", "--cordon", "5", "--out", out, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var sum struct {
		ReplicasMoved int   `json:"replicas_moved"`
		BytesMoved    int64 `json:"bytes_moved"`
		Bytes         struct {
			BytesMoved int64   `json:"bytes_moved"`
			Cordoned   []int32 `json:"cordoned"`
			Within     bool    `json:"within"`
			PerBroker  []struct {
				Broker        int32 `json:"broker"`
				Before, After int64
			} `json:"per_broker"`
			TradeOff     []json.RawMessage `json:"trade_off"`
			ReplicasPlan *struct {
				BytesMoved int64 `json:"bytes_moved"`
			} `json:"replicas_plan"`
		} `json:"bytes"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.Equal(t, []int32{5}, sum.Bytes.Cordoned)
	assert.True(t, sum.Bytes.Within)
	assert.Equal(t, sum.BytesMoved, sum.Bytes.BytesMoved)
	assert.NotEmpty(t, sum.Bytes.TradeOff)
	require.NotNil(t, sum.Bytes.ReplicasPlan)
	assert.Len(t, sum.Bytes.PerBroker, 6)

	f, err := os.Open(sized)
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // read-only
	c, err := topology.Load(f, sized)
	require.NoError(t, err)
	pf, err := os.Open(out)
	require.NoError(t, err)
	defer pf.Close() //nolint:errcheck // read-only
	plan, err := topology.Load(pf, out)
	require.NoError(t, err)
	moved, copied := 0, int64(0)
	for _, p := range plan.Partitions {
		old := c.Partitions[c.Find(p.Key())]
		for _, r := range p.Replicas {
			if !containsID(old.Replicas, r) {
				moved++
				copied += old.SizeBytes
				assert.NotEqual(t, int32(5), r, "%s: the cordoned broker receives a replica", p.Key())
			}
		}
	}
	assert.Equal(t, sum.ReplicasMoved, moved)
	assert.Equal(t, sum.BytesMoved, copied)
}

func containsID(v []int32, id int32) bool {
	for _, x := range v {
		if x == id {
			return true
		}
	}
	return false
}
