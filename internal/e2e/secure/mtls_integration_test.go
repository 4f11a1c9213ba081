//go:build integration

package secure

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// TestMTLSLab: on a lab with client certificates required, kplan's verbs
// and Kafka's TopicCommand connect with the client.properties kplan wrote
// (a PEM keystore holding the client's key and chain), replication between
// brokers works over mTLS, and the client key never shows in kplan's
// output, JSON or saved snapshot.
func TestMTLSLab(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Security: localkafka.SecuritySSL})
	sec := lab.State.Security
	require.NotNil(t, sec)
	require.Equal(t, "SSL", sec.Protocol)
	cc := sec.ClientConfig
	props, err := os.ReadFile(cc)
	require.NoError(t, err)
	assert.Contains(t, string(props), "ssl.keystore.type=PEM")
	assert.NotContains(t, string(props), "sasl.", "mTLS needs no SASL")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	out, err := kafkaTool(t, ctx, topicTool, "--bootstrap-server", lab.Bootstrap, "--command-config", cc,
		"--create", "--topic", "mtls-a", "--partitions", "3", "--replication-factor", "3")
	require.NoError(t, err, "%s", out)

	var printed transcript
	run := func(args ...string) string {
		t.Helper()
		code, o, e := printed.kplan(t, ctx, args...)
		require.Equal(t, 0, code, "%s", e)
		return o
	}
	var st struct {
		Security   string `json:"security"`
		Partitions int    `json:"partitions"`
		Brokers    []struct {
			Replicas int `json:"replicas"`
		} `json:"brokers"`
	}
	require.NoError(t, json.Unmarshal([]byte(run("lab", "status", "--dir", lab.State.Dir, "-o", "json")), &st))
	assert.Equal(t, "SSL", st.Security)
	assert.Equal(t, 3, st.Partitions)
	snap := filepath.Join(t.TempDir(), "snap.json")
	assert.Contains(t, run("audit", "--bootstrap-server", lab.Bootstrap, "--command-config", cc, "--save-snapshot", snap), "mtls-a")
	assert.Contains(t, run("audit", "--bootstrap-server", lab.Bootstrap, "--command-config", cc, "-o", "json"), "mtls-a")
	// Every replica in sync: the brokers replicate over mTLS.
	assert.Eventually(t, func() bool {
		var s struct {
			Partitions      int      `json:"partitions"`
			UnderReplicated []string `json:"under_replicated"`
		}
		require.NoError(t, json.Unmarshal([]byte(run("lab", "status", "--dir", lab.State.Dir, "-o", "json")), &s))
		return s.Partitions == 3 && len(s.UnderReplicated) == 0
	}, 30*time.Second, time.Second)
	for _, b := range st.Brokers {
		assert.Equal(t, 3, b.Replicas, "replication factor 3 over 3 brokers")
	}

	snapText, err := os.ReadFile(snap)
	require.NoError(t, err)
	key := keyLines(t, filepath.Join(lab.State.Dir, "tls", "client.pem"))
	for _, l := range key {
		assert.NotContains(t, printed.b.String(), l, "kplan's output shows the client key")
		assert.NotContains(t, string(snapText), l, "the snapshot shows the client key")
	}
}
