//go:build integration

package secure

import (
	"context"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// transcript collects everything kplan printed, for the secrets check.
type transcript struct{ b strings.Builder }

// kplan runs kplan in process, logs the command and keeps its output.
func (tr *transcript) kplan(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	t.Logf("$ kplan %s", strings.Join(args, " "))
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	code := app.Run(ctx, f, args)
	tr.b.WriteString(out.String())
	tr.b.WriteString(errOut.String())
	return code, out.String(), errOut.String()
}

// kafkaTool runs one of Kafka's own command classes from the lab's jars.
func kafkaTool(t *testing.T, ctx context.Context, class string, args ...string) (string, error) {
	t.Helper()
	jars, err := localkafka.FindJars("")
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", filepath.Join(jars, "*"), class}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const topicTool = "org.apache.kafka.tools.TopicCommand"

var passwordRe = regexp.MustCompile(`password="([^"]+)"`)

// password is the SCRAM password in a client.properties.
func password(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := passwordRe.FindStringSubmatch(string(b))
	require.NotNil(t, m, "%s has no password", path)
	return m[1]
}

// keyLines are the base64 lines of the private key in a PEM keystore.
func keyLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		require.NotNil(t, blk, "%s holds no private key", path)
		if strings.Contains(blk.Type, "PRIVATE KEY") {
			enc := string(pem.EncodeToMemory(blk))
			var lines []string
			for _, l := range strings.Split(enc, "\n") {
				if l != "" && !strings.HasPrefix(l, "-----") {
					lines = append(lines, l)
				}
			}
			return lines
		}
	}
}

// assertNoSecrets fails when text holds a secret, or any base64 line of a
// key, naming where.
func assertNoSecrets(t *testing.T, where, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		require.NotEmpty(t, s)
		assert.NotContains(t, text, s, "%s shows a secret", where)
	}
}

// filesText reads every regular file under dir.
func filesText(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}
