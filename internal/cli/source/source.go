// Package source holds the input flags shared by the verbs that read a
// cluster layout: --from FILE|-, --bootstrap-server, --command-config and
// --topics.
package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Options are the input flags.
type Options struct {
	From             string
	BootstrapServers string
	CommandConfig    string
	Topics           string
	Timeout          time.Duration
}

// AddFlags registers the input flags on cmd.
func AddFlags(cmd *cobra.Command, o *Options) {
	fs := cmd.Flags()
	fs.StringVar(&o.From, "from", "", "layout file: Kafka's reassignment JSON or kafka-topics --describe output (- for stdin)")
	fs.StringVar(&o.BootstrapServers, "bootstrap-server", "", "read a live cluster: host:port[,host:port...]")
	fs.StringVar(&o.CommandConfig, "command-config", "", "Kafka client properties file (bootstrap.servers, security.protocol, sasl.*, ssl.* as PEM)")
	fs.StringVar(&o.Topics, "topics", "", "only topics matching this regular expression")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "give up on a live cluster after this long")
}

// Validate checks that exactly one source is given.
func (o *Options) Validate() error {
	live := o.BootstrapServers != "" || o.CommandConfig != ""
	switch {
	case o.From != "" && live:
		return cmdutil.UsageErrorf("--from and --bootstrap-server/--command-config: give one source, not both")
	case o.From == "" && !live:
		return cmdutil.UsageErrorf("no layout: give --from FILE or --bootstrap-server HOST:PORT")
	}
	if _, err := regexp.Compile(o.Topics); err != nil {
		return cmdutil.UsageErrorf("--topics: %w", err)
	}
	if o.Timeout <= 0 {
		return cmdutil.UsageErrorf("--timeout: want a positive duration, got %s", o.Timeout)
	}
	return nil
}

// Load reads the layout. File faults exit 2 naming file:line; an
// unreachable cluster exits 1.
func (o *Options) Load(ctx context.Context, f *cmdutil.Factory) (*topology.Cluster, error) {
	re := regexp.MustCompile(o.Topics)
	filter := func(t string) bool { return re.MatchString(t) }
	if o.From == "" {
		adm := kafka.NewAdmin(kafka.ConnOptions{BootstrapServers: o.BootstrapServers, CommandConfig: o.CommandConfig, Timeout: o.Timeout}, f.Version)
		defer adm.Close()
		if _, err := adm.Client(); err != nil {
			// A bad --command-config or --bootstrap-server: the user's input.
			return nil, cmdutil.Usage(err)
		}
		c, err := adm.Snapshot(ctx, filter)
		if err != nil {
			if errors.Is(err, kafka.ErrUnreachable) || errors.Is(err, kafka.ErrAuth) {
				return nil, err // already one line saying which
			}
			return nil, fmt.Errorf("reading the cluster at %s: %w", o.BootstrapServers, err)
		}
		return c, nil
	}
	r := f.IOStreams.In
	name := "stdin"
	if o.From != "-" {
		file, err := os.Open(o.From)
		if err != nil {
			return nil, cmdutil.UsageErrorf("--from: %w", err)
		}
		defer file.Close() //nolint:errcheck // read-only
		r, name = file, o.From
	}
	c, err := topology.Load(r, name)
	if err != nil {
		return nil, err // a *topology.LoadError is a usage error by its type
	}
	if o.Topics != "" {
		kept := c.Partitions[:0]
		for _, p := range c.Partitions {
			if filter(p.Topic) {
				kept = append(kept, p)
			}
		}
		c.Partitions = kept
	}
	return c, nil
}
