package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// standIn puts a stand-in `docker` first on PATH: it logs its arguments to
// DIR/calls and answers `docker inspect NAME` with DIR/NAME.json (or
// docker's "No such container" and exit 1).
func standIn(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
dir=` + dir + `
echo "$*" >> "$dir/calls"
case "$1" in
inspect)
	for last; do :; done
	if [ -f "$dir/$last.json" ]; then cat "$dir/$last.json"; exit 0; fi
	echo "Error: No such container: $last" >&2
	exit 1;;
kill)
	for last; do :; done
	echo "$last"
	if [ -f "$dir/$last.finished.json" ]; then cp "$dir/$last.finished.json" "$dir/$last.json"; fi;;
start)
	for last; do :; done
	echo "$last";;
esac
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755)) //nolint:gosec // an executable stand-in
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

func writeInspect(t *testing.T, dir, name, json string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), []byte(json), 0o600))
}

const running = `[{"Name":"/kafka-3","State":{"Running":true,"Status":"running","FinishedAt":"0001-01-01T00:00:00Z"},
"Config":{"Hostname":"b3f1c2"},
"NetworkSettings":{"Networks":{"compose_default":{"IPAddress":"172.18.0.5","Aliases":["kafka-3","kafka3"],"DNSNames":["kafka-3","b3f1c2"]}},
"Ports":{"9092/tcp":[{"HostIp":"0.0.0.0","HostPort":"39092"}]}}}]`

func TestPlanChecksIdentity(t *testing.T) {
	dir := standIn(t)
	writeInspect(t, dir, "kafka-3", running)
	k, err := New(Options{ContainerTemplate: "kafka-{id}"})
	require.NoError(t, err)
	for _, host := range []string{"kafka-3", "KAFKA-3", "kafka-3.compose_default", "kafka3", "172.18.0.5", "b3f1c2", "localhost", "127.0.0.1"} {
		plan, err := k.Plan(context.Background(), chaos.Broker{ID: 3, Host: host, Port: 39092})
		require.NoError(t, err, host)
		assert.Equal(t, "container kafka-3", plan.Target, host)
		assert.Equal(t, "docker kill --signal KILL kafka-3", plan.Manifest, host)
	}
	calls, err := os.ReadFile(filepath.Join(dir, "calls"))
	require.NoError(t, err)
	assert.NotContains(t, string(calls), "kill --signal", "Plan only inspects")

	for _, tc := range []struct {
		b    chaos.Broker
		want string
	}{
		{chaos.Broker{ID: 3, Host: "kafka-2", Port: 9092}, "container kafka-3 is not broker 3: the broker advertises kafka-2:9092"},
		{chaos.Broker{ID: 3, Host: "172.18.0.4", Port: 9092}, "the broker advertises 172.18.0.4:9092"},
		{chaos.Broker{ID: 3, Host: "127.0.0.1", Port: 29092}, "the broker advertises 127.0.0.1:29092"},
		{chaos.Broker{ID: 4, Host: "kafka-4", Port: 9092}, "container kafka-4: docker inspect: Error: No such container: kafka-4"},
	} {
		_, err := k.Plan(context.Background(), tc.b)
		require.Error(t, err, tc.b)
		assert.Equal(t, errkind.Refused, errkind.KindOf(err), tc.b)
		assert.ErrorContains(t, err, tc.want, tc.b)
	}

	writeInspect(t, dir, "kafka-3", strings.Replace(running, `"Running":true,"Status":"running"`, `"Running":false,"Status":"exited"`, 1))
	_, err = k.Plan(context.Background(), chaos.Broker{ID: 3, Host: "kafka-3", Port: 9092})
	require.Error(t, err)
	assert.Equal(t, errkind.Refused, errkind.KindOf(err))
	assert.ErrorContains(t, err, "container kafka-3 is not running (exited)")
}

func TestKillAndRestore(t *testing.T) {
	dir := standIn(t)
	writeInspect(t, dir, "kafka-3", running)
	finished := strings.Replace(running, `"Running":true,"Status":"running","FinishedAt":"0001-01-01T00:00:00Z"`,
		`"Running":false,"Status":"exited","FinishedAt":"2026-11-23T21:00:00.123456789Z"`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kafka-3.finished.json"), []byte(finished), 0o600))
	k, err := New(Options{ContainerTemplate: "kafka-{id}"})
	require.NoError(t, err)
	b := chaos.Broker{ID: 3, Host: "kafka-3", Port: 9092}

	at, err := k.Kill(context.Background(), b)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 23, 21, 0, 0, 123456789, time.UTC), at.UTC(), "the container's FinishedAt is the kill time")
	require.NoError(t, k.Restore(context.Background(), b))
	calls, err := os.ReadFile(filepath.Join(dir, "calls"))
	require.NoError(t, err)
	assert.Equal(t, "kill --signal KILL kafka-3\ninspect --type container kafka-3\nstart kafka-3\n", string(calls))
	log := strings.Join(k.Log(), "\n")
	assert.Contains(t, log, "$ docker kill --signal KILL kafka-3")
	assert.Contains(t, log, "finished at 2026-11-23T21:00:00.123456789Z")
	assert.Contains(t, log, "$ docker start kafka-3")
	require.NoError(t, k.Cleanup(context.Background()))
}

func TestKillWithoutFinishedAt(t *testing.T) {
	dir := standIn(t)
	writeInspect(t, dir, "kafka-3", running) // stays "running" with a zero FinishedAt
	k, err := New(Options{ContainerTemplate: "kafka-{id}"})
	require.NoError(t, err)
	before := time.Now()
	at, err := k.Kill(context.Background(), chaos.Broker{ID: 3, Host: "kafka-3", Port: 9092})
	require.NoError(t, err)
	assert.False(t, at.Before(before), "the command's end is the kill time")
}

func TestNewBadInput(t *testing.T) {
	for _, tc := range []struct {
		o     Options
		field string
		want  string
	}{
		{Options{}, FieldContainerTemplate, "required with the docker killer"},
		{Options{ContainerTemplate: "kafka-{broker}"}, FieldContainerTemplate, "unknown placeholder {broker}"},
		{Options{ContainerTemplate: "kafka-{id}", Timeout: -1}, FieldKillTimeout, "negative timeout"},
	} {
		err := tc.o.Validate()
		require.Error(t, err, tc.o)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err))
		assert.Equal(t, tc.field, errkind.FieldOf(err))
		assert.ErrorContains(t, err, tc.want)
	}
}
