package kafka

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// dialer connects to brokers for franz-go: TCP within timeout, then the
// TLS handshake when tls is set, so that a handshake failure comes back as
// a *HandshakeError (TLS to a port that does not speak it, an untrusted
// certificate, a refused client certificate) rather than as a bare network
// error that reads as "unreachable".
type dialer struct {
	timeout time.Duration
	tls     *tls.Config // nil: plaintext
}

// HandshakeError is a TLS handshake with a broker that failed.
type HandshakeError struct {
	Addr string
	Err  error
}

// Error says which broker refused the handshake.
func (e *HandshakeError) Error() string { return "TLS handshake with " + e.Addr + ": " + e.Err.Error() }

// Unwrap returns the handshake's error.
func (e *HandshakeError) Unwrap() error { return e.Err }

// TLSReplyError is a TLS record received on a plaintext connection: the
// broker's listener speaks TLS.
type TLSReplyError struct{ Addr string }

// Error says what was received.
func (e *TLSReplyError) Error() string {
	return "the broker at " + e.Addr + " answered with a TLS record on a plaintext connection"
}

func (d dialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	nd := net.Dialer{Timeout: d.timeout}
	conn, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	if d.tls == nil {
		return &plainConn{Conn: conn, addr: host}, nil
	}
	cfg := d.tls.Clone()
	if cfg.ServerName == "" {
		if h, _, err := net.SplitHostPort(host); err == nil {
			cfg.ServerName = h
		}
	}
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = conn.Close()
		return nil, &HandshakeError{Addr: host, Err: err}
	}
	return tc, nil
}

// plainConn is a plaintext connection that recognizes a TLS record at the
// start of the broker's first answer: a Kafka response starts with its
// size, and no size kplan accepts starts with a TLS record's type (alert
// 0x15 or handshake 0x16) and major version 3.
type plainConn struct {
	net.Conn
	addr string
	read bool
}

// Read reads, failing with *TLSReplyError when the first bytes are TLS.
func (c *plainConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.read && n > 0 {
		c.read = true
		if n >= 2 && (p[0] == 0x15 || p[0] == 0x16) && p[1] == 0x03 {
			return 0, &TLSReplyError{Addr: c.addr}
		}
	}
	return n, err
}
