//go:build integration

package mtls

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

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

	jars, err := localkafka.FindJars("")
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, "java", "-cp", filepath.Join(jars, "*"), "org.apache.kafka.tools.TopicCommand",
		"--bootstrap-server", lab.Bootstrap, "--command-config", cc,
		"--create", "--topic", "mtls-a", "--partitions", "3", "--replication-factor", "3").CombinedOutput()
	require.NoError(t, err, "%s", out)

	var printed strings.Builder
	run := func(args ...string) string {
		t.Helper()
		t.Logf("$ kplan %s", strings.Join(args, " "))
		ios, _, o, e := iostreams.Test()
		code := app.Run(ctx, &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}, args)
		printed.WriteString(o.String() + e.String())
		require.Equal(t, 0, code, "%s", e.String())
		return o.String()
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
	key := clientKeyLines(t, filepath.Join(lab.State.Dir, "tls", "client.pem"))
	for _, l := range key {
		assert.NotContains(t, printed.String(), l, "kplan's output shows the client key")
		assert.NotContains(t, string(snapText), l, "the snapshot shows the client key")
	}
}

// clientKeyLines are the base64 lines of the private key in a PEM keystore.
func clientKeyLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		require.NotNil(t, blk, "%s holds no private key", path)
		if blk.Type != "PRIVATE KEY" {
			continue
		}
		var lines []string
		for _, l := range strings.Split(string(pem.EncodeToMemory(blk)), "\n") {
			if l != "" && !strings.HasPrefix(l, "-----") {
				lines = append(lines, l)
			}
		}
		require.NotEmpty(t, lines)
		return lines
	}
}
