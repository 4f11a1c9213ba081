package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kplan-dev/kplan/internal/clock"
	"github.com/kplan-dev/kplan/internal/topology"
)

// Admin is the lazily built admin client of one cluster: nothing connects
// until the first call. It is safe for concurrent use.
type Admin struct {
	opts    ConnOptions
	version string

	once  sync.Once
	cl    *kgo.Client
	props Properties
	err   error
}

// NewAdmin returns an Admin for opts; the client is built on first use.
func NewAdmin(opts ConnOptions, version string) *Admin {
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	return &Admin{opts: opts, version: version}
}

// Client returns the underlying franz-go client, building it on first use.
func (a *Admin) Client() (*kgo.Client, error) {
	a.once.Do(func() { a.cl, a.props, a.err = newClient(a.opts, a.version) })
	return a.cl, a.err
}

// Close releases the client, if one was built.
func (a *Admin) Close() {
	if cl, err := a.Client(); err == nil && cl != nil {
		cl.Close()
	}
}

// bounded returns ctx limited by the connection timeout.
func (a *Admin) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.opts.Timeout)
}

// Snapshot reads the live layout (see the package-level Snapshot) within
// the connection timeout. An unreachable cluster wraps ErrUnreachable, a
// refused login or TLS handshake wraps ErrAuth.
func (a *Admin) Snapshot(ctx context.Context, topicFilter func(string) bool) (*topology.Cluster, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	c, err := Snapshot(ctx, cl, topicFilter)
	if err != nil {
		return nil, a.classify(err)
	}
	return c, nil
}

// ClusterID reads the cluster id from metadata ("" when the cluster sends
// none).
func (a *Admin) ClusterID(ctx context.Context) (string, error) {
	cl, err := a.Client()
	if err != nil {
		return "", err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", a.classify(fmt.Errorf("metadata: %w", err))
	}
	return md.Cluster, nil
}

// ApplySizes sets SizeBytes of every partition of c found in sizes.
func ApplySizes(c *topology.Cluster, sizes map[topology.Key]int64) {
	for i := range c.Partitions {
		if s, ok := sizes[c.Partitions[i].Key()]; ok {
			c.Partitions[i].SizeBytes = s
		}
	}
}

// WaitBrokers polls until at least n brokers are registered and each answers
// on its own address, or ctx ends (the error then says how many answered).
func (a *Admin) WaitBrokers(ctx context.Context, n int) error {
	cl, err := a.Client()
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	var last error
	err = clock.Poll(ctx, nil, 200*time.Millisecond, 0, func(ctx context.Context) (bool, error) {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		bs, err := adm.ListBrokers(attempt)
		if err != nil {
			last = a.classify(err)
			return false, nil
		}
		ids := bs.NodeIDs()
		answered := 0
		for _, id := range ids {
			if _, rerr := cl.Broker(int(id)).RetriableRequest(attempt, kmsgApiVersions()); rerr == nil {
				answered++
			}
		}
		last = fmt.Errorf("%d of %d brokers answer (registered: %v)", answered, n, ids)
		return answered >= n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d brokers: %w", n, last)
	}
	return nil
}

// classify turns a connection failure into a *ConnError (by the types in
// err's chain, never its text); other errors are returned as they are.
func (a *Admin) classify(err error) error {
	if err == nil {
		return nil
	}
	var ce *ConnError
	if errors.As(err, &ce) {
		return err
	}
	if c := classifyConn(err, a.props); c != nil {
		c.Addr, c.Timeout = a.seeds(), a.opts.Timeout
		return c
	}
	return err
}

func (a *Admin) seeds() string {
	if a.opts.BootstrapServers != "" {
		return a.opts.BootstrapServers
	}
	if a.props.BootstrapServers != "" {
		return a.props.BootstrapServers
	}
	return "bootstrap.servers of " + a.opts.CommandConfig
}

func accept(filter func(string) bool, topic string) bool {
	if filter == nil {
		return !strings.HasPrefix(topic, "__")
	}
	return filter(topic)
}

// Bounded returns ctx limited by the connection timeout: for callers that
// send their own requests through Client.
func (a *Admin) Bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return a.bounded(ctx)
}

// Classify turns a connection failure into a *ConnError naming this
// cluster's addresses and timeout (by the types in err's chain, never its
// text); other errors are returned as they are.
func (a *Admin) Classify(err error) error { return a.classify(err) }

// Timeout is the connection timeout each call is bounded by.
func (a *Admin) Timeout() time.Duration { return a.opts.Timeout }
