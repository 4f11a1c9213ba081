package kafka

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Len(t, opts, 1)
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
	f.Fuzz(func(t *testing.T, body string) {
		p, err := ParseProperties([]byte(body), "f")
		if err != nil {
			return
		}
		_, _ = p.Opts()
	})
}
