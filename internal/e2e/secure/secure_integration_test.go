//go:build integration

package secure

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

// TestSecuredLabVerbs runs every verb that talks to Kafka against a
// SASL_SSL lab (TLS from kplan's own CA, SCRAM-SHA-512 and SCRAM-SHA-256
// users) with the client.properties `kplan lab up --security` wrote, and
// Kafka's own TopicCommand with the same files; then greps everything
// printed, the chaos report and the saved snapshot for the passwords and
// the private key material.
func TestSecuredLabVerbs(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Security: localkafka.SecuritySASLSSL})
	sec := lab.State.Security
	require.NotNil(t, sec)
	require.Equal(t, "SASL_SSL", sec.Protocol)
	cc, cc256 := sec.ClientConfig, sec.ClientConfig256
	for _, f := range []string{cc, cc256} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "%s", f)
	}
	dir := lab.State.Dir
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var tr transcript
	work := t.TempDir()

	// Kafka's own tool, with each user's file.
	out, err := kafkaTool(t, ctx, topicTool, "--bootstrap-server", lab.Bootstrap, "--command-config", cc,
		"--create", "--topic", "sec-a", "--partitions", "6", "--replication-factor", "2")
	require.NoError(t, err, out)
	out, err = kafkaTool(t, ctx, topicTool, "--bootstrap-server", lab.Bootstrap, "--command-config", cc256, "--list")
	require.NoError(t, err, out)
	assert.Contains(t, out, "sec-a")

	// lab status reads the lab's own client.properties.
	code, out, errOut := tr.kplan(t, ctx, "lab", "status", "--dir", dir, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		Security     string `json:"security"`
		ClientConfig string `json:"client_config"`
		Partitions   int    `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.Equal(t, "SASL_SSL", st.Security)
	assert.Equal(t, cc, st.ClientConfig)
	assert.Equal(t, 6, st.Partitions)

	// audit, with SCRAM-SHA-512 and SCRAM-SHA-256, text, JSON and a snapshot.
	snap := filepath.Join(work, "snap.json")
	code, out, errOut = tr.kplan(t, ctx, "audit", "--bootstrap-server", lab.Bootstrap, "--command-config", cc, "--save-snapshot", snap)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "sec-a")
	code, out, errOut = tr.kplan(t, ctx, "audit", "--bootstrap-server", lab.Bootstrap, "--command-config", cc256, "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "sec-a")

	// chaos on the lab: the lab's client.properties are used by itself.
	// On a loaded machine brokers can miss their 3 s session and drop out
	// of ISRs for a while: wait for a calm lab. chaos itself waits for the
	// scratch topics it creates to be in sync before its safety check, so
	// the kill goes through that check (no --allow-unavailable).
	require.Eventually(t, func() bool {
		var s struct {
			UnderReplicated []string `json:"under_replicated"`
		}
		code, out, _ := tr.kplan(t, ctx, "lab", "status", "--dir", dir, "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &s) == nil && len(s.UnderReplicated) == 0
	}, time.Minute, time.Second)
	report := filepath.Join(work, "chaos")
	code, out, errOut = tr.kplan(t, ctx, "chaos", "--cluster", "lab", "--lab-dir", dir, "--kill", "broker-2", "--restore",
		"--warmup", "1s", "--phase-duration", "2s", "--rate", "50kB/s", "--report", report, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var res chaos.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	t.Logf("chaos notes: %q", res.Notes)
	require.NotEmpty(t, res.Partitioners)
	for _, p := range res.Partitioners {
		assert.Positive(t, p.Acked, "%s: records acknowledged over SASL_SSL", p.Name)
		assert.Zero(t, p.Lost, "%s lost acknowledged records", p.Name)
	}

	// reassign: plan from the live cluster, then apply it on the lab.
	plan := filepath.Join(work, "plan.json")
	code, out, errOut = tr.kplan(t, ctx, "reassign", "--bootstrap-server", lab.Bootstrap, "--command-config", cc,
		"--topics", "^sec-a$", "--brokers", "1,2", "--out", plan, "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"partitions": 6`, "the plan covers sec-a, read over SASL_SSL")
	code, out, errOut = tr.kplan(t, ctx, "reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--command-config", cc256,
		"--lab-dir", dir, "--wait-timeout", "1m")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	out, err = kafkaTool(t, ctx, topicTool, "--bootstrap-server", lab.Bootstrap, "--command-config", cc, "--describe", "--topic", "sec-a")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "Replicas: 3", "broker 3 drained:\n%s", out)
	assert.NotContains(t, out, ",3\t", "broker 3 drained:\n%s", out)

	// Nothing printed or written holds a secret.
	secrets := []string{password(t, cc), password(t, cc256)}
	for _, n := range lab.State.Nodes {
		secrets = append(secrets, keyLines(t, filepath.Join(dir, "tls", "node-"+itoa(n.ID)+".pem"))...)
	}
	assertNoSecrets(t, "kplan's output", tr.b.String(), secrets)
	files := filesText(t, work)
	require.Contains(t, files, snap)
	for p, text := range files {
		assertNoSecrets(t, p, text, secrets)
	}
	assertNoSecrets(t, "lab.json", readFile(t, filepath.Join(dir, "lab.json")), secrets)
	assert.True(t, strings.Contains(tr.b.String(), "sec-a"), "the transcript holds the verbs' output")
}

func itoa(id int32) string { return strconv.Itoa(int(id)) }

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}
