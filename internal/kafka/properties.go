package kafka

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Properties are the Kafka client settings kplan understands from a
// --command-config file, the same file kafka-topics.sh and friends take.
type Properties struct {
	BootstrapServers string
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
	SASLMechanism    string // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER
	Username         string
	Password         string
	// TokenFile holds the OAUTHBEARER token (a JWT), read at each login:
	// sasl.oauthbearer.token.endpoint.url=file:///PATH, as Kafka's client
	// reads a pre-fetched token (KIP-768).
	TokenFile string
	// PEM material: files (ssl.*.location with type PEM) or inline values.
	TrustPEM []byte
	CertPEM  []byte
	KeyPEM   []byte
	// TrustFrom names where TrustPEM came from, for messages: the
	// truststore file, the inline setting, or "" (the system's CAs).
	TrustFrom string
	// NoHostnameCheck is ssl.endpoint.identification.algorithm set empty:
	// the chain is still verified, the broker's name is not (as in Kafka).
	NoHostnameCheck bool
}

var jaasField = regexp.MustCompile(`(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// ParseProperties parses Kafka client properties. name labels errors as
// name:line: key. Keys kplan does not use (they tune the Java client) are
// accepted and ignored, so operators can reuse the file they already have.
//
// Values may hold Kafka's config provider references, resolved before use
// so that secrets stay out of the file and of argv: ${env:VAR} (the
// environment variable), ${file:PATH:key} (key in the properties file PATH,
// as FileConfigProvider) and ${dir:PATH:name} (the content of the file name
// in the directory PATH, as DirectoryConfigProvider). Kafka resolves them
// only when config.providers names them with their classes; kplan resolves
// env, file and dir without those lines too, and when config.providers is
// set, the providers it lists under their own names (the class says which
// kind each one is).
//
// Errors are of kind errkind.Usage.
func ParseProperties(data []byte, name string) (Properties, error) {
	p, err := parseProperties(data, name)
	if err != nil {
		return p, errkind.Wrap(errkind.Usage, "", err)
	}
	return p, nil
}

func parseProperties(data []byte, name string) (Properties, error) {
	vals, lines, last, err := readProperties(data, name)
	if err != nil {
		return Properties{}, err
	}
	ln := last
	where := func(k string) string { return fmt.Sprintf("%s:%d: %s", name, lines[k], k) }
	if err := resolveProviders(vals, where); err != nil {
		return Properties{}, err
	}
	p := Properties{BootstrapServers: vals["bootstrap.servers"], SecurityProtocol: strings.ToUpper(vals["security.protocol"])}
	switch p.SecurityProtocol {
	case "":
		p.SecurityProtocol = "PLAINTEXT"
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return p, fmt.Errorf("%s: unknown protocol %q (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", where("security.protocol"), vals["security.protocol"])
	}
	if strings.HasPrefix(p.SecurityProtocol, "SASL") {
		p.SASLMechanism = strings.ToUpper(vals["sasl.mechanism"])
		if p.SASLMechanism == "" {
			p.SASLMechanism = "GSSAPI" // Kafka's default, which kplan cannot do
		}
		switch p.SASLMechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER":
		default:
			return p, fmt.Errorf("%s: mechanism %q is not supported (want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)", where("sasl.mechanism"), p.SASLMechanism)
		}
		jaas, ok := vals["sasl.jaas.config"]
		if !ok {
			return p, fmt.Errorf("%s:%d: sasl.jaas.config is required for %s", name, ln, p.SecurityProtocol)
		}
		if p.SASLMechanism == "OAUTHBEARER" {
			const key = "sasl.oauthbearer.token.endpoint.url"
			u, err := url.Parse(vals[key])
			if vals[key] == "" || err != nil || u.Scheme != "file" || u.Path == "" {
				return p, fmt.Errorf("%s:%d: %s: kplan reads OAUTHBEARER tokens from a file only: set %s=file:///PATH/TO/TOKEN", name, max(lines[key], lines["sasl.mechanism"]), key, key)
			}
			p.TokenFile = u.Path
			return p, p.tls(vals, where)
		}
		for _, m := range jaasField.FindAllStringSubmatch(jaas, -1) {
			v := strings.ReplaceAll(strings.ReplaceAll(m[2], `\"`, `"`), `\\`, `\`)
			if m[1] == "username" {
				p.Username = v
			} else {
				p.Password = v
			}
		}
		if p.Username == "" {
			return p, fmt.Errorf("%s: no username=\"...\" found", where("sasl.jaas.config"))
		}
	}
	return p, p.tls(vals, where)
}

// tls reads the ssl.* settings of an SSL or SASL_SSL connection.
func (p *Properties) tls(vals map[string]string, where func(string) string) error {
	if strings.HasSuffix(p.SecurityProtocol, "SSL") {
		var err error
		if p.TrustPEM, err = pemSetting(vals, "ssl.truststore", "ssl.truststore.certificates", where); err != nil {
			return err
		}
		switch {
		case vals["ssl.truststore.certificates"] != "":
			p.TrustFrom = "ssl.truststore.certificates"
		case p.TrustPEM != nil:
			p.TrustFrom = "ssl.truststore.location=" + vals["ssl.truststore.location"]
		}
		if p.CertPEM, err = pemSetting(vals, "ssl.keystore", "ssl.keystore.certificate.chain", where); err != nil {
			return err
		}
		if k := vals["ssl.keystore.key"]; k != "" {
			p.KeyPEM = []byte(k)
		} else if p.CertPEM != nil && vals["ssl.keystore.location"] != "" {
			p.KeyPEM = p.CertPEM // a PEM keystore file holds the key and the chain
		}
		_, set := vals["ssl.endpoint.identification.algorithm"]
		p.NoHostnameCheck = set && vals["ssl.endpoint.identification.algorithm"] == ""
	}
	return nil
}

// pemSetting reads PEM from an inline key or from prefix.location when
// prefix.type is PEM; JKS and PKCS12 stores are refused with the reason.
func pemSetting(vals map[string]string, prefix, inline string, where func(string) string) ([]byte, error) {
	if v := vals[inline]; v != "" {
		return []byte(v), nil
	}
	loc := vals[prefix+".location"]
	if loc == "" {
		return nil, nil
	}
	if t := strings.ToUpper(vals[prefix+".type"]); t != "PEM" {
		if t == "" {
			t = "JKS"
		}
		return nil, fmt.Errorf("%s: %s stores are not readable by kplan; convert to PEM and set %s.type=PEM", where(prefix+".location"), t, prefix)
	}
	b, err := os.ReadFile(loc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where(prefix+".location"), err)
	}
	return b, nil
}

// LoadClientProperties reads a --command-config file.
func LoadClientProperties(path string) (Properties, error) {
	countConfigRead(path)
	b, err := os.ReadFile(path)
	if err != nil {
		return Properties{}, errkind.Wrap(errkind.Usage, "", fmt.Errorf("--command-config: %w", err))
	}
	return ParseProperties(b, path)
}

// Opts turns the properties into franz-go options (TLS and SASL), dialing
// within 10 s.
func (p Properties) Opts() ([]kgo.Opt, error) { return p.opts(0) }

// opts turns the properties into franz-go options (TLS and SASL), dialing
// within timeout (0: 10 s). Connection failures come back typed (see
// ConnError) through the dialer's *HandshakeError and *TLSReplyError.
func (p Properties) opts(timeout time.Duration) ([]kgo.Opt, error) {
	cfg, err := p.TLSConfig()
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	opts := []kgo.Opt{kgo.Dialer(dialer{timeout: timeout, tls: cfg}.dial)}
	if m := p.saslMechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// TLSConfig is the TLS configuration of the properties, nil without TLS.
func (p Properties) TLSConfig() (*tls.Config, error) {
	if strings.HasSuffix(p.SecurityProtocol, "SSL") {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if p.TrustPEM != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(p.TrustPEM) {
				return nil, errkind.Usagef("", "--command-config: truststore holds no PEM certificate")
			}
			cfg.RootCAs = pool
		}
		if p.NoHostnameCheck {
			// Verify the chain ourselves, without the name, as Kafka's
			// client does when the algorithm is set empty.
			cfg.InsecureSkipVerify = true
			roots := cfg.RootCAs
			cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
				certs := make([]*x509.Certificate, len(raw))
				for i, r := range raw {
					c, err := x509.ParseCertificate(r)
					if err != nil {
						return err
					}
					certs[i] = c
				}
				if len(certs) == 0 {
					return fmt.Errorf("broker sent no certificate")
				}
				inter := x509.NewCertPool()
				for _, c := range certs[1:] {
					inter.AddCert(c)
				}
				_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
				return err
			}
		}
		if p.CertPEM != nil {
			cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
			if err != nil {
				return nil, errkind.Usagef("", "--command-config: keystore: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		return cfg, nil
	}
	return nil, nil
}

// saslMechanism is the SASL mechanism of the properties, nil without SASL.
func (p Properties) saslMechanism() sasl.Mechanism {
	switch p.SASLMechanism {
	case "PLAIN":
		return typedMechanism{plain.Auth{User: p.Username, Pass: p.Password}.AsMechanism()}
	case "SCRAM-SHA-256":
		return typedMechanism{scram.Auth{User: p.Username, Pass: p.Password}.AsSha256Mechanism()}
	case "SCRAM-SHA-512":
		return typedMechanism{scram.Auth{User: p.Username, Pass: p.Password}.AsSha512Mechanism()}
	case "OAUTHBEARER":
		file := p.TokenFile
		return typedMechanism{oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return oauth.Auth{}, fmt.Errorf("reading the token: %w", err)
			}
			return oauth.Auth{Token: strings.TrimSpace(string(b))}, nil
		})}
	}
	return nil
}

// saslError is a failure of the SASL exchange on the client's side: the
// mechanism could not start, or refused the server's answer (SCRAM reports
// a wrong password as the server's "e=" message, a forged server as a
// signature mismatch). franz-go's mechanisms return these as plain errors;
// typedMechanism wraps them so that classify tells them by type.
type saslError struct {
	mechanism string
	err       error
}

func (e *saslError) Error() string { return "SASL " + e.mechanism + ": " + e.err.Error() }

func (e *saslError) Unwrap() error { return e.err }

// typedMechanism is a SASL mechanism whose failures are *saslError.
type typedMechanism struct{ sasl.Mechanism }

// Authenticate starts the exchange.
func (m typedMechanism) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	s, first, err := m.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, &saslError{mechanism: m.Name(), err: err}
	}
	return typedSession{Session: s, mechanism: m.Name()}, first, nil
}

// typedSession is a SASL session whose failures are *saslError.
type typedSession struct {
	sasl.Session
	mechanism string
}

// Challenge answers the server's challenge.
func (s typedSession) Challenge(c []byte) (bool, []byte, error) {
	done, resp, err := s.Session.Challenge(c)
	if err != nil {
		return done, resp, &saslError{mechanism: s.mechanism, err: err}
	}
	return done, resp, nil
}

// readProperties reads Java properties lines (key=value or key:value, #
// and ! comments, \ continuations) into values and the line of each key;
// last is the number of lines read.
func readProperties(data []byte, name string) (vals map[string]string, lines map[string]int, last int, err error) {
	vals, lines = map[string]string{}, map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	ln := 0
	var cont string
	contLine := 0
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if cont != "" {
			line = cont + line
		} else {
			contLine = ln
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			cont = strings.TrimSuffix(line, `\`)
			continue
		}
		cont = ""
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, nil, ln, fmt.Errorf("%s:%d: want key=value", name, contLine)
		}
		k, v := strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		vals[k], lines[k] = v, contLine
	}
	if err := sc.Err(); err != nil {
		return nil, nil, ln, fmt.Errorf("%s: %w", name, err)
	}
	return vals, lines, ln, nil
}

// Kafka's config provider classes, by the kind of reference each resolves.
const (
	envProviderClass  = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
	fileProviderClass = "org.apache.kafka.common.config.provider.FileConfigProvider"
	dirProviderClass  = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
)

// providerRef is one ${provider:[path:]key} reference, as Kafka's
// ConfigTransformer finds them.
var providerRef = regexp.MustCompile(`\$\{([^}:]*?):(?:([^}]*?):)?([^}]*?)\}`)

// resolveProviders replaces every provider reference in vals by its value.
// Errors name the file:line, the key and the reference (the variable, file
// and key looked up), never a resolved value.
func resolveProviders(vals map[string]string, where func(string) string) error {
	kinds := map[string]string{"env": "env", "file": "file", "dir": "dir"}
	if list, ok := vals["config.providers"]; ok {
		kinds = map[string]string{}
		for pname := range strings.SplitSeq(list, ",") {
			if pname = strings.TrimSpace(pname); pname == "" {
				continue
			}
			classKey := "config.providers." + pname + ".class"
			switch class := vals[classKey]; class {
			case envProviderClass:
				kinds[pname] = "env"
			case fileProviderClass:
				kinds[pname] = "file"
			case dirProviderClass:
				kinds[pname] = "dir"
			case "":
				return fmt.Errorf("%s: provider %q has no %s", where("config.providers"), pname, classKey)
			default:
				return fmt.Errorf("%s: class %q is not one kplan can run (want %s, %s or %s)",
					where(classKey), class, envProviderClass, fileProviderClass, dirProviderClass)
			}
		}
	}
	files := map[string]map[string]string{} // properties files read once
	for k, v := range vals {
		if strings.HasPrefix(k, "config.providers") || !strings.Contains(v, "${") {
			continue
		}
		var firstErr error
		out := providerRef.ReplaceAllStringFunc(v, func(ref string) string {
			if firstErr != nil {
				return ""
			}
			m := providerRef.FindStringSubmatch(ref)
			got, err := resolveRef(kinds, files, m[1], m[2], m[3])
			if err != nil {
				firstErr = fmt.Errorf("%s: %s: %w", where(k), ref, err)
			}
			return got
		})
		if firstErr != nil {
			return firstErr
		}
		vals[k] = out
	}
	return nil
}

// resolveRef resolves one reference of provider pname.
func resolveRef(kinds map[string]string, files map[string]map[string]string, pname, path, key string) (string, error) {
	kind, ok := kinds[pname]
	if !ok {
		return "", fmt.Errorf("provider %q is not in config.providers", pname)
	}
	switch kind {
	case "env":
		v, ok := os.LookupEnv(key)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", key)
		}
		return v, nil
	case "dir":
		if path == "" {
			return "", errors.New("want ${" + pname + ":DIRECTORY:FILE}")
		}
		b, err := os.ReadFile(filepath.Join(path, key))
		if err != nil {
			return "", fmt.Errorf("reading a secret: %w", err)
		}
		return string(b), nil
	default: // file
		if path == "" {
			return "", errors.New("want ${" + pname + ":FILE:KEY}")
		}
		fv, ok := files[path]
		if !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return "", fmt.Errorf("reading a secret: %w", err)
			}
			if fv, _, _, err = readProperties(b, path); err != nil {
				return "", err
			}
			files[path] = fv
		}
		v, ok := fv[key]
		if !ok {
			return "", fmt.Errorf("no key %s in %s", key, path)
		}
		return v, nil
	}
}
