package killers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/chaos/docker"
	chaosexec "github.com/kplan-dev/kplan/internal/chaos/exec"
	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestValidate(t *testing.T) {
	exec := chaosexec.Options{KillCmd: "kill {id}"}
	for _, tc := range []struct {
		name  string
		spec  Spec
		field string // "" when valid
		want  string
	}{
		{"no killer, none needed", Spec{Timeout: time.Second}, "", ""},
		{"no killer, needed", Spec{Timeout: time.Second, RequiredWith: "--bootstrap-server"}, FieldKiller, "required with --bootstrap-server"},
		{"timeout first", Spec{Kind: "nope", RequiredWith: "x"}, FieldKillTimeout, "must be positive, got 0s"},
		{"unknown", Spec{Kind: "nope", Timeout: time.Second}, FieldKiller, `unknown killer "nope" (want chaos-mesh, docker or exec)`},
		{"exec", Spec{Kind: Exec, Timeout: time.Second, Exec: exec}, "", ""},
		{"exec without kill-cmd", Spec{Kind: Exec, Timeout: time.Second}, chaosexec.FieldKillCmd, "required with the exec killer"},
		{"exec, restore needed", Spec{Kind: Exec, Timeout: time.Second, Exec: exec, RestoreNeeded: "--restore"}, FieldRestoreCmd, "required with --restore"},
		{"exec, restore given", Spec{Kind: Exec, Timeout: time.Second, Exec: chaosexec.Options{KillCmd: "k", RestoreCmd: "r"}, RestoreNeeded: "--restore"}, "", ""},
		{"docker", Spec{Kind: Docker, Timeout: time.Second, Docker: docker.Options{ContainerTemplate: "kafka-{id}"}}, "", ""},
		{"docker without template", Spec{Kind: Docker, Timeout: time.Second}, docker.FieldContainerTemplate, ""},
		{"chaos-mesh without namespace", Spec{Kind: ChaosMesh, Timeout: time.Second}, "namespace", "required"},
		{"chaos-mesh", Spec{Kind: ChaosMesh, Timeout: time.Second, Mesh: chaosmesh.Options{Namespace: "kafka", PodNaming: "template", PodTemplate: "kafka-{id}"}}, "", ""},
	} {
		err := tc.spec.Validate()
		if tc.field == "" {
			assert.NoError(t, err, tc.name)
			continue
		}
		var ke *errkind.Error
		require.True(t, errors.As(err, &ke), "%s: %v", tc.name, err)
		assert.Equal(t, errkind.Usage, ke.Kind, tc.name)
		assert.Equal(t, tc.field, ke.Field, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

// New builds the chosen kind with the spec's timeout; no kind builds a
// killer that refuses every kill.
func TestNew(t *testing.T) {
	s := Spec{Kind: Docker, Timeout: 7 * time.Second, Docker: docker.Options{ContainerTemplate: "kafka-{id}"}}
	assert.Equal(t, 7*time.Second, s.WithTimeout().Docker.Timeout)
	k, err := s.New("run1")
	require.NoError(t, err)
	assert.Equal(t, Docker, k.Name())
	assert.Nil(t, NetFaulter(k), "docker injects no network fault")

	k, err = Spec{}.New("run1")
	require.NoError(t, err)
	_, err = k.Kill(context.Background(), chaos.Broker{ID: 1})
	assert.ErrorContains(t, err, "no killer given")
	assert.NoError(t, k.Cleanup(context.Background()))

	_, err = Spec{Kind: "nope"}.New("run1")
	assert.Error(t, err)
	assert.Regexp(t, `^[0-9a-z]+$`, NewRunID())
}
