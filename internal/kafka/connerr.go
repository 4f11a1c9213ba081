package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// ErrUnreachable and ErrAuth classify connection failures of Admin calls so
// callers can tell "no broker answered" from "a broker refused us": every
// *ConnError is one of them (errors.Is).
var (
	ErrUnreachable = errors.New("cluster unreachable")
	ErrAuth        = errors.New("authentication failed")
)

// Reason is why kplan could not talk to a cluster.
type Reason int

// The reasons of a ConnError.
const (
	// Unreachable: no broker answered within the timeout.
	Unreachable Reason = iota + 1
	// AuthFailed: the SASL exchange failed (wrong user or password, a
	// mechanism the listener does not enable).
	AuthFailed
	// NotAuthorized: logged in, but an ACL denies the request.
	NotAuthorized
	// UntrustedCert: the broker's certificate does not verify against the
	// configured CAs, or not for the broker's name.
	UntrustedCert
	// ClientCertRequired: the listener wants a client certificate (mTLS)
	// and none is configured.
	ClientCertRequired
	// ClientCertRejected: the listener refused the configured client
	// certificate.
	ClientCertRejected
	// HandshakeFailed: another TLS failure.
	HandshakeFailed
	// NotTLSListener: TLS to a port that does not speak TLS.
	NotTLSListener
	// TLSListener: plaintext to a port that speaks TLS.
	TLSListener
	// Closed: the broker closed the connection at once (a TLS or SASL
	// listener reached without them, or a refused login).
	Closed
)

// ConnError is a failure to reach or log in to a cluster: one line saying
// what went wrong and which setting to look at, never a secret. It is
// errkind.Runtime when the cluster did not answer or denied the request,
// errkind.Usage when the client properties do not match the listener.
type ConnError struct {
	Reason  Reason
	Addr    string        // the bootstrap servers
	Timeout time.Duration // the connection timeout (Unreachable)
	// Detail is the sentence after the address.
	Detail string
	Err    error
}

// Error is "what at ADDR: detail".
func (e *ConnError) Error() string {
	switch e.Reason {
	case Unreachable:
		return fmt.Sprintf("%s: no broker at %s answered within %s: %v", ErrUnreachable, e.Addr, e.Timeout, e.Err)
	case AuthFailed, Closed:
		return fmt.Sprintf("%s at %s: %s", ErrAuth, e.Addr, e.Detail)
	case NotAuthorized:
		return fmt.Sprintf("not authorized at %s: %s", e.Addr, e.Detail)
	case UntrustedCert:
		return fmt.Sprintf("untrusted certificate at %s: %s", e.Addr, e.Detail)
	default:
		return fmt.Sprintf("TLS failure at %s: %s", e.Addr, e.Detail)
	}
}

// Unwrap returns the underlying error.
func (e *ConnError) Unwrap() error { return e.Err }

// Is makes every ConnError ErrUnreachable or ErrAuth.
func (e *ConnError) Is(target error) bool {
	if e.Reason == Unreachable {
		return target == ErrUnreachable
	}
	return target == ErrAuth
}

// ErrorKind is Runtime for an unreachable cluster or a denied request,
// Usage for client properties that do not match the listener.
func (e *ConnError) ErrorKind() errkind.Kind {
	if e.Reason == Unreachable || e.Reason == NotAuthorized {
		return errkind.Runtime
	}
	return errkind.Usage
}

// ErrorField is the input to fix: the bootstrap servers when no broker
// answered, else the command config.
func (e *ConnError) ErrorField() string {
	if e.Reason == Unreachable {
		return "bootstrap-server"
	}
	return "command-config"
}

// TLS alerts (RFC 8446 6.2) a listener sends when it wants or refuses a
// client certificate.
const (
	alertHandshakeFailure    = 40
	alertBadCertificate      = 42
	alertUnknownCA           = 48
	alertCertificateRequired = 116
)

// remoteAlert returns the TLS alert the broker sent, found by type: Go
// reports it as a *net.OpError whose Err is crypto/tls's alert (a uint8).
func remoteAlert(err error) (uint8, bool) {
	var op *net.OpError
	for e := err; e != nil; {
		if !errors.As(e, &op) {
			return 0, false
		}
		v := reflect.ValueOf(op.Err)
		if op.Err != nil && v.Kind() == reflect.Uint8 && v.Type().PkgPath() == "crypto/tls" {
			return uint8(v.Uint()), true
		}
		e = op.Err
	}
	return 0, false
}

// classifyConn returns the ConnError err is (without Addr and Timeout),
// or nil when err is no connection failure. p are the client's properties.
func classifyConn(err error, p Properties) *ConnError {
	c := &ConnError{Err: err}
	tlsOn := p.SecurityProtocol == "SSL" || p.SecurityProtocol == "SASL_SSL"
	var (
		ke        *kerr.Error
		se        *saslError
		firstEOF  *kgo.ErrFirstReadEOF
		hs        *HandshakeError
		tlsReply  *TLSReplyError
		certErr   *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		recordErr tls.RecordHeaderError
		netErr    net.Error
	)
	switch {
	case errors.As(err, &ke) && isAuthCode(ke):
		c.Reason, c.Detail = AuthFailed, fmt.Sprintf("the broker refused the SASL login%s: %v", p.who(), err)
	case errors.As(err, &ke) && isACLCode(ke):
		c.Reason, c.Detail = NotAuthorized, fmt.Sprintf("an ACL denies%s the request: %v", p.who(), err)
	case errors.As(err, &se):
		c.Reason, c.Detail = AuthFailed, fmt.Sprintf("the SASL login failed%s: %v", p.who(), err)
	case errors.As(err, &unknownCA):
		// x509 names the last certificate of the chain it could build, which
		// is the broker's own only when the broker sends no chain: Kafka
		// sends its keystore's chain, so name the leaf and where it ended.
		leaf, ends := unknownCA.Cert, ""
		if errors.As(err, &certErr) && len(certErr.UnverifiedCertificates) > 0 {
			leaf = certErr.UnverifiedCertificates[0]
		}
		if unknownCA.Cert != nil && leaf != nil && !unknownCA.Cert.Equal(leaf) {
			ends = fmt.Sprintf(" (its chain ends at %q, not in that file)", unknownCA.Cert.Subject.String())
		}
		c.Reason, c.Detail = UntrustedCert, fmt.Sprintf("the broker's certificate (%s) is not signed by a CA in %s%s", describeCert(leaf), p.trust(), ends)
	case errors.As(err, &certErr) && !errors.As(err, &hostErr) && !errors.As(err, &invalid):
		var cert *x509.Certificate
		if len(certErr.UnverifiedCertificates) > 0 {
			cert = certErr.UnverifiedCertificates[0]
		}
		c.Reason, c.Detail = UntrustedCert, fmt.Sprintf("the broker's certificate (%s) does not verify against %s: %v", describeCert(cert), p.trust(), certErr.Err)
	case errors.As(err, &hostErr):
		c.Reason, c.Detail = UntrustedCert, fmt.Sprintf("the broker's certificate (%s) is not valid for host %s (ssl.endpoint.identification.algorithm= skips the name check)", describeCert(hostErr.Certificate), hostErr.Host)
	case errors.As(err, &invalid):
		c.Reason, c.Detail = UntrustedCert, fmt.Sprintf("the broker's certificate (%s) is invalid: %v", describeCert(invalid.Cert), invalid)
	case tlsOn && isRemoteClientCertAlert(err) && p.CertPEM == nil:
		c.Reason, c.Detail = ClientCertRequired, "the broker requires a client certificate (ssl.keystore.*)"
	case tlsOn && isRemoteClientCertAlert(err):
		c.Reason, c.Detail = ClientCertRejected, "the broker refused the client certificate of ssl.keystore.*: is it signed by a CA the broker trusts?"
	case errors.As(err, &hs) && (errors.As(err, &recordErr) || isClosed(err)):
		c.Reason, c.Detail = NotTLSListener, "the TLS handshake got no TLS answer: not a TLS listener? check the port and security.protocol"
	case errors.As(err, &hs):
		if a, ok := remoteAlert(err); ok {
			c.Reason, c.Detail = HandshakeFailed, fmt.Sprintf("the broker refused the TLS handshake (alert %d): check the ssl.* settings", a)
		} else {
			c.Reason, c.Detail = HandshakeFailed, fmt.Sprintf("the TLS handshake failed: %v", hs.Err)
		}
	case errors.As(err, &tlsReply):
		c.Reason, c.Detail = TLSListener, "the broker answered in TLS: is it a TLS listener? set security.protocol=SSL or SASL_SSL"
	case errors.As(err, &firstEOF) || isClosed(err):
		c.Reason = Closed
		switch {
		case !tlsOn && p.SASLMechanism == "":
			c.Detail = "the broker closed the connection: is it a TLS or SASL listener? set security.protocol (SSL, SASL_PLAINTEXT or SASL_SSL)"
		case p.SASLMechanism == "":
			c.Detail = "the broker closed the connection: does the listener want SASL? set security.protocol=SASL_SSL"
		default:
			c.Detail = "the broker closed the connection: check security.protocol, sasl.mechanism and the credentials"
		}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) || errors.Is(err, kgo.ErrClientClosed):
		c.Reason = Unreachable
	default:
		return nil
	}
	return c
}

// isRemoteClientCertAlert reports a TLS alert by which a listener says it
// wants or refuses the client's certificate.
func isRemoteClientCertAlert(err error) bool {
	a, ok := remoteAlert(err)
	return ok && (a == alertBadCertificate || a == alertCertificateRequired || a == alertUnknownCA || a == alertHandshakeFailure)
}

// isClosed reports a connection the broker closed or reset.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func isAuthCode(ke *kerr.Error) bool {
	switch ke {
	case kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState:
		return true
	}
	return false
}

func isACLCode(ke *kerr.Error) bool {
	switch ke {
	case kerr.ClusterAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed, kerr.DelegationTokenAuthorizationFailed:
		return true
	}
	return false
}

// who names the SASL mechanism and user, for messages (never the password).
func (p Properties) who() string {
	switch {
	case p.SASLMechanism == "":
		return ""
	case p.Username == "":
		return " (" + p.SASLMechanism + ")"
	}
	return fmt.Sprintf(" (%s, user %q)", p.SASLMechanism, p.Username)
}

// trust names the configured CAs.
func (p Properties) trust() string {
	if p.TrustFrom == "" {
		return "the system's CAs (no ssl.truststore.location)"
	}
	return p.TrustFrom
}

// describeCert names a certificate by its subject and issuer.
func describeCert(c *x509.Certificate) string {
	if c == nil {
		return "no certificate"
	}
	return fmt.Sprintf("subject %q, issuer %q", c.Subject.String(), c.Issuer.String())
}

// Ping asks the cluster for its brokers within the connection timeout: the
// first call of a verb that then works through its own clients, so that a
// cluster it cannot reach or log in to fails at once with the one line of
// a *ConnError.
func (a *Admin) Ping(ctx context.Context) error {
	cl, err := a.Client()
	if err != nil {
		return err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	if _, err := req.RequestWith(ctx, cl); err != nil {
		return a.classify(fmt.Errorf("metadata: %w", err))
	}
	return nil
}
