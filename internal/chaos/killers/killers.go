// Package killers is the choice of how kplan kills a broker of a cluster
// it does not run (reached by --bootstrap-server): chaos-mesh, docker or
// exec. A Spec names the kind and carries each kind's options; it checks
// itself once (Validate, errors naming the field) and builds the killer
// (New). Every verb that kills a remote broker (kplan chaos, kplan measure
// unavailability) uses it, so the killers are chosen, checked and built in
// one place.
package killers

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/chaosmesh"
	"github.com/kplan-dev/kplan/internal/chaos/docker"
	chaosexec "github.com/kplan-dev/kplan/internal/chaos/exec"
	"github.com/kplan-dev/kplan/internal/chaos/remote"
	"github.com/kplan-dev/kplan/internal/errkind"
)

// The kinds, as --killer spells them.
const (
	ChaosMesh = chaosmesh.Name
	Docker    = docker.Name
	Exec      = chaosexec.Name
	// Kinds lists the kinds for messages.
	Kinds = "chaos-mesh, docker or exec"
)

// The fields a Spec's errors name (besides each killer's own).
const (
	FieldKiller      = "killer"
	FieldKillTimeout = chaosexec.FieldKillTimeout
	FieldRestoreCmd  = chaosexec.FieldRestoreCmd
)

// Spec is a killer as the operator chose it: its kind and the options of
// each kind (only the chosen kind's are used).
type Spec struct {
	// Kind is ChaosMesh, Docker, Exec or "" for none.
	Kind string
	// Timeout bounds each exec or docker command.
	Timeout time.Duration
	Exec    chaosexec.Options
	Docker  docker.Options
	Mesh    chaosmesh.Options
	// RequiredWith, when not "", says what needs a killer: Kind "" is then
	// an error saying so. With RequiredWith "" and Kind "", nothing is
	// killed.
	RequiredWith string
	// RestoreNeeded, when not "", says what needs every kill undone: the
	// exec killer then needs its restore command.
	RestoreNeeded string
}

// Validate checks the spec without reaching anything; its errors are
// errkind.Usage errors naming the field ("killer", "kill-timeout",
// "restore-cmd", or the chosen killer's own).
func (s Spec) Validate() error {
	if s.Timeout <= 0 {
		return errkind.Usagef(FieldKillTimeout, "must be positive, got %v", s.Timeout)
	}
	s = s.WithTimeout()
	switch s.Kind {
	case "":
		if s.RequiredWith != "" {
			return errkind.Usagef(FieldKiller, "required with %s", s.RequiredWith)
		}
		return nil
	case Exec:
		if err := s.Exec.Validate(); err != nil {
			return err
		}
		if strings.TrimSpace(s.Exec.RestoreCmd) == "" && s.RestoreNeeded != "" {
			return errkind.Usagef(FieldRestoreCmd, "required with %s", s.RestoreNeeded)
		}
		return nil
	case Docker:
		return s.Docker.Validate()
	case ChaosMesh:
		return s.Mesh.Validate()
	}
	return errkind.Usagef(FieldKiller, "unknown killer %q (want %s)", s.Kind, Kinds)
}

// WithTimeout returns s with Timeout set in the exec and docker options,
// as New uses them.
func (s Spec) WithTimeout() Spec {
	s.Exec.Timeout, s.Docker.Timeout = s.Timeout, s.Timeout
	return s
}

// New builds the killer of one run; a chaos-mesh killer's objects are
// named after runID (NewRunID). Kind "" builds a killer that refuses to
// kill (nothing is to be killed).
func (s Spec) New(runID string) (chaos.Killer, error) {
	s = s.WithTimeout()
	switch s.Kind {
	case Exec:
		return chaosexec.New(s.Exec)
	case Docker:
		return docker.New(s.Docker)
	case ChaosMesh:
		o := s.Mesh
		o.RunID = runID
		return chaosmesh.New(o)
	case "":
		return none{}, nil
	}
	return nil, errkind.Usagef(FieldKiller, "unknown killer %q (want %s)", s.Kind, Kinds)
}

// NetFaulter returns the network faults of a chaos-mesh killer (its
// NetworkChaos), nil for any other killer.
func NetFaulter(k chaos.Killer) remote.NetFaulter {
	if mk, ok := k.(*chaosmesh.Killer); ok {
		return chaosmesh.NewNetworker(mk)
	}
	return nil
}

// NewRunID names one run's chaos objects: lowercase letters and digits.
func NewRunID() string {
	return strconv.FormatInt(time.Now().Unix(), 36) + strconv.FormatUint(rand.Uint64()%(36*36*36*36), 36) //nolint:gosec // a name, not a secret
}

// none is the killer of a run that kills nothing.
type none struct{}

func (none) Name() string { return "none" }
func (none) Plan(context.Context, chaos.Broker) (chaos.KillPlan, error) {
	return chaos.KillPlan{}, errkind.Usagef(FieldKiller, "no killer given")
}
func (none) Kill(context.Context, chaos.Broker) (time.Time, error) {
	return time.Time{}, errkind.Usagef(FieldKiller, "no killer given")
}
func (none) Restore(context.Context, chaos.Broker) error {
	return errkind.Usagef(FieldKiller, "no killer given")
}
func (none) Cleanup(context.Context) error { return nil }
func (none) Log() []string                 { return nil }
