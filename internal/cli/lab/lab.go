// Package lab implements `kplan lab`: a real Kafka KRaft cluster on this
// machine, for integration tests and for rehearsing reassignments and
// broker losses.
package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/units"
)

// mapErr gives localkafka's errors their exit codes.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, localkafka.ErrUsage) || errors.Is(err, localkafka.ErrNoLab) {
		return cmdutil.Usage(errors.New(strings.TrimPrefix(err.Error(), "usage: ")))
	}
	return err
}

// NewCmdLab returns `kplan lab` and its subcommands.
func NewCmdLab(f *cmdutil.Factory) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "lab <command>",
		Short: "Run a real Kafka KRaft cluster on this machine",
		Long: `Run a real Apache Kafka cluster (KRaft, Kafka's own jars from Maven Central)
on loopback: to test kplan against real brokers, and to rehearse a
reassignment or a broker loss before doing it in production.

The lab's state (pids, ports, directories, cluster id) lives in --dir, so
every subcommand works from any later process. Fetch the jars once with
` + "`make kafka`" + ` or point --kafka-jars at a directory of Kafka's jars.`,
		Example: `  $ kplan lab up --brokers 3
  $ kplan lab status
  $ kplan lab kill broker-3
  $ kplan lab restart broker-3
  $ kplan lab elect-preferred
  $ kplan lab down`,
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", localkafka.DefaultDir(), "lab directory (state, configs, logs, data); $KPLAN_LAB_DIR sets the default")
	cmd.AddCommand(newCmdUp(f, &dir), newCmdStatus(f, &dir), newCmdKill(f, &dir), newCmdRestart(f, &dir), newCmdElect(f, &dir), newCmdDown(f, &dir))
	return cmd
}

// UpOptions are the flags of `kplan lab up`.
type UpOptions struct {
	Config  localkafka.Config
	Timeout time.Duration
}

func newCmdUp(f *cmdutil.Factory, dir *string) *cobra.Command {
	var o UpOptions
	var jars, bandwidth string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a lab cluster and wait until every broker answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Config.Brokers < 1 || o.Config.Brokers > 64 {
				return cmdutil.UsageErrorf("--brokers %d: want 1 to 64", o.Config.Brokers)
			}
			j, err := localkafka.FindJars(jars)
			if err != nil {
				return mapErr(err)
			}
			o.Config.JarsDir, o.Config.Dir = j, *dir
			if bandwidth != "" {
				bps, err := units.ParseRate(bandwidth)
				if err != nil {
					return cmdutil.UsageErrorf("--broker-bandwidth: %w", err)
				}
				if err := localkafka.CheckNetPrivileges(); err != nil {
					return mapErr(err)
				}
				o.Config.BandwidthBps = bps
			}
			if cmd.Flags().Changed("broker-cpu") {
				if !(o.Config.CPUQuota > 0 && o.Config.CPUQuota <= 64) {
					return cmdutil.UsageErrorf("--broker-cpu %g: want a fraction of one CPU above 0 (e.g. 0.25), at most 64", o.Config.CPUQuota)
				}
				if err := localkafka.CheckCPUPrivileges(); err != nil {
					return mapErr(err)
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.Timeout)
			defer cancel()
			start := f.Now()
			s, err := localkafka.Up(ctx, o.Config, kafka.WaitBrokers)
			if err != nil {
				return mapErr(err)
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "lab up: %d brokers ready in %.1fs (dir %s)\n", len(s.Brokers()), f.Now().Sub(start).Seconds(), s.Dir)
			fmt.Fprintln(f.IOStreams.Out, strings.Join(s.Bootstrap(), ","))
			return nil
		},
	}
	cmd.Flags().IntVar(&o.Config.Brokers, "brokers", 3, "number of brokers (combined broker+controller up to 5; beyond that 3 dedicated controllers)")
	cmd.Flags().StringVar(&jars, "kafka-jars", "", "directory of Kafka's jars (default: $KPLAN_KAFKA_JARS, then ./.cache/kafka-*/libs)")
	cmd.Flags().IntVar(&o.Config.BasePort, "base-port", 19092, "client port of broker-1; broker-N listens on base+10*(N-1), its controller on the next port")
	cmd.Flags().BoolVar(&o.Config.FastFailover, "fast-failover", true, "broker.session.timeout.ms=3000 and heartbeat 500ms, so a killed broker is fenced in about 3s")
	cmd.Flags().StringVar(&bandwidth, "broker-bandwidth", "", "limit each broker's link to this rate (e.g. 5MB/s): every broker runs in its own network namespace with a tc tbf limit; needs root and iproute2")
	cmd.Flags().Float64Var(&o.Config.CPUQuota, "broker-cpu", 0, "cap each broker JVM at this fraction of one CPU (e.g. 0.25) through a cgroup CFS quota; needs root and a cgroup cpu controller")
	cmd.Flags().IntVar(&o.Config.HeapMB, "heap-mb", 384, "heap of each broker JVM in MiB")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 120*time.Second, "give up when brokers are not ready within this time")
	return cmd
}

func loadLab(dir string) (*localkafka.State, error) {
	s, err := localkafka.Load(dir)
	return s, mapErr(err)
}

func newCmdStatus(f *cmdutil.Factory, dir *string) *cobra.Command {
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show brokers alive or dead, leaders and replicas per broker, and unhealthy partitions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := out.Format()
			if err != nil {
				return err
			}
			s, err := loadLab(*dir)
			if err != nil {
				return err
			}
			st := Status{Dir: s.Dir, ClusterID: s.ClusterID, Bootstrap: strings.Join(s.Bootstrap(), ",")}
			var live []string
			for _, n := range s.Brokers() {
				alive := n.Alive()
				addr := net.JoinHostPort(n.Addr, strconv.Itoa(n.Port))
				st.Brokers = append(st.Brokers, BrokerStatus{ID: n.ID, Rack: n.Rack, Address: addr, PID: n.PID, Alive: alive})
				if alive {
					live = append(live, addr)
				}
			}
			if len(live) > 0 {
				ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
				defer cancel()
				cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: strings.Join(live, ","), Timeout: 5 * time.Second}, f.Version)
				if err != nil {
					return err
				}
				defer cl.Close()
				c, err := kafka.Snapshot(ctx, cl, nil)
				if err != nil {
					return fmt.Errorf("lab status: %w", err)
				}
				st.fill(c)
			}
			return report.Render(f.IOStreams.Out, format, st, st.doc)
		},
	}
	cmdutil.AddOutputFlag(cmd, &out)
	return cmd
}

// Status is the JSON of `kplan lab status`.
type Status struct {
	Dir             string         `json:"dir"`
	ClusterID       string         `json:"cluster_id"`
	Bootstrap       string         `json:"bootstrap_servers"`
	Brokers         []BrokerStatus `json:"brokers"`
	Topics          int            `json:"topics"`
	Partitions      int            `json:"partitions"`
	UnderReplicated []string       `json:"under_replicated"`
	Offline         []string       `json:"offline"`
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
	return report.Document{Title: fmt.Sprintf("kplan lab in %s (cluster %s, bootstrap %s)", st.Dir, st.ClusterID, st.Bootstrap), Sections: []report.Section{brokers}}
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func newCmdKill(f *cmdutil.Factory, dir *string) *cobra.Command {
	return &cobra.Command{
		Use:     "kill broker-N",
		Short:   "Kill a broker's JVM with SIGKILL",
		Example: "  $ kplan lab kill broker-3",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			s, n, err := labBroker(*dir, args[0])
			if err != nil {
				return err
			}
			if err := s.Kill(n.ID); err != nil {
				return mapErr(err)
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "killed broker-%d (pid %d)\n", n.ID, n.PID)
			return nil
		},
	}
}

// labBroker loads the lab in dir and finds the broker an argument such as
// "broker-3" names.
func labBroker(dir, arg string) (*localkafka.State, *localkafka.Node, error) {
	id, err := localkafka.ParseBroker(arg)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	s, err := loadLab(dir)
	if err != nil {
		return nil, nil, err
	}
	n, err := s.Node(id)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	return s, n, nil
}

func newCmdRestart(f *cmdutil.Factory, dir *string) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:     "restart broker-N",
		Short:   "Start a killed broker again and wait until it answers",
		Example: "  $ kplan lab restart broker-3",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, n, err := labBroker(*dir, args[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if err := s.Restart(ctx, n.ID, kafka.WaitBrokers); err != nil {
				return mapErr(err)
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "broker-%d is back (pid %d)\n", n.ID, n.PID)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 90*time.Second, "give up when the broker is not ready within this time")
	return cmd
}

func newCmdElect(f *cmdutil.Factory, dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "elect-preferred",
		Short: "Move every partition's leadership back to its preferred (first) replica",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := loadLab(*dir)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: strings.Join(s.Bootstrap(), ",")}, f.Version)
			if err != nil {
				return err
			}
			defer cl.Close()
			n, err := kafka.ElectPreferred(ctx, cl)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "preferred leaders elected for %d partitions\n", n)
			return nil
		},
	}
}

func newCmdDown(f *cmdutil.Factory, dir *string) *cobra.Command {
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every JVM of the lab (SIGTERM, then SIGKILL after --grace)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			s, err := loadLab(*dir)
			if err != nil {
				return err
			}
			start := f.Now()
			if err := s.Down(grace); err != nil {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "lab down in %.1fs (files kept in %s)\n", f.Now().Sub(start).Seconds(), s.Dir)
			return nil
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "time to wait for a clean shutdown before SIGKILL")
	return cmd
}
