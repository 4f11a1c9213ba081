// Package source holds the input flags shared by the verbs that read a
// cluster layout: --from FILE|-, --topics, and the connection flags of
// package target (--bootstrap-server, --command-config, --timeout).
package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Options are the input flags.
type Options struct {
	From   string
	Topics string
	// Options are the connection flags, resolved once for every client
	// the verb builds.
	target.Options
}

// AddFlags registers the input flags on cmd.
func AddFlags(cmd *cobra.Command, o *Options) {
	fs := cmd.Flags()
	fs.StringVar(&o.From, "from", "", "layout file: Kafka's reassignment JSON or kafka-topics --describe output (- for stdin)")
	o.AddFlags(fs, target.Conn, target.Notes{Bootstrap: "read its live layout"})
	fs.StringVar(&o.Topics, "topics", "", "only topics matching this regular expression")
}

// Validate checks that exactly one source is given.
func (o *Options) Validate() error {
	live := o.Live()
	switch {
	case o.From != "" && live:
		return errkind.Usagef("", "--from and --bootstrap-server/--command-config: give one source, not both")
	case o.From == "" && !live:
		return errkind.Usagef("", "no layout: give --from FILE or --bootstrap-server HOST:PORT")
	}
	if _, err := regexp.Compile(o.Topics); err != nil {
		return errkind.Usagef("", "--topics: %w", err)
	}
	return o.Options.Validate()
}

// MinInsync reads the effective min.insync.replicas of topics (each
// topic's own, else the broker's default) from the cluster the flags name,
// over the connection Load used (--command-config is not read again).
func (o *Options) MinInsync(ctx context.Context, f *cmdutil.Factory, topics []string) (map[string]int, error) {
	conn, err := o.ConnOptions()
	if err != nil {
		return nil, err
	}
	adm := kafka.NewAdmin(conn, f.Version)
	defer adm.Close()
	return adm.MinInsync(ctx, topics)
}

// Load reads the layout. File faults exit 2 naming file:line; an
// unreachable cluster exits 1.
func (o *Options) Load(ctx context.Context, f *cmdutil.Factory) (*topology.Cluster, error) {
	re := regexp.MustCompile(o.Topics)
	filter := func(t string) bool { return re.MatchString(t) }
	if o.From == "" {
		conn, err := o.ConnOptions()
		if err != nil {
			return nil, err
		}
		adm := kafka.NewAdmin(conn, f.Version)
		defer adm.Close()
		if _, err := adm.Client(); err != nil {
			// A bad --command-config or --bootstrap-server: the user's input.
			return nil, errkind.Wrap(errkind.Usage, "", err)
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
			return nil, errkind.Usagef("", "--from: %w", err)
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
