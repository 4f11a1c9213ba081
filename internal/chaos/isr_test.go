package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestISRReport(t *testing.T) {
	tests := []struct {
		name  string
		live  []int32
		parts []partMeta
		whole bool
		say   string
	}{
		{"whole", []int32{1, 2, 3}, []partMeta{{leader: 1, replicas: []int32{1, 2}, isr: []int32{2, 1}}}, true,
			"every broker ([1 2 3]) is back in every ISR (1 partitions)"},
		{"out of an isr", []int32{1, 2, 3}, []partMeta{{leader: 1, replicas: []int32{1, 2}, isr: []int32{1}}, {leader: 2, replicas: []int32{2, 3}, isr: []int32{2, 3}}}, false,
			"1 of 2 partitions are under-replicated (t/0)"},
		{"broker down", []int32{1, 2}, []partMeta{{leader: 1, replicas: []int32{1, 3}, isr: []int32{1}}}, false,
			"brokers [3] are not in the metadata; 1 of 1 partitions are under-replicated (t/0)"},
		{"down, no partition of its own", []int32{1, 2}, []partMeta{{leader: 1, replicas: []int32{1, 2}, isr: []int32{1, 2}}}, false,
			"brokers [3] are not in the metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := isrReport([]int32{1, 2, 3}, &clusterMeta{brokers: tt.live, topics: map[string][]partMeta{"t": tt.parts}})
			assert.Equal(t, tt.whole, rep.Whole())
			assert.Equal(t, tt.say, rep.String())
		})
	}
}

// TestWaitInSync: Run's wait for the topics it created reads the ISRs until
// every replica of every partition of those topics is in sync (a follower
// joining late, a topic the answer does not show yet), gives up after the
// wait with what is still short, and retries failed reads.
func TestWaitInSync(t *testing.T) {
	full := partMeta{leader: 1, replicas: []int32{1, 2}, isr: []int32{2, 1}}
	late := partMeta{leader: 1, replicas: []int32{1, 2}, isr: []int32{1}}
	meta := func(parts ...partMeta) *clusterMeta {
		return &clusterMeta{brokers: []int32{1, 2}, topics: map[string][]partMeta{"t": parts, "other": {late}}}
	}
	errMeta := errors.New("metadata: broken pipe")
	tests := []struct {
		name    string
		answers []*clusterMeta // nil: a failed read
		short   []string
		polls   int
		err     error
	}{
		{"in sync at once", []*clusterMeta{meta(full, full)}, nil, 1, nil},
		{"a follower joins late", []*clusterMeta{meta(full, late), meta(late, late), meta(full, full)}, nil, 3, nil},
		{"not in the answer yet", []*clusterMeta{{topics: map[string][]partMeta{}}, meta(full, full)}, nil, 2, nil},
		{"a failed read is retried", []*clusterMeta{nil, meta(full, full)}, nil, 1, nil},
		{"still short after the wait", []*clusterMeta{meta(full, late)}, []string{"t/1"}, 10, nil},
		{"no answer at all", []*clusterMeta{nil}, nil, 0, errMeta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := time.Unix(0, 0)
			now := func() time.Time { return clk }
			calls, ticks := 0, 0
			fetch := func(context.Context) (*clusterMeta, error) {
				a := tt.answers[min(calls, len(tt.answers)-1)]
				calls++
				clk = clk.Add(time.Second)
				if a == nil {
					return nil, errMeta
				}
				return a, nil
			}
			short, polls, err := waitInSync(context.Background(), fetch, []string{"t"}, 10*time.Second, 0, now, func([]string) { ticks++ })
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.short, short)
			assert.Equal(t, tt.polls, polls)
			assert.Equal(t, polls-boolInt(short == nil), ticks, "a tick per answer not in sync")
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := waitInSync(ctx, func(context.Context) (*clusterMeta, error) { return meta(late), nil }, []string{"t"}, time.Hour, time.Second, time.Now, func([]string) {})
	assert.ErrorIs(t, err, context.Canceled, "Ctrl-C ends the wait")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
