package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// testCA is a certificate authority made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"kplan test"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a leaf certificate for 127.0.0.1 and its key, as PEM.
func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"kplan test"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// serverTLS is a listener's TLS config with a certificate of ca; clients
// is the CA a client certificate must be signed by (nil: none asked).
func serverTLS(t *testing.T, ca, clients *testCA) *tls.Config {
	t.Helper()
	c, k := ca.issue(t, "kplan-test-broker", x509.ExtKeyUsageServerAuth)
	pair, err := tls.X509KeyPair(c, k)
	require.NoError(t, err)
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if clients != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clients.cert)
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg
}

// withChain makes a listener's certificate chain hold ca's certificate
// after the leaf, as Kafka sends its PEM keystore's chain.
func withChain(cfg *tls.Config, ca *testCA) *tls.Config {
	cfg.Certificates[0].Certificate = append(cfg.Certificates[0].Certificate, ca.cert.Raw)
	return cfg
}

// closingListener accepts connections, reads what the client sends and
// answers with reply (nil: nothing) before closing: a plaintext Kafka
// listener drops a TLS ClientHello (its size field is absurd), a TLS
// listener answers a plaintext request with an alert.
func closingListener(t *testing.T, reply []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close() //nolint:errcheck // the test listener drops the connection
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 5)
				if _, err := io.ReadFull(conn, buf); err != nil {
					return
				}
				if reply != nil {
					_, _ = conn.Write(reply)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestConnectionFailures: each way a secured connection goes wrong fails
// through NewAdmin and Snapshot (the path of audit --bootstrap-server) with
// one line that says what and where, a typed kind and reason, no password
// and no key, and returns on its own (before the caller's deadline).
func TestConnectionFailures(t *testing.T) {
	const password = "pa55-W0rd-never-shown"
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	ca, other, clients := newTestCA(t, "kplan test CA"), newTestCA(t, "some other CA"), newTestCA(t, "kplan client CA")
	caFile, otherFile := write("ca.pem", ca.pem), write("other.pem", other.pem)
	clientCert, clientKey := clients.issue(t, "kplan-client", x509.ExtKeyUsageClientAuth)
	strangerCert, strangerKey := other.issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	keystore := write("client.pem", append(append([]byte{}, clientKey...), clientCert...))
	stranger := write("stranger.pem", append(append([]byte{}, strangerKey...), strangerCert...))

	newCluster := func(opts ...kfake.Opt) *kfake.Cluster {
		c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "t")}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	cluster := func(opts ...kfake.Opt) string { return newCluster(opts...).ListenAddrs()[0] }
	scram := []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "admin", password)}
	saslTLS := cluster(append(scram, kfake.TLS(serverTLS(t, ca, nil)))...)
	// kfake closes the connection on a failed login; Kafka answers with
	// SASL_AUTHENTICATION_FAILED (KIP-152), as this one does.
	kafkaLike := newCluster(append(scram, kfake.TLS(serverTLS(t, ca, nil)))...)
	kafkaLike.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kafkaLike.KeepControl()
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.SetVersion(req.GetVersion())
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	saslKafka := kafkaLike.ListenAddrs()[0]
	mtls := cluster(kfake.TLS(serverTLS(t, ca, clients)))
	// TLS 1.2 refuses the missing certificate within the handshake, 1.3
	// after it, on the first read.
	tls12 := serverTLS(t, ca, clients)
	tls12.MaxVersion = tls.VersionTLS12
	mtls12 := cluster(kfake.TLS(tls12))
	tlsKfake := cluster(kfake.TLS(serverTLS(t, ca, nil)))
	chained := cluster(append(scram, kfake.TLS(withChain(serverTLS(t, ca, nil), ca)))...)
	plainPort := closingListener(t, nil)
	// What a JVM TLS listener answers to a plaintext request: a fatal
	// unexpected_message alert.
	tlsPort := closingListener(t, []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0a})

	jaas := func(pass string) string {
		return "sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"" + pass + "\";\n"
	}
	tests := []struct {
		name, addr, props string
		reason            Reason
		kind              errkind.Kind
		want              []string
	}{
		{"wrong password", saslKafka, "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\n" + jaas("wrong-"+password),
			AuthFailed, errkind.Usage, []string{"authentication failed at " + saslKafka + ": the broker refused the SASL login", `(SCRAM-SHA-512, user "admin")`, "SASL_AUTHENTICATION_FAILED"}},
		{"wrong password, connection closed", saslTLS, "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\n" + jaas("wrong-"+password),
			Closed, errkind.Usage, []string{"authentication failed at " + saslTLS + ": the broker closed the connection: check security.protocol, sasl.mechanism and the credentials"}},
		{"untrusted certificate", saslTLS, "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + otherFile + "\n" + jaas(password),
			UntrustedCert, errkind.Usage, []string{"untrusted certificate at " + saslTLS + ": ", `subject "CN=kplan-test-broker,O=kplan test"`, `issuer "CN=kplan test CA,O=kplan test"`, "ssl.truststore.location=" + otherFile}},
		// Found on Kafka 4.3.1: x509 names the chain's last certificate, the
		// CA a broker sends after its own; the line names the broker's.
		{"untrusted certificate sent with its chain", chained, "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + otherFile + "\n" + jaas(password),
			UntrustedCert, errkind.Usage, []string{"untrusted certificate at " + chained + ": ", `subject "CN=kplan-test-broker,O=kplan test"`, `issuer "CN=kplan test CA,O=kplan test"`,
				"ssl.truststore.location=" + otherFile + ` (its chain ends at "CN=kplan test CA,O=kplan test", not in that file)`}},
		{"untrusted without a truststore", tlsKfake, "security.protocol=SSL\n",
			UntrustedCert, errkind.Usage, []string{"untrusted certificate at " + tlsKfake + ": ", `subject "CN=kplan-test-broker,O=kplan test"`, "the system's CAs"}},
		{"mTLS without a client certificate", mtls, "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\n",
			ClientCertRequired, errkind.Usage, []string{"TLS failure at " + mtls + ": the broker requires a client certificate (ssl.keystore.*)"}},
		{"mTLS without a client certificate, TLS 1.2", mtls12, "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\n",
			ClientCertRequired, errkind.Usage, []string{"TLS failure at " + mtls12 + ": the broker requires a client certificate (ssl.keystore.*)"}},
		{"mTLS with a client certificate it does not trust", mtls, "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\nssl.keystore.type=PEM\nssl.keystore.location=" + stranger + "\n",
			ClientCertRejected, errkind.Usage, []string{"TLS failure at " + mtls + ": the broker refused the client certificate of ssl.keystore.*"}},
		{"TLS to a plaintext port", plainPort, "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\n",
			NotTLSListener, errkind.Usage, []string{"TLS failure at " + plainPort + ": ", "not a TLS listener?"}},
		{"plaintext to a TLS port", tlsPort, "security.protocol=PLAINTEXT\n",
			TLSListener, errkind.Usage, []string{"TLS failure at " + tlsPort + ": the broker answered in TLS: is it a TLS listener? set security.protocol=SSL or SASL_SSL"}},
		{"SASL plaintext to a TLS port", tlsPort, "security.protocol=SASL_PLAINTEXT\n" + jaas(password),
			TLSListener, errkind.Usage, []string{"is it a TLS listener? set security.protocol"}},
		{"plaintext to a TLS kfake", tlsKfake, "",
			Closed, errkind.Usage, []string{"authentication failed at " + tlsKfake + ": ", "is it a TLS or SASL listener? set security.protocol"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := write(strings.ReplaceAll(tt.name, " ", "-")+".properties", []byte("bootstrap.servers="+tt.addr+"\n"+tt.props))
			a := NewAdmin(ConnOptions{CommandConfig: props, Timeout: 3 * time.Second}, "test")
			defer a.Close()
			// A generous deadline: the call must end on its own before it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := a.Snapshot(ctx, nil)
			require.Error(t, err)
			require.NoError(t, ctx.Err(), "the call returned only at the caller's deadline")
			msg := err.Error()
			t.Log(msg)
			assert.NotContains(t, msg, "\n", "one line")
			for _, w := range tt.want {
				assert.Contains(t, msg, w)
			}
			var ce *ConnError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.reason, ce.Reason)
			assert.Equal(t, tt.kind, errkind.KindOf(err))
			assert.ErrorIs(t, err, ErrAuth)
			assert.NotErrorIs(t, err, ErrUnreachable)
			assert.NotContains(t, msg, password)
			for _, key := range [][]byte{clientKey, strangerKey} {
				for l := range strings.SplitSeq(string(key), "\n") {
					if len(l) > 16 && !strings.HasPrefix(l, "-----") {
						assert.NotContains(t, msg, l, "key material")
					}
				}
			}
		})
	}

	// The fixtures accept the right settings.
	for name, props := range map[string]string{
		"sasl_ssl": "bootstrap.servers=" + saslTLS + "\nsecurity.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\n" + jaas(password),
		"mtls":     "bootstrap.servers=" + mtls + "\nsecurity.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\nssl.keystore.type=PEM\nssl.keystore.location=" + keystore + "\n",
	} {
		a := NewAdmin(ConnOptions{CommandConfig: write(name+".properties", []byte(props)), Timeout: 5 * time.Second}, "test")
		snap, err := a.Snapshot(context.Background(), nil)
		require.NoError(t, err, name)
		assert.Len(t, snap.Partitions, 1, name)
		a.Close()
	}
}
