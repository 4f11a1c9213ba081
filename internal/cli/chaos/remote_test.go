package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/chaos/killers"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/kafka"
)

func TestRemoteOptions(t *testing.T) {
	o, err := parse(t, "--kill", "broker-3", "--bootstrap-server", "kafka-1:9092,kafka-2:9092", "--killer", "exec",
		"--kill-cmd", "ssh {host} sudo systemctl kill -s KILL kafka", "--restore-cmd", "ssh {host} sudo systemctl start kafka",
		"--kill-timeout", "30s", "--restore", "--yes", "--keep-topics")
	require.NoError(t, err)
	require.NotNil(t, o.Remote)
	assert.Equal(t, "remote", o.Cluster)
	assert.Equal(t, "kafka-1:9092,kafka-2:9092", o.Remote.Conn.BootstrapServers)
	assert.Equal(t, killers.Exec, o.Remote.Kind)
	assert.Equal(t, "ssh {host} sudo systemctl kill -s KILL kafka", o.Remote.Exec.KillCmd)
	assert.Equal(t, "ssh {host} sudo systemctl start kafka", o.Remote.Exec.RestoreCmd)
	assert.Equal(t, 30*time.Second, o.Remote.Exec.Timeout)
	assert.True(t, o.Remote.Yes)
	assert.True(t, o.Remote.KeepTopics)
	assert.False(t, o.Remote.DryRun)
	assert.True(t, o.Config.Restore)

	o, err = parse(t, "--kill", "broker-2", "--bootstrap-server", "localhost:19092", "--killer", "docker",
		"--container-template", "kafka-{id}", "--dry-run", "--replication-factor", "5")
	require.NoError(t, err, "the replication factor is checked against the cluster's brokers at run time")
	assert.Equal(t, killers.Docker, o.Remote.Kind)
	assert.Equal(t, "kafka-{id}", o.Remote.Docker.ContainerTemplate)
	assert.Equal(t, 60*time.Second, o.Remote.Docker.Timeout)
	assert.True(t, o.Remote.DryRun)
	assert.False(t, o.Remote.Yes)

	o, err = parse(t, "--kill", "broker-3", "--bootstrap-server", "my-cluster-kafka-bootstrap:9092", "--killer", "chaos-mesh",
		"--namespace", "kafka", "--pod-naming", "strimzi", "--strimzi-cluster", "my-cluster", "--kubeconfig", "/k", "--context", "prod")
	require.NoError(t, err)
	assert.Equal(t, killers.ChaosMesh, o.Remote.Kind)
	assert.Equal(t, "kafka", o.Remote.Mesh.Namespace)
	assert.Equal(t, "strimzi", o.Remote.Mesh.PodNaming)
	assert.Equal(t, "my-cluster", o.Remote.Mesh.StrimziCluster)
	assert.Equal(t, "pod-kill", o.Remote.Mesh.Action)
	assert.Equal(t, int32(100), o.Remote.Mesh.BitnamiMinID)
	assert.Equal(t, "/k", o.Remote.Mesh.Kubeconfig)
	assert.Equal(t, "prod", o.Remote.Mesh.Context)

	o, err = parse(t, "--kill", "none", "--bootstrap-server", "kafka-1:9092")
	require.NoError(t, err, "a steady-state run needs no killer")
	assert.Empty(t, o.Remote.Kind)

	o, err = parse(t, "--kill", "broker-3")
	require.NoError(t, err)
	assert.Nil(t, o.Remote, "no --bootstrap-server: the embedded cluster")
}

func TestRemoteBadInput(t *testing.T) {
	bs := []string{"--kill", "broker-3", "--bootstrap-server", "kafka-1:9092"}
	exec := append(append([]string{}, bs...), "--killer", "exec", "--kill-cmd", "kill {id}")
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"--kill", "broker-3", "--killer", "exec", "--kill-cmd", "x"}, "--killer: needs --bootstrap-server"},
		{[]string{"--kill", "broker-3", "--yes"}, "--yes: needs --bootstrap-server"},
		{[]string{"--kill", "broker-3", "--dry-run"}, "--dry-run: needs --bootstrap-server"},
		{[]string{"--kill", "broker-3", "--kill-cmd", "x"}, "--kill-cmd: needs --bootstrap-server"},
		{[]string{"--kill", "broker-3", "--cluster", "lab", "--bootstrap-server", "a:1", "--killer", "exec", "--kill-cmd", "x"}, "--bootstrap-server: not with --cluster lab"},
		{[]string{"--kill", "broker-3", "--bootstrap-server", " ", "--killer", "exec", "--kill-cmd", "x"}, "--bootstrap-server: no address given"},
		{bs, "--killer: required with --bootstrap-server"},
		{append(append([]string{}, bs...), "--killer", "litmus"), `--killer: unknown killer "litmus"`},
		{append(append([]string{}, bs...), "--killer", "exec"), "--kill-cmd: required with the exec killer"},
		{append(append([]string{}, bs...), "--killer", "exec", "--kill-cmd", "kill {pid}"), "--kill-cmd: unknown placeholder {pid}"},
		{append(append([]string{}, exec...), "--restore-cmd", "start {ip}"), "--restore-cmd: unknown placeholder {ip}"},
		{append(append([]string{}, exec...), "--restore"), "--restore-cmd: required with --restore"},
		{append(append([]string{}, exec...), "--repeat", "2"), "--restore-cmd: required with --repeat"},
		{append(append([]string{}, exec...), "--sequential"), "--restore-cmd: required with --sequential"},
		{append(append([]string{}, exec...), "--kill-timeout", "0s"), "--kill-timeout: must be positive"},
		{append(append([]string{}, exec...), "--container-template", "kafka-{id}"), "--container-template: only with --killer docker"},
		{append(append([]string{}, exec...), "--namespace", "kafka"), "--namespace: only with --killer chaos-mesh"},
		{append(append([]string{}, bs...), "--killer", "docker"), "--container-template: required with the docker killer"},
		{append(append([]string{}, bs...), "--killer", "docker", "--container-template", "kafka-{n}"), "--container-template: unknown placeholder {n}"},
		{append(append([]string{}, bs...), "--killer", "docker", "--container-template", "k-{id}", "--kill-cmd", "x"), "--kill-cmd: only with --killer exec"},
		{append(append([]string{}, bs...), "--killer", "chaos-mesh", "--pod-naming", "strimzi"), "--namespace:"},
	} {
		_, err := parse(t, tc.argv...)
		require.Error(t, err, tc.argv)
		assert.Contains(t, err.Error(), tc.want, tc.argv)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.argv)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
}

// TestRemoteYesAndDryRun runs the command against an embedded cluster
// reached by --bootstrap-server: without --yes it prints the plan and
// exits 4, and --dry-run prints it and exits 0; neither creates a topic
// nor runs the kill command.
func TestRemoteYesAndDryRun(t *testing.T) {
	e, err := embedded.New(3, "test")
	require.NoError(t, err)
	defer e.Close()
	marker := t.TempDir() + "/killed"
	run := func(extra ...string) (string, string, error) {
		ios, _, out, errOut := iostreams.Test()
		f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
		cmd := NewCmdChaos(f, nil)
		argv := []string{"--kill", "broker-3", "--bootstrap-server", strings.Join(e.Addrs(), ","), "--killer", "exec",
			"--kill-cmd", "touch " + marker + "; echo {id} {host} {port}", "--partitioner", "roundrobin,node"}
		cmd.SetArgs(append(argv, extra...))
		cmd.SetOut(new(bytes.Buffer))
		cmd.SetErr(new(bytes.Buffer))
		err := cmd.ExecuteContext(context.Background())
		return out.String(), errOut.String(), err
	}
	topics := func() []string {
		var have []string
		for _, tp := range []string{"kplan-chaos-roundrobin", "kplan-chaos-node"} {
			if len(e.Assignment(tp)) > 0 {
				have = append(have, tp)
			}
		}
		return have
	}

	out, _, err := run()
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitRefused, cmdutil.ExitCode(err))
	assert.Contains(t, err.Error(), "--yes: not given")
	host3 := e.Addr(3)
	assert.Contains(t, out, "kplan chaos plan\n")
	assert.Contains(t, out, "killer:      exec")
	assert.Contains(t, out, "kill:        broker-3: broker 3, advertised as "+host3)
	assert.Contains(t, out, "; echo 3 "+strings.Replace(host3, ":", " ", 1)+"\n", "the command, expanded")
	assert.Contains(t, out, "kplan-chaos-roundrobin/2 -> broker 1", "audit's what-if: broker 3's partition fails over to broker 1")
	assert.Contains(t, out, "kplan-chaos-node/2 -> broker 1")
	assert.Contains(t, out, "assignment 1,2;2,3;3,1; created, deleted at the end")
	assert.Empty(t, topics(), "no topic created")
	assert.NoFileExists(t, marker, "nothing killed")

	out, _, err = run("--dry-run")
	require.NoError(t, err)
	assert.Contains(t, out, "plan (dry run: nothing is created, killed or written)")
	assert.Contains(t, out, "checks:      passed")
	assert.Empty(t, topics())
	assert.NoFileExists(t, marker)

	out, _, err = run("--dry-run", "-o", "json", "--keep-topics")
	require.NoError(t, err)
	var plan chaos.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	assert.Equal(t, chaos.PlanSchema, plan.Schema)
	assert.Equal(t, int32(3), plan.Broker)
	assert.False(t, plan.DeleteTopics)
	assert.True(t, plan.DryRun)
	require.NotNil(t, plan.Kill)
	assert.Contains(t, plan.Kill.Manifest, "echo 3 ")
	require.Len(t, plan.Elections, 2)
	for _, el := range plan.Elections {
		assert.Equal(t, int32(2), el.Partition)
		assert.Equal(t, int32(1), el.NewLeader)
	}

	_, _, err = run("--dry-run", "--assignment", "1,4")
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	assert.Contains(t, err.Error(), "--assignment: partition 0 is assigned to broker 4, which the cluster does not have")

	_, _, err = run("--dry-run", "--kill", "broker-7")
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	assert.Contains(t, err.Error(), "--kill: broker-7: no such broker")

	// A topic of that name with another layout is refused before anything.
	require.NoError(t, e.CreateTopic(context.Background(), "kplan-chaos-node", [][]int32{{1, 2}}))
	_, _, err = run("--dry-run")
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	assert.Contains(t, err.Error(), "--topic: topic kplan-chaos-node exists with layout 1,2, not 1,2;2,3;3,1")
	assert.NoFileExists(t, marker)
}

func TestCleanupCommand(t *testing.T) {
	var got *CleanupOptions
	cmd := newCmdCleanup(cmdutil.NewTestFactory(), func(_ context.Context, o *CleanupOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs([]string{"--namespace", "kafka", "--kubeconfig", "/k", "--context", "c"})
	cmd.SetOut(new(bytes.Buffer))
	cmd.SetErr(new(bytes.Buffer))
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "kafka", got.Mesh.Namespace)
	assert.Equal(t, "/k", got.Mesh.Kubeconfig)
	assert.Equal(t, "c", got.Mesh.Context)

	cmd = newCmdCleanup(cmdutil.NewTestFactory(), func(context.Context, *CleanupOptions) error { return nil })
	cmd.SetArgs([]string{})
	cmd.SetOut(new(bytes.Buffer))
	cmd.SetErr(new(bytes.Buffer))
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--namespace: required")
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
}

// TestRemoteInterruptCleansUp interrupts a --bootstrap-server run (Ctrl-C
// cancels the command's context): the experiment topics it created are
// deleted all the same, and the partial result is printed.
func TestRemoteInterruptCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster experiment")
	}
	e, err := embedded.New(3, "test")
	require.NoError(t, err)
	defer e.Close()
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	cmd := NewCmdChaos(f, nil)
	cmd.SetArgs([]string{"--kill", "none", "--bootstrap-server", strings.Join(e.Addrs(), ","), "--yes",
		"--partitioner", "roundrobin", "--topic", "intr", "--warmup", "200ms", "--phase-duration", "1m", "--rate", "10kB/s", "-o", "json"})
	cmd.SetOut(new(bytes.Buffer))
	cmd.SetErr(new(bytes.Buffer))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the topic exists: the run is under way.
		for {
			if names, err := topicsWith(e, "intr-"); err == nil && len(names) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	err = cmd.ExecuteContext(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, out.String(), `"interrupted": true`, "the partial result is printed")
	assert.Contains(t, errOut.String(), "chaos: deleted topics intr-roundrobin")
	assert.Empty(t, listTopics(t, e, "intr-"), "the topic is deleted after the interruption")
}

func listTopics(t *testing.T, e *embedded.Embedded, prefix string) []string {
	t.Helper()
	names, err := topicsWith(e, prefix)
	require.NoError(t, err)
	return names
}

// topicsWith lists the cluster's topics named with prefix.
func topicsWith(e *embedded.Embedded, prefix string) ([]string, error) {
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: strings.Join(e.Addrs(), ",")}, "test")
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := kafka.Snapshot(ctx, cl, func(n string) bool { return strings.HasPrefix(n, prefix) })
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range snap.Partitions {
		if !slices.Contains(out, p.Topic) {
			out = append(out, p.Topic)
		}
	}
	return out, nil
}

// TestRemoteWorkloadDryRun: the plan of a workload run on a
// --bootstrap-server cluster lists every topic it would create with the
// layout's assignment (or the existing topics --topics writes) and resolves
// busiest over them.
func TestRemoteWorkloadDryRun(t *testing.T) {
	e, err := embedded.New(3, "test")
	require.NoError(t, err)
	defer e.Close()
	run := func(extra ...string) (string, error) {
		ios, _, out, _ := iostreams.Test()
		f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
		cmd := NewCmdChaos(f, nil)
		argv := []string{"--bootstrap-server", strings.Join(e.Addrs(), ","), "--partitioner", "roundrobin,node", "--dry-run"}
		cmd.SetArgs(append(argv, extra...))
		cmd.SetOut(new(bytes.Buffer))
		cmd.SetErr(new(bytes.Buffer))
		err := cmd.ExecuteContext(context.Background())
		return out.String(), err
	}
	out, err := run("--kill", "busiest", "--killer", "exec", "--kill-cmd", "true", "--layout", thesis64, "--rates", "A=2,B=1", "--rate", "300kB/s")
	require.NoError(t, err)
	assert.Contains(t, out, "kill:        busiest: broker 2,", "broker 2 leads A/1, A/2 and B/0")
	assert.Contains(t, out, "topics:      kplan-chaos-roundrobin-A, kplan-chaos-roundrobin-B, kplan-chaos-node-A, kplan-chaos-node-B (assignment A=1,2;2,3;2,1 B=2,1;3,1; created, deleted at the end)")
	assert.Contains(t, out, "kplan-chaos-node-B/0 -> broker 1")
	assert.Empty(t, e.Assignment("kplan-chaos-node-A"), "nothing created")

	_, err = run("--kill", "none", "--layout", writeFile(t, t.TempDir(), "four.json", `{"version":1,"partitions":[{"topic":"A","partition":0,"replicas":[4,1]}]}`))
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, "--layout: A/0 is assigned to broker 4, which the cluster does not have")

	require.NoError(t, e.CreateTopic(context.Background(), "orders-1", [][]int32{{1, 2}, {2, 3}}))
	out, err = run("--kill", "none", "--topics", "^orders-", "--sequential")
	require.NoError(t, err)
	assert.Contains(t, out, "topics:      orders-1 (assignment orders-1=existing; existing: written as they are, kept)")

	// Writing existing topics outside the lab needs --yes, as a kill does.
	ios, _, _, _ := iostreams.Test()
	cmd := NewCmdChaos(&cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}, nil)
	cmd.SetArgs([]string{"--bootstrap-server", strings.Join(e.Addrs(), ","), "--kill", "none", "--topics", "^orders-", "--sequential"})
	cmd.SetOut(new(bytes.Buffer))
	cmd.SetErr(new(bytes.Buffer))
	err = cmd.ExecuteContext(context.Background())
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitRefused, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, "--yes: not given")

	_, err = run("--kill", "none", "--topics", "^nothing", "--sequential")
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, `--topics: no topic of `)
}
