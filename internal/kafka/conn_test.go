package kafka

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// writeConfig writes a command config whose values come through providers
// (${env:} and ${file:}), so that resolving it reads a second file too.
func writeConfig(t *testing.T, bootstrap string) string {
	t.Helper()
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	require.NoError(t, os.WriteFile(secrets, []byte("proto=PLAINTEXT\n"), 0o600))
	t.Setenv("KPLAN_TEST_BOOTSTRAP", bootstrap)
	path := filepath.Join(dir, "client.properties")
	body := "bootstrap.servers=${env:KPLAN_TEST_BOOTSTRAP}\nsecurity.protocol=${file:" + secrets + ":proto}\n"
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

// TestResolveReadsOnce: clients built from resolved options (and their
// copies, WithSeeds included) never read the command config again;
// unresolved options read it at each client, as before.
func TestResolveReadsOnce(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	defer c.Close()
	path := writeConfig(t, c.ListenAddrs()[0])

	for _, tc := range []struct {
		name    string
		resolve bool
		clients int
		want    int
	}{
		{"resolved, one client", true, 1, 1},
		{"resolved, many clients", true, 20, 1},
		{"unresolved, many clients", false, 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := CommandConfigReads(path)
			o := ConnOptions{CommandConfig: path}
			if tc.resolve {
				o, err = o.Resolve()
				require.NoError(t, err)
				p, ok := o.Properties()
				require.True(t, ok)
				assert.Equal(t, c.ListenAddrs()[0], p.BootstrapServers, "${env:} resolved")
				assert.Equal(t, "PLAINTEXT", p.SecurityProtocol, "${file:} resolved")
				o, err = o.Resolve() // resolving again is free
				require.NoError(t, err)
			}
			for i := range tc.clients {
				opts := o
				if i%2 == 1 {
					opts = o.WithSeeds(c.ListenAddrs())
				}
				cl, err := NewClient(opts, "test")
				require.NoError(t, err)
				cl.Close()
			}
			adm := NewAdmin(o, "test")
			_, err := adm.ClusterID(t.Context())
			require.NoError(t, err)
			adm.Close()
			extra := 0
			if !tc.resolve {
				extra = 1 // the admin's client
			}
			assert.Equal(t, tc.want+extra, CommandConfigReads(path)-before)
		})
	}
}

// TestResolveErrors: a bad command config fails Resolve with the one-line,
// usage-kind message LoadClientProperties gives (the file, the line, the
// key); Properties says unresolved options are not; changing the file
// after Resolve resolves the new one.
func TestResolveErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.properties")
	require.NoError(t, os.WriteFile(bad, []byte("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+filepath.Join(dir, "missing.pem")+"\n"), 0o600))
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "nosuch"), "--command-config: open " + filepath.Join(dir, "nosuch")},
		{"bad key", bad, bad + ":3: ssl.truststore.location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConnOptions{CommandConfig: tc.path}.Resolve()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			_, _, lerr := newClient(ConnOptions{CommandConfig: tc.path, BootstrapServers: "x:1"}, "test")
			assert.Equal(t, err.Error(), lerr.Error(), "the same message as when a client is built")
		})
	}

	_, ok := ConnOptions{}.Properties()
	assert.False(t, ok, "not resolved")
	plain, err := ConnOptions{}.Resolve()
	require.NoError(t, err)
	p, ok := plain.Properties()
	require.True(t, ok)
	assert.Equal(t, "PLAINTEXT", p.SecurityProtocol, "no command config: the defaults")

	good := writeConfig(t, "x:1")
	o, err := ConnOptions{CommandConfig: good}.Resolve()
	require.NoError(t, err)
	o.CommandConfig = bad
	_, ok = o.Properties()
	assert.False(t, ok, "another file is not resolved by the first")
	_, err = o.Resolve()
	assert.ErrorContains(t, err, bad)
}
