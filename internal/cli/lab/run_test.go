package lab

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
	"github.com/kplan-dev/kplan/internal/topology"
)

// TestUpJarsMissing: jars that are not there are refused naming the flag,
// before anything is written (java is needed first: a stand-in will do).
func TestUpJarsMissing(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	dir := filepath.Join(t.TempDir(), "lab")
	opts := &UpOptions{IO: ios, Timeout: time.Minute, Now: time.Now,
		Config: localkafka.Config{Brokers: 1, BasePort: 25092, Dir: dir, JarsDir: t.TempDir(), Java: "/bin/true"}}
	err := runUp(context.Background(), opts)
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
	assert.ErrorContains(t, err, "--kafka-jars: ")
	assert.ErrorContains(t, err, "make kafka")
	assert.Empty(t, out.String())
	assert.Empty(t, errOut.String())
	_, statErr := os.Stat(dir)
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}

// writeLab writes a lab state file whose JVMs are not running (pid 0).
func writeLab(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := localkafka.State{Version: 1, ClusterID: "q1Sh-9_ISia_zwGINzRvyQ", Dir: "/tmp/kplan-lab-test", HeapMB: 384, Nodes: []localkafka.Node{
		{ID: 1, Broker: true, Controller: true, Rack: "rack-a", Port: 19092, ControllerPort: 19093, Addr: "127.0.0.1", Config: "/tmp/kplan-lab-test/node-1/server.properties"},
		{ID: 2, Broker: true, Controller: true, Rack: "rack-b", Port: 19102, ControllerPort: 19103, Addr: "127.0.0.1", Config: "/tmp/kplan-lab-test/node-2/server.properties"},
		{ID: 3, Broker: true, Controller: true, Rack: "rack-c", Port: 19112, ControllerPort: 19113, Addr: "127.0.0.1", Config: "/tmp/kplan-lab-test/node-3/server.properties"},
	}}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lab.json"), b, 0o644))
	return dir
}

// TestStatusRun checks options to output for a lab whose brokers are all
// dead: nothing to ask Kafka, every broker listed as DEAD.
func TestStatusRun(t *testing.T) {
	dir := writeLab(t)
	for _, format := range []report.Format{report.Table, report.JSON} {
		ios, _, out, _ := iostreams.Test()
		opts := &StatusOptions{IO: ios, Dir: dir, Format: format, Timeout: time.Second,
			Snapshot: func(context.Context, []string) (*topology.Cluster, error) {
				t.Fatal("no broker is alive: nothing to ask")
				return nil, nil
			}}
		require.NoError(t, runStatus(context.Background(), opts))
		golden.AssertString(t, "status-dead."+map[report.Format]string{report.Table: "txt", report.JSON: "json"}[format], out.String())
		if format == report.JSON {
			var v map[string]any
			require.NoError(t, json.Unmarshal(out.Bytes(), &v))
			assert.Equal(t, StatusSchema, v["schema"])
		}
	}
}

// TestStatusFill: leaders and replicas per broker, under-replicated and
// offline partitions, from a live layout.
func TestStatusFill(t *testing.T) {
	st := Status{Schema: StatusSchema, Dir: "/tmp/kplan-lab-test", ClusterID: "q1Sh-9_ISia_zwGINzRvyQ", Bootstrap: "127.0.0.1:19092,127.0.0.1:19102,127.0.0.1:19112",
		Brokers: []BrokerStatus{
			{ID: 1, Rack: "rack-a", Address: "127.0.0.1:19092", PID: 101, Alive: true},
			{ID: 2, Rack: "rack-b", Address: "127.0.0.1:19102", PID: 102, Alive: false},
			{ID: 3, Rack: "rack-c", Address: "127.0.0.1:19112", PID: 103, Alive: true},
		}}
	st.fill(&topology.Cluster{Partitions: []topology.Partition{
		{Topic: "orders", Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}},
		{Topic: "orders", Partition: 1, Leader: 3, Replicas: []int32{3, 1}, ISR: []int32{3, 1}},
		{Topic: "pay", Partition: 0, Leader: topology.NoLeader, Replicas: []int32{2}, ISR: []int32{}},
	}})
	assert.Equal(t, 2, st.Topics)
	assert.Equal(t, 3, st.Partitions)
	assert.Equal(t, []string{"orders-0"}, st.UnderReplicated)
	assert.Equal(t, []string{"pay-0"}, st.Offline)
	assert.Equal(t, []int{1, 0, 1}, []int{st.Brokers[0].Leaders, st.Brokers[1].Leaders, st.Brokers[2].Leaders})
	assert.Equal(t, []int{2, 2, 1}, []int{st.Brokers[0].Replicas, st.Brokers[1].Replicas, st.Brokers[2].Replicas})
	var b strings.Builder
	require.NoError(t, report.Render(&b, report.Table, st, st.doc))
	golden.AssertString(t, "status-live.txt", b.String())
}

// TestRunnersReportLabErrors: every run function answers a missing lab with
// a usage error naming the directory.
func TestRunnersReportLabErrors(t *testing.T) {
	noLab := filepath.Join(t.TempDir(), "none")
	ios, _, _, _ := iostreams.Test()
	ctx := context.Background()
	for name, err := range map[string]error{
		"kill":    runKill(&BrokerOptions{IO: ios, Dir: noLab, Broker: 1}),
		"restart": runRestart(ctx, &BrokerOptions{IO: ios, Dir: noLab, Broker: 1, Timeout: time.Second}),
		"elect":   runElect(ctx, &ElectOptions{IO: ios, Dir: noLab, Timeout: time.Second}),
		"down":    runDown(&DownOptions{IO: ios, Dir: noLab, Now: time.Now}),
		"status":  runStatus(ctx, &StatusOptions{IO: ios, Dir: noLab}),
	} {
		assert.ErrorIs(t, err, localkafka.ErrNoLab, name)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), name)
	}
	dir := writeLab(t)
	err := runKill(&BrokerOptions{IO: ios, Dir: dir, Broker: 9})
	assert.EqualError(t, err, "no broker-9 in this 3-broker lab")
	err = runKill(&BrokerOptions{IO: ios, Dir: dir, Broker: 2})
	assert.EqualError(t, err, "broker-2 is already dead")
	assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err))
}

// TestUpInterruptedRun: a signal (the cancelled command context) while up
// waits for the brokers stops the JVM it started and says so in one line,
// after the phases' progress lines; exit 1.
func TestUpInterruptedRun(t *testing.T) {
	tmp := t.TempDir()
	fake := filepath.Join(tmp, "fake-java")
	// The StorageTool succeeds; the broker runs until SIGTERM, keeping the
	// lab's paths in its argv as a JVM does.
	require.NoError(t, os.WriteFile(fake, []byte(`#!/bin/sh
for a in "$@"; do [ "$a" = kafka.tools.StorageTool ] && exit 0; done
exec /bin/sh -c 'trap "exit 0" TERM; while :; do sleep 0.1; done' fake-jvm "$@"
`), 0o755))
	jars := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(jars, "kafka_2.13-4.3.1.jar"), nil, 0o644))
	dir := filepath.Join(tmp, "lab")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ios, _, out, errOut := iostreams.Test()
	opts := &UpOptions{IO: ios, Timeout: time.Minute, Now: time.Now,
		Config: localkafka.Config{Brokers: 1, BasePort: 27092 + os.Getpid()%500*10, Dir: dir, JarsDir: jars, Java: fake},
		Ready: func(string) localkafka.Ready {
			return func(context.Context, string, []string, []int32) error {
				cancel(errors.New("interrupt signal received"))
				return errors.New("not yet")
			}
		}}
	err := runUp(ctx, opts)
	assert.Equal(t, cmdutil.ExitRuntime, cmdutil.ExitCode(err))
	assert.EqualError(t, err, "lab up interrupted (interrupt signal received) while waiting for the brokers to answer; cleaned up: stopped 1 JVM (node-1); nothing of the lab runs (its files stay in "+dir+", which the next lab up clears)")
	assert.Equal(t, "lab up: formatting storage\nlab up: starting the JVMs\nlab up: waiting for the brokers to answer\n", errOut.String())
	assert.Empty(t, out.String())
	left, perr := localkafka.ProcessesOf(dir)
	require.NoError(t, perr)
	assert.Empty(t, left)
}
