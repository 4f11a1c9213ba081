package localkafka

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// TestSecuredProperties: each mode's listeners, protocol map, inter-broker
// settings and PEM stores in server.properties.
func TestSecuredProperties(t *testing.T) {
	sec := &labSecrets{broker: "b-pass", client: "c-pass", client256: "c256-pass"}
	for _, tc := range []struct {
		mode      string
		want, not []string
	}{
		{SecuritySASLSSL, []string{
			"listeners=SASL_SSL://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093",
			"listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SSL",
			"inter.broker.listener.name=SASL_SSL",
			"advertised.listeners=SASL_SSL://127.0.0.1:19092",
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
			`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b-pass";`,
			"ssl.keystore.type=PEM", "ssl.keystore.location=/lab/tls/node-1.pem",
			"ssl.truststore.type=PEM", "ssl.truststore.location=/lab/tls/ca.pem",
			"listener.name.controller.ssl.client.auth=required",
		}, []string{"\nssl.client.auth=required", "c-pass"}},
		{SecuritySSL, []string{
			"listener.security.protocol.map=SSL:SSL,CONTROLLER:SSL",
			"inter.broker.listener.name=SSL",
			"\nssl.client.auth=required",
		}, []string{"sasl."}},
		{SecuritySASLPlaintext, []string{
			"listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SSL",
			"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=",
		}, []string{"\nssl.client.auth=required"}},
		{SecurityPlaintext, []string{
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		}, []string{"ssl.", "sasl."}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := Config{Brokers: 3, Dir: "/lab", BasePort: 19092, Security: tc.mode}
			nodes := plan(cfg)
			got := properties(cfg, nodes, nodes[0]) + strings.Join(securityLines(tc.mode, "/lab", nodes[0], sec), "\n")
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
			for _, n := range tc.not {
				assert.NotContains(t, got, n)
			}
		})
	}
}

// TestScramArgs: kafka-storage format gets each SCRAM user as a salted
// credential (name, iterations, salt, salted password) that Kafka's
// ScramParser reads, and never a password: argv is visible to every user of
// the machine (ps, /proc/PID/cmdline).
func TestScramArgs(t *testing.T) {
	sec, err := newSecrets()
	require.NoError(t, err)
	passwords := []string{sec.broker, sec.client, sec.client256}
	for _, mode := range []string{SecuritySASLSSL, SecuritySASLPlaintext} {
		args := scramArgs(mode, sec)
		require.Len(t, args, 6, mode)
		joined := strings.Join(args, " ")
		for _, pw := range passwords {
			require.NotEmpty(t, pw)
			assert.NotContains(t, joined, pw, "a password in kafka-storage's argv")
		}
		assert.NotContains(t, joined, ",password=", "Kafka's plain password form")
		re := regexp.MustCompile(`^(SCRAM-SHA-512|SCRAM-SHA-256)=\[name=(\w+),iterations=4096,salt="([A-Za-z0-9+/=]+)",saltedpassword="([A-Za-z0-9+/=]+)"\]$`)
		users := map[string]string{}
		for i := 0; i < len(args); i += 2 {
			assert.Equal(t, "--add-scram", args[i])
			m := re.FindStringSubmatch(args[i+1])
			require.NotNil(t, m, "%s: not Kafka's salted --add-scram form", args[i+1])
			users[m[2]] = m[1]
			salt, err := base64.StdEncoding.DecodeString(m[3])
			require.NoError(t, err)
			salted, err := base64.StdEncoding.DecodeString(m[4])
			require.NoError(t, err)
			pw := map[string]string{BrokerUser: sec.broker, ClientUser: sec.client, ClientUser256: sec.client256}[m[2]]
			want, err := saltedPassword(m[1], pw, salt, 4096)
			require.NoError(t, err)
			assert.Equal(t, want, salted, "%s's salted password", m[2])
		}
		assert.Equal(t, map[string]string{BrokerUser: "SCRAM-SHA-512", ClientUser: "SCRAM-SHA-512", ClientUser256: "SCRAM-SHA-256"}, users)
	}
	assert.Nil(t, scramArgs(SecuritySSL, sec), "no SCRAM users under ssl")
	assert.Nil(t, scramArgs(SecurityPlaintext, sec))

	other, err := newSecrets()
	require.NoError(t, err)
	assert.NotEqual(t, sec.scram[0].salt, other.scram[0].salt, "a fresh salt per lab")
}

// TestSaltedPassword checks SCRAM's SaltedPassword against an outside
// reference for each mechanism: RFC 7677's SCRAM-SHA-256 exchange (the
// client proof and server signature derive from it) and, for SCRAM-SHA-512
// (no RFC vector), Kafka 4.3.1's own ScramFormatter.saltedPassword run on
// the same inputs.
func TestSaltedPassword(t *testing.T) {
	t.Run("RFC 7677", func(t *testing.T) {
		salt, err := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
		require.NoError(t, err)
		salted, err := saltedPassword("SCRAM-SHA-256", "pencil", salt, 4096)
		require.NoError(t, err)
		authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO," +
			"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
			"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
		mac := func(key []byte, msg string) []byte {
			h := hmac.New(sha256.New, key)
			h.Write([]byte(msg))
			return h.Sum(nil)
		}
		clientKey := mac(salted, "Client Key")
		stored := sha256.Sum256(clientKey)
		sig := mac(stored[:], authMessage)
		proof := make([]byte, len(clientKey))
		for i := range proof {
			proof[i] = clientKey[i] ^ sig[i]
		}
		assert.Equal(t, "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", base64.StdEncoding.EncodeToString(proof), "ClientProof")
		assert.Equal(t, "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", base64.StdEncoding.EncodeToString(mac(mac(salted, "Server Key"), authMessage)), "ServerSignature")
	})
	// new ScramFormatter(ScramMechanism.X).saltedPassword("pencil", salt, 4096),
	// base64, with kafka-clients-4.3.1.jar.
	salt := []byte("kplan-test-salt-0123456789abcdef")
	for mech, want := range map[string]string{
		"SCRAM-SHA-512": "AAdV8yk14e/DrOcgnC1k9Jge4MRMkKGDxARao7IMd1NLvBZLvyO+r6RqpSBBgaNGTtRmx1ZuX9WRNYKvGv2C1A==",
		"SCRAM-SHA-256": "3InmGAElNFHcgMTBwEabgUO6nIdC0WHPyzW+DKkID4Q=",
	} {
		got, err := saltedPassword(mech, "pencil", salt, 4096)
		require.NoError(t, err, mech)
		assert.Equal(t, want, base64.StdEncoding.EncodeToString(got), "%s: Kafka's ScramFormatter", mech)
	}
	_, err := saltedPassword("SCRAM-SHA-1", "pencil", salt, 4096)
	assert.ErrorContains(t, err, "SCRAM-SHA-1")
}

// TestWriteSecurity: the files a secured lab writes are what kplan's own
// --command-config parser accepts and turns into TLS and SASL options, the
// secrets are 0600, and lab.json holds no password.
func TestWriteSecurity(t *testing.T) {
	for _, mode := range []string{SecuritySASLSSL, SecuritySSL, SecuritySASLPlaintext} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Brokers: 3, Dir: dir, BasePort: 19092, Security: mode, Loopback: true}
			s := &State{Dir: dir, ClusterID: "id", Nodes: plan(cfg)}
			sec, err := newSecrets()
			require.NoError(t, err)
			require.NoError(t, s.writeSecurity(mode, sec, time.Now()))
			require.NotNil(t, s.Security)
			assert.Equal(t, ClientConfigPath(dir), s.ClientConfig())

			for _, f := range []string{s.Security.ClientConfig, keystorePath(dir, "node-1")} {
				fi, err := os.Stat(f)
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
			}
			p, err := kafka.LoadClientProperties(s.Security.ClientConfig)
			require.NoError(t, err)
			assert.Equal(t, strings.ToUpper(mode), p.SecurityProtocol)
			assert.Equal(t, "127.0.0.2:19092,127.0.0.3:19102,127.0.0.4:19112", p.BootstrapServers)
			_, err = p.Opts()
			require.NoError(t, err, "kplan's client accepts the file")
			switch mode {
			case SecuritySSL:
				assert.NotEmpty(t, p.CertPEM, "the client certificate")
				assert.Empty(t, p.Username)
				assert.Empty(t, s.Security.ClientConfig256)
			case SecuritySASLSSL, SecuritySASLPlaintext:
				assert.Equal(t, "SCRAM-SHA-512", p.SASLMechanism)
				assert.Equal(t, ClientUser, p.Username)
				assert.Equal(t, sec.client, p.Password)
				p256, err := kafka.LoadClientProperties(s.Security.ClientConfig256)
				require.NoError(t, err)
				assert.Equal(t, "SCRAM-SHA-256", p256.SASLMechanism)
				assert.Equal(t, ClientUser256, p256.Username)
				assert.Equal(t, sec.client256, p256.Password)
			}
			if mode == SecuritySASLPlaintext {
				assert.Nil(t, p.TrustPEM, "no TLS to clients")
			} else {
				assert.NotEmpty(t, p.TrustPEM)
			}

			require.NoError(t, s.save())
			b, err := os.ReadFile(filepath.Join(dir, "lab.json"))
			require.NoError(t, err)
			for _, pw := range []string{sec.broker, sec.client, sec.client256} {
				assert.NotContains(t, string(b), pw, "lab.json is readable by all")
			}
			back, err := Load(dir)
			require.NoError(t, err)
			assert.Equal(t, s.Security, back.Security)
		})
	}
}

func TestSecurityValidate(t *testing.T) {
	ok := Config{Brokers: 3, Dir: "/lab", BasePort: 19092}
	for _, m := range []string{"", "plaintext", "SASL_SSL", "ssl", "sasl_plaintext"} {
		c := ok
		c.Security = m
		assert.NoError(t, c.Validate(), m)
	}
	c := ok
	c.Security = "kerberos"
	err := c.Validate()
	assert.ErrorContains(t, err, `unknown mode "kerberos"`)
	assert.Equal(t, FieldSecurity, errkind.FieldOf(err))
}

func TestSecured(t *testing.T) {
	for m, want := range map[string]bool{"": false, "plaintext": false, "PLAINTEXT": false, "SASL_SSL": true, "ssl": true, "sasl_plaintext": true, "bogus": false} {
		assert.Equal(t, want, Secured(m), m)
	}
}
