package kafka

import (
	"context"

	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestParseProperties(t *testing.T) {
	p, err := ParseProperties([]byte(`# client.properties
bootstrap.servers=k1:9092,k2:9092
security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="alice" password="s3\"cret";
linger.ms=5
`), "c.properties")
	require.NoError(t, err)
	assert.Equal(t, "k1:9092,k2:9092", p.BootstrapServers)
	assert.Equal(t, "SCRAM-SHA-512", p.SASLMechanism)
	assert.Equal(t, "alice", p.Username)
	assert.Equal(t, `s3"cret`, p.Password)
	opts, err := p.Opts()
	require.NoError(t, err)
	assert.Len(t, opts, 2, "the dialer and SASL")
}

func TestParsePropertiesErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		body, want string
	}{
		{"security.protocol=TLS\n", `c.properties:1: security.protocol: unknown protocol "TLS"`},
		{"security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.jaas.config=x\n", `c.properties:2: sasl.mechanism: mechanism "GSSAPI" is not supported`},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n", "c.properties:2: sasl.jaas.config is required for SASL_PLAINTEXT"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=x required;\n", `c.properties:3: sasl.jaas.config: no username`},
		{"security.protocol=SSL\nssl.truststore.location=/x.jks\n", "c.properties:2: ssl.truststore.location: JKS stores are not readable"},
		{"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + filepath.Join(dir, "none.pem") + "\n", "c.properties:3: ssl.truststore.location: open"},
		{"just a line\n", "c.properties:1: want key=value"},
	}
	for _, tt := range tests {
		_, err := ParseProperties([]byte(tt.body), "c.properties")
		require.Error(t, err, tt.body)
		assert.Contains(t, err.Error(), tt.want)
	}
	bad := filepath.Join(dir, "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not pem"), 0o644))
	p, err := ParseProperties([]byte("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+bad+"\n"), "c.properties")
	require.NoError(t, err)
	_, err = p.Opts()
	assert.ErrorContains(t, err, "no PEM certificate")
	_, err = LoadClientProperties(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "--command-config")
}

func FuzzParseProperties(f *testing.F) {
	f.Add("bootstrap.servers=a:1\n")
	f.Add("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=x username=\"u\" password=\"p\";\n")
	f.Add("a=b\\\nc\n")
	f.Add("security.protocol=SSL\nssl.truststore.certificates=-----BEGIN\n")
	f.Add("bootstrap.servers=${env:KPLAN_FUZZ_UNSET}:9092\n")
	f.Add("sasl.jaas.config=x password=\"${file:/nonexistent/secrets.properties:password}\";\n")
	f.Add("config.providers=env,x\nconfig.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\na=${x:y}${env:}\n")
	f.Add("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config=x;\nsasl.oauthbearer.token.endpoint.url=file:///nonexistent\n")
	f.Fuzz(func(t *testing.T, body string) {
		p, err := ParseProperties([]byte(body), "f")
		if err != nil {
			return
		}
		_, _ = p.Opts()
	})
}

// TestConfigProviders: Kafka's ${env:VAR}, ${file:PATH:key} and
// ${dir:PATH:name} references resolve anywhere in a value, with or without
// the config.providers lines Kafka's own tools need.
func TestConfigProviders(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	require.NoError(t, os.WriteFile(secrets, []byte("# kafka secrets\nuser=alice\npassword = f1le-s3cret\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pass"), []byte("d1r-s3cret"), 0o600))
	t.Setenv("KPLAN_TEST_PASS", "env-s3cret")
	t.Setenv("KPLAN_TEST_HOST", "k1")
	jaas := func(user, pass string) string {
		return `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + pass + "\";\n"
	}
	const sasl = "bootstrap.servers=${env:KPLAN_TEST_HOST}:9092,k2:9092\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
	const kafkaLines = "config.providers=env,file,dir\n" +
		"config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\n" +
		"config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider\n" +
		"config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider\n"
	tests := []struct {
		name, body, user, pass string
	}{
		{"env without config.providers", sasl + jaas("alice", "${env:KPLAN_TEST_PASS}"), "alice", "env-s3cret"},
		{"env with config.providers", kafkaLines + sasl + jaas("alice", "${env:KPLAN_TEST_PASS}"), "alice", "env-s3cret"},
		{"file without config.providers", sasl + jaas("${file:"+secrets+":user}", "${file:"+secrets+":password}"), "alice", "f1le-s3cret"},
		{"file with config.providers", kafkaLines + sasl + jaas("${file:"+secrets+":user}", "${file:"+secrets+":password}"), "alice", "f1le-s3cret"},
		{"dir", sasl + jaas("alice", "${dir:"+dir+":pass}"), "alice", "d1r-s3cret"},
		{"a provider under its own name", "config.providers=vault, env\nconfig.providers.vault.class=org.apache.kafka.common.config.provider.FileConfigProvider\n" +
			"config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\n" +
			sasl + jaas("alice", "x-${vault:"+secrets+":password}-y"), "alice", "x-f1le-s3cret-y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseProperties([]byte(tt.body), "c.properties")
			require.NoError(t, err)
			assert.Equal(t, "k1:9092,k2:9092", p.BootstrapServers)
			assert.Equal(t, tt.user, p.Username)
			assert.Equal(t, tt.pass, p.Password)
		})
	}
}

// TestConfigProviderErrors: a reference that cannot be resolved names the
// file:line, the key and what is missing, never a secret.
func TestConfigProviderErrors(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	require.NoError(t, os.WriteFile(secrets, []byte("password=f1le-s3cret\n"), 0o600))
	t.Setenv("KPLAN_TEST_PASS", "env-s3cret")
	const head = "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
	jaas := func(pass string) string {
		return `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pass + "\";\n"
	}
	missing := filepath.Join(dir, "none.properties")
	tests := []struct {
		name, body, want string
	}{
		{"unset variable", head + jaas("${env:KPLAN_TEST_UNSET}"), "c.properties:3: sasl.jaas.config: ${env:KPLAN_TEST_UNSET}: environment variable KPLAN_TEST_UNSET is not set"},
		{"missing file", head + jaas("${file:"+missing+":password}"), "c.properties:3: sasl.jaas.config: ${file:" + missing + ":password}: reading a secret: open " + missing},
		{"missing key", head + jaas("${file:"+secrets+":pass}"), "c.properties:3: sasl.jaas.config: ${file:" + secrets + ":pass}: no key pass in " + secrets},
		{"file without key", head + jaas("${file:"+secrets+"}"), "want ${file:FILE:KEY}"},
		{"provider not listed", "config.providers=env\nconfig.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\n" + head + jaas("${file:"+secrets+":password}"),
			`c.properties:5: sasl.jaas.config: ${file:` + secrets + `:password}: provider "file" is not in config.providers`},
		{"provider without class", "config.providers=env\n" + head + jaas("${env:KPLAN_TEST_PASS}"), `c.properties:1: config.providers: provider "env" has no config.providers.env.class`},
		{"provider kplan cannot run", "config.providers=vault\nconfig.providers.vault.class=com.example.Vault\n" + head, `c.properties:2: config.providers.vault.class: class "com.example.Vault" is not one kplan can run`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProperties([]byte(tt.body), "c.properties")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.NotContains(t, err.Error(), "s3cret")
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestOAuthBearerTokenFile: OAUTHBEARER reads a static token from the file
// Kafka's sasl.oauthbearer.token.endpoint.url names, at each login.
func TestOAuthBearerTokenFile(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token.jwt")
	require.NoError(t, os.WriteFile(token, []byte("eyJhbGciOiJub25lIn0.e30.\n"), 0o600))
	const head = "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n"
	p, err := ParseProperties([]byte(head+"sasl.oauthbearer.token.endpoint.url=file://"+token+"\n"), "c.properties")
	require.NoError(t, err)
	assert.Equal(t, token, p.TokenFile)
	m := p.saslMechanism()
	require.NotNil(t, m)
	assert.Equal(t, "OAUTHBEARER", m.Name())
	_, first, err := m.Authenticate(context.Background(), "k1:9093")
	require.NoError(t, err)
	assert.Contains(t, string(first), "auth=Bearer eyJhbGciOiJub25lIn0.e30.\x01")

	require.NoError(t, os.Remove(token))
	_, _, err = m.Authenticate(context.Background(), "k1:9093")
	var se *saslError
	require.ErrorAs(t, err, &se, "a missing token fails the login, typed")

	for _, body := range []string{head, head + "sasl.oauthbearer.token.endpoint.url=https://idp.example/token\n"} {
		_, err = ParseProperties([]byte(body), "c.properties")
		assert.ErrorContains(t, err, "sasl.oauthbearer.token.endpoint.url: kplan reads OAUTHBEARER tokens from a file only")
	}
}
