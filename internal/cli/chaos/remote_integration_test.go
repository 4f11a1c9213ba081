//go:build integration

package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/k8stest"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/labtest"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// asKplan makes the test binary run as kplan (its arguments are kplan's):
// the kill and restore commands of these tests call it for `kplan lab kill`
// and `kplan lab restart`, so no kplan binary has to be built first.
const asKplan = "KPLAN_TEST_AS_KPLAN"

func TestMain(m *testing.M) {
	if os.Getenv(asKplan) == "1" {
		os.Exit(app.Main())
	}
	os.Exit(k8stest.Stop(labtest.Main(m)))
}

// kplanCmd is a shell command that runs kplan: this test binary as kplan.
func kplanCmd(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return asKplan + "=1 " + self
}

// labForRemote returns the shared lab, and reloads its state from disk when
// the test ends: the brokers killed and restarted by another process (the
// kill and restore commands) run with new pids.
func labForRemote(t *testing.T) *labtest.Lab {
	t.Helper()
	lab := labtest.Shared(t)
	t.Cleanup(func() {
		s, err := localkafka.Load(lab.State.Dir)
		if err == nil {
			lab.State.Nodes = s.Nodes
		}
	})
	return lab
}

// runKplan runs kplan in process with args and returns the exit code,
// stdout and stderr.
func runKplan(ctx context.Context, args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	code := app.Run(ctx, f, args)
	return code, out.String(), errOut.String()
}

// labTopics lists the lab's topics with prefix.
func labTopics(t *testing.T, lab *labtest.Lab, prefix string) []string {
	t.Helper()
	names, err := topicsWith(lab, prefix)
	require.NoError(t, err)
	return names
}

// gone reports whether the lab has no topic with prefix (an error, e.g.
// a topic being deleted, counts as not yet).
func gone(lab *labtest.Lab, prefix string) bool {
	names, err := topicsWith(lab, prefix)
	return err == nil && len(names) == 0
}

func topicsWith(lab *labtest.Lab, prefix string) ([]string, error) {
	cl, err := kafka.NewClient(kafka.ConnOptions{BootstrapServers: lab.Bootstrap}, "test")
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	slices.Sort(out)
	return out, nil
}

// allAlive reports whether every lab broker runs, as the state on disk says.
func allAlive(t *testing.T, lab *labtest.Lab) bool {
	t.Helper()
	s, err := localkafka.Load(lab.State.Dir)
	require.NoError(t, err)
	for _, n := range s.Brokers() {
		if !n.Alive() {
			return false
		}
	}
	return true
}

// acceptance checks what must hold of a JSON result (as TestLabKillBroker3
// in internal/chaos): broker 3 killed, the failover timed, every skew
// computed, Kafka's election, nothing lost. The skews themselves are
// acceptance figures (internal/chaos's TestAcceptLabKillBroker3Skew, the
// same experiment whatever kills the broker).
func acceptance(t *testing.T, out string) *chaos.Result {
	t.Helper()
	var res chaos.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, int32(3), res.KilledBroker)
	require.NotNil(t, res.FailoverMS, "a real cluster's failover is timed")
	assert.Greater(t, *res.FailoverMS, 0.0)
	assert.NotEmpty(t, res.KillerLog, "the killer's commands are in the result")
	require.Len(t, res.Partitioners, len(chaos.DefaultPartitioners))
	for _, p := range res.Partitioners {
		before, after := p.Phases[chaos.PhaseBefore.String()], p.Phases[chaos.PhaseAfter.String()]
		require.NotNil(t, before, p.Name)
		require.NotNil(t, after, p.Name)
		require.NotNil(t, before.MaxOverMean, p.Name)
		require.NotNil(t, after.MaxOverMean, p.Name)
		t.Logf("%-10s before %.3f %v  after %.3f %v  acked %d lost %d", p.Name, *before.MaxOverMean, before.PerBroker, *after.MaxOverMean, after.PerBroker, p.Acked, p.Lost)
		assert.Positive(t, p.Acked, p.Name)
		assert.Zero(t, p.Lost, "%s: acknowledged records lost", p.Name)
		assert.Equal(t, []int32{1, 2}, after.Leaders, "%s: broker 1 leads broker 3's partition after the kill", p.Name)
	}
	return &res
}

// experiment are the settings of TestLabKillBroker3's invariant run: short
// phases (only invariants are checked; the skews are acceptance figures),
// and --restore to leave the shared lab whole.
func experiment(topic string) []string {
	return []string{"chaos", "--kill", "broker-3", "--topic", topic, "--warmup", "2s", "--phase-duration", "4s", "--restore", "-o", "json"}
}

// TestRemoteExecKillBroker3 is the acceptance of `kplan chaos
// --bootstrap-server --killer exec` on the real lab: `kplan lab kill` and
// `kplan lab restart` as the kill and restore commands. Before it, a run
// without --yes and a --dry-run change nothing.
func TestRemoteExecKillBroker3(t *testing.T) {
	lab := labForRemote(t)
	dir := lab.State.Dir
	kp := kplanCmd(t)
	killer := []string{"--bootstrap-server", lab.Bootstrap, "--killer", "exec",
		"--kill-cmd", kp + " lab kill broker-{id} --dir " + dir,
		"--restore-cmd", kp + " lab restart broker-{id} --dir " + dir}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	code, out, errOut := runKplan(ctx, append(experiment("rexec"), killer...)...)
	assert.Equal(t, cmdutil.ExitRefused, code, errOut)
	assert.Contains(t, errOut, "--yes: not given")
	assert.Contains(t, out, "lab kill broker-3 --dir "+dir)
	assert.Empty(t, labTopics(t, lab, "rexec-"), "no --yes: no topic")
	assert.True(t, allAlive(t, lab), "no --yes: nothing killed")

	code, out, errOut = runKplan(ctx, append(append(experiment("rexec"), killer...), "--dry-run")...)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	var plan struct {
		Broker    int32 `json:"broker"`
		Elections []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			NewLeader int32  `json:"new_leader"`
		} `json:"elections"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	assert.Equal(t, int32(3), plan.Broker)
	for _, e := range plan.Elections {
		if strings.HasPrefix(e.Topic, "rexec-") {
			assert.Equal(t, int32(2), e.Partition, e.Topic)
			assert.Equal(t, int32(1), e.NewLeader, e.Topic)
		}
	}
	assert.Empty(t, labTopics(t, lab, "rexec-"), "--dry-run: no topic")
	assert.True(t, allAlive(t, lab), "--dry-run: nothing killed")

	code, out, errOut = runKplan(ctx, append(append(experiment("rexec"), killer...), "--yes")...)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	res := acceptance(t, out)
	assert.Contains(t, strings.Join(res.KillerLog, "\n"), "lab kill broker-3 --dir "+dir)
	assert.Contains(t, strings.Join(res.KillerLog, "\n"), "lab restart broker-3 --dir "+dir)
	assert.Contains(t, errOut, "chaos: deleted topics")
	assert.Eventually(t, func() bool { return gone(lab, "rexec-") }, 30*time.Second, 200*time.Millisecond, "the experiment topics are deleted")
	assert.True(t, allAlive(t, lab), "--restore: broker 3 runs again")
}

// standInDocker puts a `docker` on PATH that drives the lab: inspect
// answers a running container kafka-N publishing broker N's port (a
// Compose container whose broker advertises localhost), kill is `kplan lab
// kill` and records FinishedAt, start is `kplan lab restart`.
func standInDocker(t *testing.T, lab *labtest.Lab) {
	t.Helper()
	bin := t.TempDir()
	var ports strings.Builder
	for _, n := range lab.State.Brokers() {
		addr := lab.State.Bootstrap()[slices.IndexFunc(lab.State.Brokers(), func(b localkafka.Node) bool { return b.ID == n.ID })]
		port := addr[strings.LastIndexByte(addr, ':')+1:]
		fmt.Fprintf(&ports, "kafka-%d) port=%s;;\n", n.ID, port)
	}
	script := `#!/bin/sh
state=` + bin + `
kplan="` + kplanCmd(t) + `"
for last; do :; done
case "$last" in
` + ports.String() + `*) echo "Error: No such container: $last" >&2; exit 1;;
esac
id=${last#kafka-}
case "$1" in
inspect)
	if [ -f "$state/$last.finished" ]; then
		running=false; status=exited; finished=$(cat "$state/$last.finished")
	else
		running=true; status=running; finished=0001-01-01T00:00:00Z
	fi
	printf '[{"Name":"/%s","State":{"Running":%s,"Status":"%s","FinishedAt":"%s"},"Config":{"Hostname":"%s"},"NetworkSettings":{"Networks":{"compose_default":{"IPAddress":"172.18.0.%s"}},"Ports":{"9092/tcp":[{"HostIp":"0.0.0.0","HostPort":"%s"}]}}}]\n' \
		"$last" "$running" "$status" "$finished" "$last" "$id" "$port";;
kill)
	env $kplan lab kill broker-$id --dir ` + lab.State.Dir + ` || exit 1
	date -u +%Y-%m-%dT%H:%M:%S.%NZ > "$state/$last.finished"
	echo "$last";;
start)
	env $kplan lab restart broker-$id --dir ` + lab.State.Dir + ` || exit 1
	rm -f "$state/$last.finished"
	echo "$last";;
*) echo "stand-in docker: $1 not supported" >&2; exit 1;;
esac
`
	require.NoError(t, os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755)) //nolint:gosec // an executable stand-in
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestRemoteDockerKillBroker3 is the same acceptance with --killer docker
// through a stand-in docker that drives the lab; a container that is not
// the broker is refused first.
func TestRemoteDockerKillBroker3(t *testing.T) {
	lab := labForRemote(t)
	standInDocker(t, lab)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	docker := []string{"--bootstrap-server", lab.Bootstrap, "--killer", "docker"}

	// kafka-{id} off by one: container kafka-2 publishes broker 2's port,
	// not broker 3's.
	code, _, errOut := runKplan(ctx, append(append(experiment("rdocker"), docker...), "--container-template", "kafka-"+strconv.Itoa(2), "--dry-run")...)
	assert.Equal(t, cmdutil.ExitRefused, code, errOut)
	assert.Contains(t, errOut, "container kafka-2 is not broker 3: the broker advertises 127.0.0.1:")
	assert.True(t, allAlive(t, lab))

	code, out, errOut := runKplan(ctx, append(append(experiment("rdocker"), docker...), "--container-template", "kafka-{id}", "--yes")...)
	require.Equal(t, cmdutil.ExitOK, code, errOut)
	res := acceptance(t, out)
	log := strings.Join(res.KillerLog, "\n")
	assert.Contains(t, log, "$ docker kill --signal KILL kafka-3")
	assert.Contains(t, log, "container kafka-3 finished at")
	assert.Contains(t, log, "$ docker start kafka-3")
	assert.Eventually(t, func() bool { return gone(lab, "rdocker-") }, 30*time.Second, 200*time.Millisecond, "the experiment topics are deleted")
	assert.True(t, allAlive(t, lab), "--restore: broker 3 runs again")
}
