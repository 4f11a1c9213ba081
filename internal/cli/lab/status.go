package lab

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
)

// StatusSchema versions the JSON of `kplan lab status`.
const StatusSchema = "kplan.lab.status/v1"

// StatusOptions are the parsed flags of `kplan lab status`.
type StatusOptions struct {
	IO     *iostreams.IOStreams
	Dir    string
	Format report.Format
	// Timeout bounds reading the live brokers' metadata.
	Timeout time.Duration
	// Version is kplan's version, for the client id.
	Version string
	// Snapshot reads the layout from the live brokers' addresses (tests
	// replace it).
	Snapshot func(ctx context.Context, bootstrap []string) (*topology.Cluster, error)

	// conn is the lab's connection (its client properties when secured,
	// read once by chaos/lab.Conn), which runStatus resolves.
	conn kafka.ConnOptions
}

// NewCmdStatus returns `kplan lab status`. runF replaces the run function in
// tests.
func NewCmdStatus(f *cmdutil.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IOStreams, Version: f.Version}
	opts.Snapshot = opts.liveSnapshot
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show brokers alive or dead, leaders and replicas per broker, and unhealthy partitions",
		Long: `Show the lab's brokers (rack, address, pid, alive or dead), the leaders and
replicas each one holds, and the partitions that are under-replicated or
offline. Dead brokers are read from their pids; the partitions from the
live brokers' metadata (none when every broker is dead).`,
		Example: `  $ kplan lab status
  $ kplan lab kill broker-3 && kplan lab status
  $ kplan lab status -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Format, err = out.Format(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runStatus(cmd.Context(), opts)
		},
	}
	addDirFlag(cmd, &opts.Dir)
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 10*time.Second, "give up reading the live brokers after this long")
	cmdutil.AddOutputFlag(cmd, &out)
	return cmd
}

// liveSnapshot reads the layout through kplan's franz-go client.
func (o *StatusOptions) liveSnapshot(ctx context.Context, bootstrap []string) (*topology.Cluster, error) {
	cl, err := kafka.NewClient(o.conn.WithSeeds(bootstrap), o.Version)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return kafka.Snapshot(ctx, cl, nil)
}

func runStatus(ctx context.Context, opts *StatusOptions) error {
	s, err := localkafka.Load(opts.Dir)
	if err != nil {
		return err
	}
	st := newStatus(s)
	if opts.conn, err = chaoslab.Conn(s, kafka.ConnOptions{Timeout: opts.Timeout / 2}); err != nil {
		return err
	}
	var live []string
	for _, b := range st.Brokers {
		if b.Alive {
			live = append(live, b.Address)
		}
	}
	if len(live) > 0 {
		ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
		c, err := opts.Snapshot(ctx, live)
		if err != nil {
			return fmt.Errorf("lab status: %w", err)
		}
		st.fill(c)
	}
	return report.Render(opts.IO.Out, opts.Format, st, st.doc)
}

// Status is the JSON of `kplan lab status`.
type Status struct {
	Schema    string `json:"schema"`
	Dir       string `json:"dir"`
	ClusterID string `json:"cluster_id"`
	Bootstrap string `json:"bootstrap_servers"`
	// Security is the client listener's protocol of a secured lab, and
	// ClientConfig its client properties; both empty for a plaintext lab.
	Security        string         `json:"security,omitempty"`
	ClientConfig    string         `json:"client_config,omitempty"`
	Brokers         []BrokerStatus `json:"brokers"`
	Topics          int            `json:"topics"`
	Partitions      int            `json:"partitions"`
	UnderReplicated []string       `json:"under_replicated"`
	Offline         []string       `json:"offline"`
	// Net is the network conditions in force (`kplan lab net`); omitted
	// when there are none.
	Net *NetStatus `json:"net,omitempty"`
}

// NetStatus is the lab's network conditions in status.
type NetStatus struct {
	Mechanism  string            `json:"mechanism"`
	Chain      string            `json:"chain"`
	NetdAlive  bool              `json:"netd_alive"`
	Conditions map[string]string `json:"conditions"`
}

// BrokerStatus is one broker of the lab.
type BrokerStatus struct {
	ID       int32  `json:"id"`
	Rack     string `json:"rack"`
	Address  string `json:"address"`
	PID      int    `json:"pid"`
	Alive    bool   `json:"alive"`
	Leaders  int    `json:"leaders"`
	Replicas int    `json:"replicas"`
}

// newStatus is the lab's brokers as its state file and their pids tell.
func newStatus(s *localkafka.State) Status {
	st := Status{Schema: StatusSchema, Dir: s.Dir, ClusterID: s.ClusterID, Bootstrap: strings.Join(s.Bootstrap(), ","),
		Brokers: []BrokerStatus{}, UnderReplicated: []string{}, Offline: []string{}}
	if s.Security != nil {
		st.Security, st.ClientConfig = s.Security.Protocol, s.Security.ClientConfig
	}
	if nc := s.NetConditions(); nc != nil {
		st.Net = &NetStatus{Mechanism: nc.Mechanism, Chain: nc.Chain, NetdAlive: s.NetdAlive(), Conditions: map[string]string{}}
		for _, c := range nc.Conds {
			st.Net.Conditions[c.Path] = c.Condition.String()
		}
	}
	for _, n := range s.Brokers() {
		addr := net.JoinHostPort(n.Addr, strconv.Itoa(n.Port))
		st.Brokers = append(st.Brokers, BrokerStatus{ID: n.ID, Rack: n.Rack, Address: addr, PID: n.PID, Alive: n.Alive()})
	}
	return st
}

// fill adds what the live brokers' metadata tells: topics, leaders and
// replicas per broker, unhealthy partitions.
func (st *Status) fill(c *topology.Cluster) {
	st.UnderReplicated, st.Offline = []string{}, []string{}
	st.Topics = len(c.Topics())
	st.Partitions = len(c.Partitions)
	idx := map[int32]int{}
	for i, b := range st.Brokers {
		idx[b.ID] = i
	}
	for _, p := range c.Partitions {
		if i, ok := idx[p.Leader]; ok {
			st.Brokers[i].Leaders++
		}
		for _, r := range p.Replicas {
			if i, ok := idx[r]; ok {
				st.Brokers[i].Replicas++
			}
		}
		if p.Leader == topology.NoLeader || p.Leader < 0 {
			st.Offline = append(st.Offline, p.Key().String())
		} else if len(p.ISR) < len(p.Replicas) {
			st.UnderReplicated = append(st.UnderReplicated, p.Key().String())
		}
	}
}

func (st Status) doc() report.Document {
	brokers := report.Section{Header: []string{"BROKER", "RACK", "ADDRESS", "PID", "STATE", "LEADERS", "REPLICAS"}}
	for _, b := range st.Brokers {
		state := "alive"
		if !b.Alive {
			state = "DEAD"
		}
		brokers.Rows = append(brokers.Rows, []string{fmt.Sprintf("broker-%d", b.ID), b.Rack, b.Address, strconv.Itoa(b.PID), state, strconv.Itoa(b.Leaders), strconv.Itoa(b.Replicas)})
	}
	brokers.Notes = []string{
		fmt.Sprintf("%d topics, %d partitions; under-replicated: %s; offline: %s", st.Topics, st.Partitions, list(st.UnderReplicated), list(st.Offline)),
	}
	if st.Security != "" {
		brokers.Notes = append(brokers.Notes, fmt.Sprintf("security %s: --command-config %s", st.Security, st.ClientConfig))
	}
	if st.Net != nil {
		for _, p := range slices.Sorted(maps.Keys(st.Net.Conditions)) {
			brokers.Notes = append(brokers.Notes, fmt.Sprintf("network %s: %s (%s)", p, st.Net.Conditions[p], st.Net.Mechanism))
		}
	}
	return report.Document{Title: fmt.Sprintf("kplan lab in %s (cluster %s, bootstrap %s)", st.Dir, st.ClusterID, st.Bootstrap), Sections: []report.Section{brokers}}
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
