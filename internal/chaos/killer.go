package chaos

import (
	"context"
	"time"
)

// Broker is what a killer knows of the broker it acts on: Kafka's own
// metadata for it. Killers check their target against Host (a pod's name,
// FQDN or IP; a container's name or address; a VM's host name).
type Broker struct {
	ID   int32
	Host string // advertised host, as Kafka's metadata reports it
	Port int32
	Rack string
}

// KillPlan is what a killer would do to one broker, shown before it does it
// and printed alone under --dry-run.
type KillPlan struct {
	// Target names what will be hurt, e.g. "pod kafka/my-cluster-pool-a-3",
	// "container kafka-3", "host kafka-3.example".
	Target string `json:"target"`
	// Steps are the actions in words, one line each, in order.
	Steps []string `json:"steps"`
	// Manifest is the object or command to run, verbatim: a PodChaos as
	// YAML, a shell command; "" when there is none.
	Manifest string `json:"manifest,omitempty"`
}

// Killer hurts one broker of a cluster kplan does not run itself (Chaos
// Mesh, docker, any command). A cluster adapter for --bootstrap-server
// pairs it with Kafka's metadata: it checks through Kafka that the broker
// left and came back; the killer only acts on the platform. Each kind lives
// in its own package under internal/chaos, and only that package imports
// its platform's client.
type Killer interface {
	// Name is the killer's kind as --killer spells it: "chaos-mesh",
	// "docker", "exec".
	Name() string
	// Plan checks, reading only, that the killer can kill b (its target
	// exists, runs, and is this broker) and says how. A failed check is an
	// errkind.Refused error naming what differs.
	Plan(ctx context.Context, b Broker) (KillPlan, error)
	// Kill kills b and returns the time the kill took effect as the
	// platform reports it (e.g. the injection time Chaos Mesh records).
	Kill(ctx context.Context, b Broker) (time.Time, error)
	// Restore brings b back and returns once the platform says it runs;
	// the cluster adapter then waits until Kafka has it in every ISR.
	Restore(ctx context.Context, b Broker) error
	// Cleanup removes whatever the killer created (chaos objects). It is
	// safe to call more than once, also after a failed Kill, and is called
	// with a context that Ctrl-C does not cancel.
	Cleanup(ctx context.Context) error
	// Log returns what the killer's commands printed and the platform's
	// answers worth keeping, for the report; nil when there is nothing.
	Log() []string
}
