//go:build integration

package chaos_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSoakLab is the soak at a reduced size: three kill and restart cycles
// of the busiest broker on the shared lab, producing with acks=all and
// idempotence, with short phases. Each cycle prints its line with nothing
// lost and nothing duplicated, and at the end every broker is back in every
// ISR. `make soak` runs the full 20 cycles.
func TestSoakLab(t *testing.T) {
	lab := labForRemote(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const cycles = 3
	code, out, errOut := runKplan(ctx, "chaos", "--cluster", "lab", "--lab-dir", lab.State.Dir,
		"--topic", "soaktest", "--kill", "busiest", "--restore", "--repeat", strconv.Itoa(cycles),
		"--warmup", "1s", "--phase-duration", "1s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.True(t, allAlive(t, lab), "every broker runs after the soak")

	line := regexp.MustCompile(`chaos: cycle (\d+)/3: killed broker (\d+), failover (\d+) ms, records sent (\d+), acked (\d+), lost (\d+), duplicates (\d+), never acked (\d+)`)
	ms := line.FindAllStringSubmatch(errOut, -1)
	require.Len(t, ms, cycles, errOut)
	for i, m := range ms {
		assert.Equal(t, strconv.Itoa(i+1), m[1], "cycle number")
		sent, _ := strconv.Atoi(m[4])
		acked, _ := strconv.Atoi(m[5])
		assert.Positive(t, acked, "cycle %d acked records", i+1)
		assert.LessOrEqual(t, acked, sent, "cycle %d", i+1)
		assert.Equal(t, "0", m[6], "cycle %d: acknowledged records lost", i+1)
		assert.Equal(t, "0", m[7], "cycle %d: duplicates with idempotence", i+1)
	}
	assert.Regexp(t, `chaos: every broker \(\[1 2 3\]\) is back in every ISR \(\d+ partitions\)`, errOut)

	var sum struct {
		Runs []json.RawMessage `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	assert.Len(t, sum.Runs, cycles, "the summary covers every cycle")
}
