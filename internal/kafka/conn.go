package kafka

import (
	"crypto/tls"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// ConnOptions are the connection flags shared by every verb. Resolve reads
// the command config once; the copies it returns carry the parsed file, so
// that every client built from them (a run builds up to one per producer)
// reuses it instead of reading the file and its ${file:}/${env:} references
// again, as twmb/kcl parses its configuration once and builds clients from
// the result.
type ConnOptions struct {
	// BootstrapServers is a comma-separated host:port list; when empty, the
	// command config's bootstrap.servers is used.
	BootstrapServers string
	// CommandConfig is a Kafka client properties file (--command-config).
	CommandConfig string
	// Timeout bounds each request and the initial connection; 0 means 10s.
	Timeout time.Duration

	// conn is the command config as Resolve read it (nil: not resolved).
	conn *conn
}

// conn is a connection's security settings, resolved once from a command
// config: its properties (provider references resolved), the TLS
// configuration and the SASL mechanism. It is shared, read-only, by every
// copy of the ConnOptions that resolved it.
type conn struct {
	path  string // the command config it was read from ("": none)
	props Properties
	tls   *tls.Config
	sasl  sasl.Mechanism
}

// Resolve returns o with its command config read, its provider references
// resolved and its TLS and SASL settings built, once: clients built from
// the result (and from its copies, WithSeeds included) never read the file
// again. Resolving resolved options costs nothing. Errors are of kind
// errkind.Usage and name the file, the line and the key, as
// LoadClientProperties does.
func (o ConnOptions) Resolve() (ConnOptions, error) {
	if o.conn != nil && o.conn.path == o.CommandConfig {
		return o, nil
	}
	c := &conn{path: o.CommandConfig, props: Properties{SecurityProtocol: "PLAINTEXT"}}
	if o.CommandConfig != "" {
		var err error
		if c.props, err = LoadClientProperties(o.CommandConfig); err != nil {
			return o, err
		}
	}
	var err error
	if c.tls, err = c.props.TLSConfig(); err != nil {
		return o, err
	}
	c.sasl = c.props.saslMechanism()
	o.conn = c
	return o, nil
}

// Properties returns the client properties of resolved options (the
// PLAINTEXT defaults without a command config); ok is false when o was
// not resolved.
func (o ConnOptions) Properties() (p Properties, ok bool) {
	if o.conn == nil || o.conn.path != o.CommandConfig {
		return Properties{}, false
	}
	return o.conn.props, true
}

// securityOpts are the franz-go options of the resolved connection:
// its dialer (TLS within timeout) and its SASL mechanism.
func (c *conn) securityOpts(timeout time.Duration) []kgo.Opt {
	opts := []kgo.Opt{kgo.Dialer(dialer{timeout: timeout, tls: c.tls}.dial)}
	if c.sasl != nil {
		opts = append(opts, kgo.SASL(c.sasl))
	}
	return opts
}

// WithSeeds returns o with its bootstrap servers replaced by seeds: for
// clusters that know their own addresses (the chaos experiment's embedded
// cluster and lab), while the command config's security settings still
// apply.
func (o ConnOptions) WithSeeds(seeds []string) ConnOptions {
	o.BootstrapServers = strings.Join(seeds, ",")
	return o
}

// configReads counts the reads of each command config file, for tests
// that check a command reads its --command-config once.
var configReads = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// CommandConfigReads returns how many times this process read the command
// config file at path (LoadClientProperties, Resolve). Tests use it to
// check that a whole command reads its --command-config once.
func CommandConfigReads(path string) int {
	configReads.Lock()
	defer configReads.Unlock()
	return configReads.n[path]
}

func countConfigRead(path string) {
	configReads.Lock()
	configReads.n[path]++
	configReads.Unlock()
}
