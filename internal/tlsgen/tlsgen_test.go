package tlsgen

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIssueVerifiesAgainstCA(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ca, err := NewCA("kplan lab CA", now)
	require.NoError(t, err)
	ks, err := ca.Issue("broker-2", []string{"localhost", "127.0.0.1", "127.0.0.3"}, now)
	require.NoError(t, err)

	pair, err := tls.X509KeyPair(ks, ks) // a PEM keystore holds key and chain
	require.NoError(t, err)
	require.Len(t, pair.Certificate, 2, "leaf and CA")
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca.CertPEM()))

	tests := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1", true},
		{"127.0.0.3", true},
		{"localhost", true},
		{"127.0.0.4", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: tt.host, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
	assert.Equal(t, "broker-2", leaf.Subject.CommonName)
	assert.Contains(t, leaf.IPAddresses, net.ParseIP("127.0.0.3").To4())
}

func TestOtherCARefused(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("a", now)
	require.NoError(t, err)
	other, err := NewCA("b", now)
	require.NoError(t, err)
	ks, err := ca.Issue("x", []string{"127.0.0.1"}, now)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(ks, ks)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(other.CertPEM()))
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool})
	assert.Error(t, err)
}
