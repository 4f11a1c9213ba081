package lab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

func TestPreferredLed(t *testing.T) {
	md := func(leader int32) kadm.Metadata {
		return kadm.Metadata{Topics: kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{
			0: {Partition: 0, Leader: 1, Replicas: []int32{1, 2}},
			1: {Partition: 1, Leader: leader, Replicas: []int32{2, 3}},
		}}}}
	}
	assert.True(t, preferredLed(md(2)))
	assert.False(t, preferredLed(md(3)), "partition 1 is led by its second replica")
	assert.True(t, preferredLed(kadm.Metadata{}), "nothing to elect")
}

// TestConn: a secured lab's client properties are used unless the
// caller gave its own; a plaintext lab adds none. The file is read once:
// options that come resolved are not read again.
func TestConn(t *testing.T) {
	dir := t.TempDir()
	labFile, mine := filepath.Join(dir, "client.properties"), filepath.Join(dir, "mine.properties")
	for _, f := range []string{labFile, mine} {
		require.NoError(t, os.WriteFile(f, []byte("security.protocol=PLAINTEXT\n"), 0o600))
	}
	secured := &localkafka.State{Security: &localkafka.Security{Mode: "sasl_ssl", ClientConfig: labFile}}
	plain := &localkafka.State{}
	for _, tc := range []struct {
		name     string
		state    *localkafka.State
		given    string
		resolved bool // the caller resolved its options already
		want     string
		reads    int
	}{
		{"secured lab, no --command-config", secured, "", false, labFile, 1},
		{"secured lab, explicit --command-config", secured, mine, false, mine, 1},
		{"secured lab, explicit and resolved", secured, mine, true, mine, 0},
		{"plaintext lab", plain, "", false, "", 0},
		{"plaintext lab, explicit", plain, mine, false, mine, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := kafka.ConnOptions{BootstrapServers: "x:1", CommandConfig: tc.given}
			if tc.resolved {
				var err error
				in, err = in.Resolve()
				require.NoError(t, err)
			}
			before := kafka.CommandConfigReads(tc.want)
			got, err := Conn(tc.state, in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.CommandConfig)
			assert.Equal(t, "x:1", got.BootstrapServers)
			_, ok := got.Properties()
			assert.True(t, ok, "resolved")
			if tc.want != "" {
				assert.Equal(t, tc.reads, kafka.CommandConfigReads(tc.want)-before, "reads of %s", tc.want)
			}
		})
	}
	_, err := Conn(&localkafka.State{Security: &localkafka.Security{ClientConfig: filepath.Join(dir, "missing")}}, kafka.ConnOptions{})
	require.ErrorContains(t, err, "--command-config")
}
