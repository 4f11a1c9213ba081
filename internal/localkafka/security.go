package localkafka

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/tlsgen"
)

// FieldSecurity is Config.Security's field (the CLI's --security).
const FieldSecurity = "security"

// The lab's security modes (Config.Security).
const (
	SecurityPlaintext     = "plaintext"
	SecuritySSL           = "ssl"
	SecuritySASLSSL       = "sasl_ssl"
	SecuritySASLPlaintext = "sasl_plaintext"
)

// SecurityModes lists the values Config.Security takes.
var SecurityModes = []string{SecurityPlaintext, SecuritySASLSSL, SecuritySSL, SecuritySASLPlaintext}

// The SCRAM users a secured lab creates at format time: the brokers' own
// (inter-broker traffic), kplan's SCRAM-SHA-512 user and a SCRAM-SHA-256
// one.
const (
	BrokerUser    = "broker"
	ClientUser    = "kplan"
	ClientUser256 = "kplan256"
)

// Security is what lab.json says of a secured lab: the client's protocol
// and the files to connect with. No secret is kept here (lab.json is
// readable by all); the passwords are in the 0600 client properties.
type Security struct {
	// Mode is Config.Security.
	Mode string `json:"mode"`
	// Protocol is the client listener's security.protocol (SASL_SSL, ...).
	Protocol string `json:"protocol"`
	// ClientConfig is the client.properties path (mode 0600): SCRAM-SHA-512
	// user kplan, or the client certificate under ssl.
	ClientConfig string `json:"client_config"`
	// ClientConfig256 is a client.properties for the SCRAM-SHA-256 user
	// (SASL modes only).
	ClientConfig256 string `json:"client_config_scram_sha_256,omitempty"`
	// CAFile is the CA certificate (PEM), the truststore of every member.
	CAFile string `json:"ca_file"`
}

// labSecrets are the passwords of a lab being made; they exist in memory
// until the files are written and storage formatted.
type labSecrets struct {
	broker, client, client256 string
	// scram are the users' SCRAM credentials as kafka-storage format
	// stores them: salted, so that no password is in its argv.
	scram []scramCredential
}

// scramIterations is the PBKDF2 iteration count of the lab's SCRAM
// credentials: Kafka's minimum (and default) for both mechanisms.
const scramIterations = 4096

// scramCredential is one user's SCRAM credential for --add-scram.
type scramCredential struct {
	mechanism, name string
	salt, salted    []byte
}

// arg is the credential as kafka-storage format's --add-scram value, which
// takes a salted password in place of the password (Kafka's ScramParser:
// salt and saltedpassword in standard base64).
func (c scramCredential) arg() string {
	return fmt.Sprintf(`%s=[name=%s,iterations=%d,salt="%s",saltedpassword="%s"]`, c.mechanism, c.name, scramIterations,
		base64.StdEncoding.EncodeToString(c.salt), base64.StdEncoding.EncodeToString(c.salted))
}

// saltedPassword is SCRAM's SaltedPassword (RFC 5802 section 3):
// Hi(password, salt, i), that is PBKDF2 with HMAC of the mechanism's hash
// and one block of output, as Kafka's ScramFormatter computes it.
func saltedPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	var h func() hash.Hash
	switch mechanism {
	case "SCRAM-SHA-512":
		h = sha512.New
	case "SCRAM-SHA-256":
		h = sha256.New
	default:
		return nil, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

func newPassword(r io.Reader) (string, error) {
	var b [18]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

func newSecrets() (*labSecrets, error) { return makeSecrets(rand.Reader) }

// makeSecrets draws the passwords and the SCRAM salts from r.
func makeSecrets(r io.Reader) (*labSecrets, error) {
	var s labSecrets
	for _, p := range []*string{&s.broker, &s.client, &s.client256} {
		var err error
		if *p, err = newPassword(r); err != nil {
			return nil, fmt.Errorf("generating a password: %w", err)
		}
	}
	for _, u := range []struct{ mechanism, name, password string }{
		{"SCRAM-SHA-512", BrokerUser, s.broker},
		{"SCRAM-SHA-512", ClientUser, s.client},
		{"SCRAM-SHA-256", ClientUser256, s.client256},
	} {
		c := scramCredential{mechanism: u.mechanism, name: u.name, salt: make([]byte, 32)}
		if _, err := io.ReadFull(r, c.salt); err != nil {
			return nil, fmt.Errorf("generating a SCRAM salt: %w", err)
		}
		var err error
		if c.salted, err = saltedPassword(u.mechanism, u.password, c.salt, scramIterations); err != nil {
			return nil, fmt.Errorf("salting the password of SCRAM user %s: %w", u.name, err)
		}
		s.scram = append(s.scram, c)
	}
	return &s, nil
}

// normalizeSecurity checks and lowercases a security mode; "" is plaintext.
func normalizeSecurity(mode string) (string, error) {
	m := strings.ToLower(strings.TrimSpace(mode))
	if m == "" {
		return SecurityPlaintext, nil
	}
	for _, v := range SecurityModes {
		if m == v {
			return m, nil
		}
	}
	return "", errkind.Usagef(FieldSecurity, "unknown mode %q (want %s)", mode, strings.Join(SecurityModes, ", "))
}

// secured reports whether a normalized mode needs TLS material and a
// client config.
func secured(mode string) bool { return mode != "" && mode != SecurityPlaintext }

// Secured reports whether Config.Security asks for a secured lab (any
// case; an unknown mode is not secured, and Validate refuses it).
func Secured(mode string) bool {
	m, err := normalizeSecurity(mode)
	return err == nil && secured(m)
}

func sasl(mode string) bool { return strings.HasPrefix(mode, "sasl_") }

func tlsDir(dir string) string { return filepath.Join(dir, "tls") }

func keystorePath(dir, name string) string { return filepath.Join(tlsDir(dir), name+".pem") }

// ClientConfigPath is where a secured lab in dir writes its client
// properties.
func ClientConfigPath(dir string) string { return filepath.Join(dir, "client.properties") }

// ClientConfig is the lab's client properties, "" for a plaintext lab.
func (s *State) ClientConfig() string {
	if s.Security == nil {
		return ""
	}
	return s.Security.ClientConfig
}

// listenerName is the client (and inter-broker) listener's name, which is
// its protocol: PLAINTEXT, SSL, SASL_SSL or SASL_PLAINTEXT.
func listenerName(mode string) string {
	if !secured(mode) {
		return "PLAINTEXT"
	}
	return strings.ToUpper(mode)
}

const scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule"

// securityLines are a node's server.properties lines for the mode. The
// controller listener is SSL with client certificates (mTLS) in every
// secured mode: SCRAM credentials live in the metadata log the controllers
// serve, so controllers cannot authenticate each other, nor brokers, by
// SCRAM (Kafka allows only PLAIN or GSSAPI there); certificates need no
// metadata.
func securityLines(mode string, dir string, n Node, sec *labSecrets) []string {
	if !secured(mode) {
		return nil
	}
	lines := []string{
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + keystorePath(dir, fmt.Sprintf("node-%d", n.ID)),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + filepath.Join(tlsDir(dir), "ca.pem"),
		"listener.name.controller.ssl.client.auth=required",
	}
	if mode == SecuritySSL {
		lines = append(lines, "ssl.client.auth=required")
	}
	if n.Broker && sasl(mode) {
		l := strings.ToLower(listenerName(mode))
		lines = append(lines,
			"sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256",
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
			fmt.Sprintf("listener.name.%s.scram-sha-512.sasl.jaas.config=%s required username=\"%s\" password=\"%s\";", l, scramModule, BrokerUser, sec.broker),
			fmt.Sprintf("listener.name.%s.scram-sha-256.sasl.jaas.config=%s required;", l, scramModule))
	}
	return lines
}

// scramArgs are kafka-storage format's --add-scram arguments: salted
// credentials, never a password, since a process's argv is visible to every
// user of the machine. The salted password still lets one log in as the
// user (it is credential-equivalent, RFC 5802 section 9), but it is in the
// format process's argv only for its few seconds, and no longer in the
// plain form a password manager or a shell history would reuse.
func scramArgs(mode string, sec *labSecrets) []string {
	if !sasl(mode) || sec == nil {
		return nil
	}
	var args []string
	for _, c := range sec.scram {
		args = append(args, "--add-scram", c.arg())
	}
	return args
}

// writeSecurity writes the CA, one keystore per node (and the client's
// under ssl) and the client properties, and records them in s.Security.
func (s *State) writeSecurity(mode string, sec *labSecrets, now time.Time) error {
	if !secured(mode) {
		return nil
	}
	if err := os.MkdirAll(tlsDir(s.Dir), 0o700); err != nil {
		return err
	}
	ca, err := tlsgen.NewCA("kplan lab CA "+s.ClusterID, now)
	if err != nil {
		return err
	}
	caFile := filepath.Join(tlsDir(s.Dir), "ca.pem")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o644); err != nil {
		return err
	}
	for _, n := range s.Nodes {
		hosts := []string{"localhost", "127.0.0.1", n.Addr, n.controllerAddr()}
		ks, err := ca.Issue(fmt.Sprintf("node-%d", n.ID), hosts, now)
		if err != nil {
			return err
		}
		if err := os.WriteFile(keystorePath(s.Dir, fmt.Sprintf("node-%d", n.ID)), ks, 0o600); err != nil {
			return err
		}
	}
	s.Security = &Security{Mode: mode, Protocol: listenerName(mode), ClientConfig: ClientConfigPath(s.Dir), CAFile: caFile}
	head := []string{
		"# written by kplan lab (" + mode + "); secret: keep it mode 0600",
		"bootstrap.servers=" + strings.Join(s.Bootstrap(), ","),
		"security.protocol=" + listenerName(mode),
	}
	trust := []string{"ssl.truststore.type=PEM", "ssl.truststore.location=" + caFile}
	jaas := func(mech, user, pass string) []string {
		return []string{"sasl.mechanism=" + mech,
			fmt.Sprintf("sasl.jaas.config=%s required username=\"%s\" password=\"%s\";", scramModule, user, pass)}
	}
	var main, c256 []string
	switch mode {
	case SecuritySSL:
		ks, err := ca.Issue(ClientUser, nil, now)
		if err != nil {
			return err
		}
		if err := os.WriteFile(keystorePath(s.Dir, "client"), ks, 0o600); err != nil {
			return err
		}
		main = append(append(head, trust...), "ssl.keystore.type=PEM", "ssl.keystore.location="+keystorePath(s.Dir, "client"))
	case SecuritySASLSSL:
		main = append(append(copyLines(head), jaas("SCRAM-SHA-512", ClientUser, sec.client)...), trust...)
		c256 = append(append(copyLines(head), jaas("SCRAM-SHA-256", ClientUser256, sec.client256)...), trust...)
	case SecuritySASLPlaintext:
		main = append(copyLines(head), jaas("SCRAM-SHA-512", ClientUser, sec.client)...)
		c256 = append(copyLines(head), jaas("SCRAM-SHA-256", ClientUser256, sec.client256)...)
	}
	if err := writeSecret(s.Security.ClientConfig, main); err != nil {
		return err
	}
	if c256 != nil {
		s.Security.ClientConfig256 = filepath.Join(s.Dir, "client-scram-sha-256.properties")
		if err := writeSecret(s.Security.ClientConfig256, c256); err != nil {
			return err
		}
	}
	return nil
}

// copyLines copies lines, so that two files built on one head do not share
// its backing array.
func copyLines(lines []string) []string { return append([]string(nil), lines...) }

// writeSecret writes lines to path with mode 0600 whatever the umask.
func writeSecret(path string, lines []string) error {
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// protocolMap is listener.security.protocol.map for the mode.
func protocolMap(mode string) string {
	if !secured(mode) {
		return "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	}
	return listenerName(mode) + ":" + listenerName(mode) + ",CONTROLLER:SSL"
}

// mode is the lab's security mode.
func (s *State) mode() string {
	if s.Security == nil {
		return SecurityPlaintext
	}
	return s.Security.Mode
}
