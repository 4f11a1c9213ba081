package kafka

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writePortable writes files into a new directory and parses its
// PortableConfig as a worker would read it there.
func writePortable(t *testing.T, files map[string][]byte, dir string) Properties {
	t.Helper()
	for name, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	got, err := ParseProperties(files[PortableConfig], PortableConfig)
	require.NoError(t, err, "%s", files[PortableConfig])
	return got
}

// TestPortableRoundTrip: on random settings, the portable files read back
// in their directory give the same connection (protocol, mechanism,
// credentials with quotes and backslashes, PEM material, hostname check)
// and refer to nothing outside it.
func TestPortableRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	protocols := []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
	mechanisms := []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
	word := func() string {
		const chars = `abcXYZ019 "\;=:#!{}$'`
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteByte(chars[rng.IntN(len(chars))])
		}
		s := strings.ReplaceAll(b.String(), "${", "$ {")
		return s
	}
	for i := range 300 {
		src := t.TempDir()
		p := Properties{SecurityProtocol: protocols[rng.IntN(len(protocols))]}
		if strings.HasPrefix(p.SecurityProtocol, "SASL") {
			p.SASLMechanism = mechanisms[rng.IntN(len(mechanisms))]
			if p.SASLMechanism == "OAUTHBEARER" {
				p.TokenFile = filepath.Join(src, "token")
				require.NoError(t, os.WriteFile(p.TokenFile, []byte("jwt-"+word()), 0o600))
			} else {
				p.Username, p.Password = strings.TrimSpace(word())+"u", word()
			}
		}
		if strings.HasSuffix(p.SecurityProtocol, "SSL") {
			if rng.IntN(2) == 0 {
				p.TrustPEM = []byte("-----BEGIN CERTIFICATE-----\nCA" + word() + "\n-----END CERTIFICATE-----\n")
			}
			switch rng.IntN(3) {
			case 1: // a PEM keystore file: key and chain in one
				p.CertPEM = []byte("KEY AND CHAIN " + word())
				p.KeyPEM = p.CertPEM
			case 2: // inline chain and key
				p.CertPEM, p.KeyPEM = []byte("CHAIN "+word()), []byte("KEY "+word())
			}
			p.NoHostnameCheck = rng.IntN(2) == 0
		}
		dir := t.TempDir()
		files, err := p.portable(dir, os.ReadFile)
		require.NoError(t, err, "case %d: %+v", i, p)
		assert.NotContains(t, string(files[PortableConfig]), src, "case %d: nothing refers to the source machine", i)
		got := writePortable(t, files, dir)

		want := p
		want.TrustFrom, got.TrustFrom = "", ""
		if want.TokenFile != "" {
			want.TokenFile = filepath.Join(dir, portableToken)
			tok, err := os.ReadFile(got.TokenFile)
			require.NoError(t, err)
			orig, err := os.ReadFile(p.TokenFile)
			require.NoError(t, err)
			assert.Equal(t, orig, tok, "case %d: the token", i)
		}
		if p.CertPEM != nil && string(p.CertPEM) != string(p.KeyPEM) {
			// Shipped as one PEM file holding both, as a keystore file is read.
			both := string(p.KeyPEM) + "\n" + string(p.CertPEM)
			assert.Equal(t, both, string(got.CertPEM), "case %d", i)
			assert.Equal(t, both, string(got.KeyPEM), "case %d", i)
			got.CertPEM, got.KeyPEM = p.CertPEM, p.KeyPEM
		}
		assert.Equal(t, want, got, "case %d:\n%s", i, files[PortableConfig])
	}
}

func TestPortable(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"), 0o600))
	cfg := filepath.Join(dir, "client.properties")
	t.Setenv("KPLAN_TEST_PASSWORD", `pw\d`)
	require.NoError(t, os.WriteFile(cfg, []byte("bootstrap.servers=k1:9093\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"${env:KPLAN_TEST_PASSWORD}\";\n"), 0o600))

	files, ok, err := ConnOptions{}.Portable("/etc/kplan")
	require.NoError(t, err)
	assert.False(t, ok, "no command config: nothing to ship")
	assert.Nil(t, files)

	_, _, err = ConnOptions{CommandConfig: cfg}.Portable("/etc/kplan")
	require.Error(t, err, "not resolved")

	conn, err := ConnOptions{CommandConfig: cfg}.Resolve()
	require.NoError(t, err)
	files, ok, err = conn.Portable("/etc/kplan")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "# kplan's client properties for a worker (kplan chaos --workers-on kubernetes)\n"+
		"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pw\\d";`+"\n",
		string(files[PortableConfig]), "the reference is resolved, bootstrap.servers left to the flag")
	assert.Len(t, files, 1)

	_, err = Properties{SecurityProtocol: "SASL_SSL", SASLMechanism: "PLAIN", Username: "u", Password: "a\nb"}.portable("/x", os.ReadFile)
	require.ErrorContains(t, err, "SASL password holds a line break")
}
