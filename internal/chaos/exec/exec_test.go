package exec

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

var broker3 = chaos.Broker{ID: 3, Host: "127.0.0.1", Port: 39092}

func TestKillerRunsCommands(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "calls")
	k, err := New(Options{
		KillCmd:    "echo kill {id} {host} {port} >> " + out + "; echo killed broker-{id}",
		RestoreCmd: "echo restore {id} >> " + out + "; echo restarted >&2",
	})
	require.NoError(t, err)
	assert.Equal(t, Name, k.Name())
	assert.True(t, k.CanRestore())

	plan, err := k.Plan(context.Background(), broker3)
	require.NoError(t, err)
	assert.Equal(t, "echo kill 3 127.0.0.1 39092 >> "+out+"; echo killed broker-3", plan.Manifest)
	assert.Contains(t, plan.Target, "broker 3 at 127.0.0.1:39092")
	require.Len(t, plan.Steps, 3)
	assert.Contains(t, plan.Steps[2], "echo restore 3")
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "Plan runs nothing")

	before := time.Now()
	at, err := k.Kill(context.Background(), broker3)
	require.NoError(t, err)
	assert.False(t, at.Before(before), "the kill time is the command's end")
	require.NoError(t, k.Restore(context.Background(), broker3))
	calls, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "kill 3 127.0.0.1 39092\nrestore 3\n", string(calls))

	log := strings.Join(k.Log(), "\n")
	assert.Contains(t, log, "$ echo kill 3 127.0.0.1 39092")
	assert.Contains(t, log, "  | killed broker-3")
	assert.Contains(t, log, "  | restarted", "stderr is kept too")
	assert.Contains(t, log, "exit 0 after")
	require.NoError(t, k.Cleanup(context.Background()))
}

func TestKillerFailures(t *testing.T) {
	k, err := New(Options{KillCmd: "echo no such unit >&2; exit 5"})
	require.NoError(t, err)
	_, err = k.Kill(context.Background(), broker3)
	require.Error(t, err)
	assert.ErrorContains(t, err, "kill command for broker 3")
	assert.ErrorContains(t, err, "no such unit", "the output's last line says why")
	assert.Contains(t, strings.Join(k.Log(), "\n"), "failed after")

	err = k.Restore(context.Background(), broker3)
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, FieldRestoreCmd, errkind.FieldOf(err))

	k, err = New(Options{KillCmd: "sleep 30", Timeout: 50 * time.Millisecond})
	require.NoError(t, err)
	_, err = k.Kill(context.Background(), broker3)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "timed out after 50ms")
	assert.Contains(t, strings.Join(k.Log(), "\n"), "timed out after 50ms")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = k.Kill(ctx, broker3)
	require.Error(t, err, "a cancelled context stops the command")
}

func TestKillerLogKeepsTheEnd(t *testing.T) {
	k, err := New(Options{KillCmd: "seq 1 100"})
	require.NoError(t, err)
	_, err = k.Kill(context.Background(), broker3)
	require.NoError(t, err)
	log := k.Log()
	assert.Contains(t, log, "  | ... 60 lines left out")
	assert.Contains(t, log, "  | 100")
	assert.NotContains(t, log, "  | 60")
}

func TestNewBadInput(t *testing.T) {
	for _, tc := range []struct {
		o     Options
		field string
		want  string
	}{
		{Options{}, FieldKillCmd, "required with the exec killer"},
		{Options{KillCmd: "  "}, FieldKillCmd, "required"},
		{Options{KillCmd: "kill {pid}"}, FieldKillCmd, "unknown placeholder {pid}"},
		{Options{KillCmd: "kill {id}", RestoreCmd: "start {ip}"}, FieldRestoreCmd, "unknown placeholder {ip}"},
		{Options{KillCmd: "kill {id}", Timeout: -time.Second}, FieldKillTimeout, "negative timeout"},
	} {
		err := tc.o.Validate()
		require.Error(t, err, tc.o)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), tc.o)
		assert.Equal(t, tc.field, errkind.FieldOf(err), tc.o)
		assert.ErrorContains(t, err, tc.want, tc.o)
	}
}

func TestShellQuote(t *testing.T) {
	assert.Equal(t, "kafka-3", ShellQuote("kafka-3"))
	assert.Equal(t, "'a b'", ShellQuote("a b"))
	assert.Equal(t, `'it'\''s'`, ShellQuote("it's"))
	assert.Equal(t, "''", ShellQuote(""))
}
