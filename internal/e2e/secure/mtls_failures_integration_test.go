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

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/tlsgen"
)

// TestMTLSLabFailures: against the real mTLS lab (Kafka 4.3.1 with
// ssl.client.auth=required), a client without a certificate, and one with
// a certificate of a CA the brokers do not trust, fail audit and reassign
// with one line saying so (not "cluster unreachable"), exit code 2 and the
// default --timeout. Elapsed times are logged, not asserted.
func TestMTLSLabFailures(t *testing.T) {
	lab := labtest.Start(t, labtest.Options{Security: localkafka.SecuritySSL})
	sec := lab.State.Security
	require.NotNil(t, sec)
	work := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(work, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	stranger, err := tlsgen.NewCA("stranger CA", time.Now())
	require.NoError(t, err)
	strangerKS, err := stranger.Issue("stranger", nil, time.Now())
	require.NoError(t, err)
	trust := "bootstrap.servers=" + lab.Bootstrap + "\nsecurity.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + sec.CAFile + "\n"
	tests := []struct {
		name, props string
		want        string
	}{
		{"no client certificate", trust,
			"TLS failure at " + lab.Bootstrap + ": the broker requires a client certificate (ssl.keystore.*)"},
		{"a client certificate the brokers do not trust", trust + "ssl.keystore.type=PEM\nssl.keystore.location=" + write("stranger.pem", strangerKS) + "\n",
			"TLS failure at " + lab.Bootstrap + ": the broker refused the client certificate of ssl.keystore.*: is it signed by a CA the broker trusts?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := write(strings.ReplaceAll(tt.name, " ", "-")+".properties", []byte(tt.props))
			for _, args := range [][]string{
				{"audit", "--bootstrap-server", lab.Bootstrap, "--command-config", cc},
				{"reassign", "--bootstrap-server", lab.Bootstrap, "--command-config", cc, "--brokers", "1,2", "-o", "json"},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				ios, _, out, errOut := iostreams.Test()
				start := time.Now()
				code := app.Run(ctx, &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}, args)
				took := time.Since(start)
				ended := ctx.Err()
				cancel()
				t.Logf("$ kplan %s\nexit %d after %v: %s", strings.Join(args, " "), code, took.Round(time.Millisecond), strings.TrimSpace(errOut.String()))
				require.NoError(t, ended, "ended only at the test's deadline")
				assert.Equal(t, cmdutil.ExitUsage, code, "client properties that do not match the listener are bad input (README: exit codes)")
				assert.Empty(t, out.String())
				lines := strings.Split(strings.TrimRight(errOut.String(), "\n"), "\n")
				require.Len(t, lines, 1, "one line: %q", errOut.String())
				assert.Contains(t, lines[0], tt.want)
				assert.NotContains(t, lines[0], "cluster unreachable")
			}
		})
	}
}
