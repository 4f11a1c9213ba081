//go:build integration

package secure

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/tlsgen"
)

// TestSecuredLabFailures: each wrong client setting against the real
// SASL_SSL lab (Kafka 4.3.1) fails audit and reassign with one line that
// says what is wrong and where, the documented exit code, the default
// --timeout, and never the password. The elapsed times are logged (a
// connection failure must not wait for the timeout), not asserted.
func TestSecuredLabFailures(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Security: localkafka.SecuritySASLSSL})
	sec := lab.State.Security
	require.NotNil(t, sec)
	good := readFile(t, sec.ClientConfig)
	pass := password(t, sec.ClientConfig)
	work := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(work, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	// A CA of its own, which signed none of the lab's certificates.
	other, err := tlsgen.NewCA("some other CA", time.Now())
	require.NoError(t, err)
	otherCA := write("other-ca.pem", string(other.CertPEM()))
	wrongPass := "Wr0ng-" + pass[:8]
	jaasLine := func(text string) string {
		for l := range strings.SplitSeq(text, "\n") {
			if strings.HasPrefix(l, "sasl.jaas.config=") {
				return l
			}
		}
		t.Fatal("no sasl.jaas.config in the lab's client.properties")
		return ""
	}(good)
	bootstrap := "bootstrap.servers=" + lab.Bootstrap + "\n"
	plan := write("plan.json", `{"version":1,"partitions":[{"topic":"sec-none","partition":0,"replicas":[1,2]}]}`)

	tests := []struct {
		name, props string
		want        []string
	}{
		{"wrong password", strings.ReplaceAll(good, pass, wrongPass),
			[]string{"authentication failed at " + lab.Bootstrap + ": ", `(SCRAM-SHA-512, user "kplan")`}},
		{"untrusted certificate", strings.ReplaceAll(good, sec.CAFile, otherCA),
			[]string{"untrusted certificate at " + lab.Bootstrap + ": ", `subject "CN=node-`, `issuer "CN=kplan lab CA `, otherCA}},
		{"plaintext to the SASL_SSL port", bootstrap + "security.protocol=PLAINTEXT\n",
			[]string{"TLS failure at " + lab.Bootstrap + ": the broker answered in TLS: is it a TLS listener? set security.protocol=SSL or SASL_SSL"}},
		{"SASL_PLAINTEXT to the SASL_SSL port", bootstrap + "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n" + jaasLine + "\n",
			[]string{"TLS failure at " + lab.Bootstrap + ": the broker answered in TLS: is it a TLS listener? set security.protocol=SSL or SASL_SSL"}},
	}
	var tr transcript
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := write(strings.ReplaceAll(tt.name, " ", "-")+".properties", tt.props)
			for _, args := range [][]string{
				{"audit", "--bootstrap-server", lab.Bootstrap, "--command-config", cc},
				{"reassign", "--bootstrap-server", lab.Bootstrap, "--command-config", cc, "--brokers", "1,2", "-o", "json"},
				{"reassign", "apply", plan, "--bootstrap-server", lab.Bootstrap, "--command-config", cc, "--yes"},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				start := time.Now()
				code, out, errOut := tr.kplan(t, ctx, args...)
				took := time.Since(start)
				ended := ctx.Err()
				cancel()
				t.Logf("%s %s: exit %d after %v: %s", args[0], args[1], code, took.Round(time.Millisecond), strings.TrimSpace(errOut))
				require.NoError(t, ended, "ended only at the test's deadline")
				assert.Equal(t, cmdutil.ExitUsage, code, "client properties that do not match the listener are bad input (README: exit codes)")
				assert.Empty(t, out)
				lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
				require.Len(t, lines, 1, "one line: %q", errOut)
				for _, w := range tt.want {
					assert.Contains(t, lines[0], w)
				}
				assert.NotContains(t, lines[0], "cluster unreachable")
			}
		})
	}
	assertNoSecrets(t, "the failures' output", tr.b.String(), []string{pass, wrongPass})
}
