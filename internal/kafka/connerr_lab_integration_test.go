//go:build integration

package kafka_test

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
	"github.com/kplan-dev/kplan/internal/tlsgen"
)

// TestTLSToPlaintextLab: TLS (and SASL_SSL) to the real PLAINTEXT lab's
// brokers fails audit and reassign with one line saying the port does not
// speak TLS, exit code 2 and the default --timeout. Elapsed times are
// logged, not asserted.
func TestTLSToPlaintextLab(t *testing.T) {
	lab := labtest.Shared(t)
	work := t.TempDir()
	ca, err := tlsgen.NewCA("kplan test CA", time.Now())
	require.NoError(t, err)
	caFile := filepath.Join(work, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, ca.CertPEM(), 0o600))
	trust := "bootstrap.servers=" + lab.Bootstrap + "\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\n"
	for name, props := range map[string]string{
		"SSL":      trust + "security.protocol=SSL\n",
		"SASL_SSL": trust + "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"never-shown-pw\";\n",
	} {
		t.Run(name, func(t *testing.T) {
			cc := filepath.Join(work, name+".properties")
			require.NoError(t, os.WriteFile(cc, []byte(props), 0o600))
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
				assert.Contains(t, lines[0], "TLS failure at "+lab.Bootstrap+": ")
				assert.Contains(t, lines[0], "not a TLS listener? check the port and security.protocol")
				assert.NotContains(t, lines[0], "never-shown-pw")
			}
		})
	}
}
