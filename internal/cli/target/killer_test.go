package target_test

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos/killers"
	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// The group is the killer and its 20 flags, declared once; the verb's note
// ends --restore-cmd's help.
func TestKillerFlagsDeclared(t *testing.T) {
	var k target.KillerFlags
	fs := pflag.NewFlagSet("verb", pflag.ContinueOnError)
	k.AddFlags(fs, "a verb's note")
	names := target.KillerFlagNames()
	assert.Len(t, names, 20)
	assert.Equal(t, []string{"killer", "kill-timeout"}, names[:2])
	for _, n := range names {
		assert.NotNil(t, fs.Lookup(n), n)
	}
	assert.Equal(t, "exec: command that brings a killed broker back (a verb's note)", fs.Lookup("restore-cmd").Usage)
	require.NoError(t, fs.Parse([]string{"--killer", "exec", "--kill-cmd", "kill {id}", "--kill-timeout", "5s"}))
	s, err := k.Options(fs.Changed, func(n string) string { return "--" + n })
	require.NoError(t, err)
	assert.Equal(t, killers.Exec, s.Kind)
	assert.Equal(t, 5*time.Second, s.Exec.Timeout, "the timeout is in the chosen killer's options")
}

func TestKillerFlagsOptions(t *testing.T) {
	where := func(n string) string { return "file.yaml:3: " + n }
	for _, tc := range []struct {
		argv  []string
		field string // the spec's own error: the field, spelled by the verb
		want  string
	}{
		{[]string{"--kill-timeout", "0s", "--killer", "docker"}, "kill-timeout", "must be positive"},
		{[]string{"--killer", "nope"}, "killer", `unknown killer "nope"`},
		{[]string{"--killer", "docker"}, "container-template", ""},
		{[]string{"--killer", "docker", "--container-template", "k-{id}", "--kill-cmd", "x"}, "", "file.yaml:3: kill-cmd: only with --killer exec"},
		{[]string{"--killer", "exec", "--kill-cmd", "x", "--namespace", "kafka"}, "", "file.yaml:3: namespace: only with --killer chaos-mesh"},
	} {
		var k target.KillerFlags
		fs := pflag.NewFlagSet("verb", pflag.ContinueOnError)
		k.AddFlags(fs, "")
		require.NoError(t, fs.Parse(tc.argv))
		_, err := k.Options(fs.Changed, where)
		require.Error(t, err, tc.argv)
		assert.ErrorContains(t, err, tc.want, tc.argv)
		var ke *errkind.Error
		if tc.field != "" {
			require.True(t, errors.As(err, &ke), tc.argv)
			assert.Equal(t, tc.field, ke.Field, tc.argv)
			continue
		}
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.argv)
	}
}
