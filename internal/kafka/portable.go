package kafka

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"strings"
)

// Portable files: the client properties shipped to another machine (a
// distributed run's worker pods, through a Kubernetes Secret).

// PortableConfig is the properties file among Portable's files.
const PortableConfig = "client.properties"

// The PEM and token files Portable writes beside PortableConfig.
const (
	portableTrust = "truststore.pem"
	portableKey   = "keystore.pem"
	portableToken = "oauth-token"
)

// loginModules are the JAAS login modules of the SASL mechanisms kplan
// speaks, for a file Kafka's own clients read too.
var loginModules = map[string]string{
	"PLAIN":         "org.apache.kafka.common.security.plain.PlainLoginModule",
	"SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
	"SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
	"OAUTHBEARER":   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}

// Portable returns the connection settings of resolved options as files
// that work on another machine once placed in dir: PortableConfig, a
// properties file whose ssl.*.location and token URL point into dir, and
// the PEM material and OAUTHBEARER token it names (read now: a token file
// is shipped as it is at this moment). Provider references (${env:...},
// ${file:...}) are resolved, files are inlined: nothing refers to this
// machine. bootstrap.servers is left out (the worker takes
// --bootstrap-server). ok is false when o names no command config (the
// cluster needs none); o must be resolved.
func (o ConnOptions) Portable(dir string) (files map[string][]byte, ok bool, err error) {
	if o.CommandConfig == "" {
		return nil, false, nil
	}
	p, resolved := o.Properties()
	if !resolved {
		return nil, false, fmt.Errorf("portable client properties: %s is not resolved", o.CommandConfig)
	}
	files, err = p.portable(dir, os.ReadFile)
	return files, err == nil, err
}

// portable renders p's files for dir; readFile reads the token file.
func (p Properties) portable(dir string, readFile func(string) ([]byte, error)) (map[string][]byte, error) {
	files := map[string][]byte{}
	var b strings.Builder
	b.WriteString("# kplan's client properties for a worker (kplan chaos --workers-on kubernetes)\n")
	fmt.Fprintf(&b, "security.protocol=%s\n", p.SecurityProtocol)
	if p.SASLMechanism != "" {
		fmt.Fprintf(&b, "sasl.mechanism=%s\n", p.SASLMechanism)
		module := loginModules[p.SASLMechanism]
		if module == "" {
			return nil, fmt.Errorf("portable client properties: SASL mechanism %s", p.SASLMechanism)
		}
		if p.SASLMechanism == "OAUTHBEARER" {
			tok, err := readFile(p.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("portable client properties: the OAUTHBEARER token: %w", err)
			}
			files[portableToken] = tok
			fmt.Fprintf(&b, "sasl.jaas.config=%s required;\n", module)
			fmt.Fprintf(&b, "sasl.oauthbearer.token.endpoint.url=file://%s\n", path.Join(dir, portableToken))
		} else {
			user, err := jaasQuote("username", p.Username)
			if err != nil {
				return nil, err
			}
			pass, err := jaasQuote("password", p.Password)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "sasl.jaas.config=%s required username=%s password=%s;\n", module, user, pass)
		}
	}
	if strings.HasSuffix(p.SecurityProtocol, "SSL") {
		if p.TrustPEM != nil {
			files[portableTrust] = p.TrustPEM
			fmt.Fprintf(&b, "ssl.truststore.type=PEM\nssl.truststore.location=%s\n", path.Join(dir, portableTrust))
		}
		if p.CertPEM != nil {
			// One PEM file with the key and the chain, as kplan and Kafka
			// read a PEM keystore.
			ks := p.CertPEM
			if p.KeyPEM != nil && !bytes.Equal(p.KeyPEM, p.CertPEM) {
				ks = append(append(append([]byte{}, p.KeyPEM...), '\n'), p.CertPEM...)
			}
			files[portableKey] = ks
			fmt.Fprintf(&b, "ssl.keystore.type=PEM\nssl.keystore.location=%s\n", path.Join(dir, portableKey))
		}
		if p.NoHostnameCheck {
			b.WriteString("ssl.endpoint.identification.algorithm=\n")
		}
	}
	files[PortableConfig] = []byte(b.String())
	return files, nil
}

// jaasQuote quotes a JAAS option's value as the parser reads it back
// (backslash and double quote escaped). A value the properties format
// cannot hold on one line, or that the reader would take for a provider
// reference, is refused.
func jaasQuote(field, v string) (string, error) {
	if strings.ContainsAny(v, "\r\n") || strings.Contains(v, "${") {
		return "", fmt.Errorf("portable client properties: the SASL %s holds a line break or \"${\", which a properties file cannot carry as it is", field)
	}
	return `"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`, nil
}
