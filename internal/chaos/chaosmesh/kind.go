package chaosmesh

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// chaosKind describes a Chaos Mesh resource kplan creates (PodChaos,
// NetworkChaos) to the lifecycle code they share: deleting one and waiting
// until it is gone, and cleaning up the ones a killed kplan left behind.
type chaosKind struct {
	// kind names the resource in messages ("PodChaos").
	kind string
	// resource names it in API errors ("podchaos").
	resource string
	// listOptional: a list refused with NoMatch (no such resource) or
	// Forbidden (no right to list it) means kplan could not have created
	// one either, so there is nothing to clean up.
	listOptional bool
	newObject    func() client.Object
	newList      func() client.ObjectList
}

var (
	podChaosKind = chaosKind{
		kind:      "PodChaos",
		resource:  "podchaos",
		newObject: func() client.Object { return &v1alpha1.PodChaos{} },
		newList:   func() client.ObjectList { return &v1alpha1.PodChaosList{} },
	}
	networkChaosKind = chaosKind{
		kind:         "NetworkChaos",
		resource:     networkResource,
		listOptional: true,
		newObject:    func() client.Object { return &v1alpha1.NetworkChaos{} },
		newList:      func() client.ObjectList { return &v1alpha1.NetworkChaosList{} },
	}
)

// deleteAndWait deletes the object name of kind ck and waits until it is
// gone (Chaos Mesh's finalizer recovers the target first). NotFound, also
// of the resource itself, means there is nothing to delete.
func (ck chaosKind) deleteAndWait(ctx context.Context, c client.Client, host, ns, name string, timeout, poll time.Duration) error {
	ref := ns + "/" + name
	obj := ck.newObject()
	obj.SetNamespace(ns)
	obj.SetName(name)
	if err := c.Delete(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return kubeErr(err, host, "delete", ck.resource, ns)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), ck.newObject())
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return kubeErr(err, host, "get", ck.resource, ns)
		}
		if !time.Now().Before(deadline) {
			return errkind.New(errkind.Runtime, "", "%s %s is still there %s after its deletion: Chaos Mesh has not released its finalizer (is chaos-controller-manager running?)", ck.kind, ref, timeout)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for %s %s to go: %w", ck.kind, ref, ctx.Err())
		case <-t.C:
		}
	}
}

// deleteOwned deletes the objects names of kind ck that k created, calls
// disown for each one gone, and returns the first failure (one line: the
// others are alike).
func (ck chaosKind) deleteOwned(ctx context.Context, k *Killer, names []string, disown func(string)) error {
	var errs []error
	for _, name := range names {
		if err := ck.deleteAndWait(ctx, k.c, k.host, k.o.Namespace, name, k.o.InjectTimeout, k.poll); err != nil {
			errs = append(errs, err)
			continue
		}
		disown(name)
		k.logf("deleted %s %s/%s", ck.kind, k.o.Namespace, name)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// cleanup deletes every kplan-managed object of kind ck in ns, in name
// order, and returns the names it deleted (all of them, or those before
// the one that failed).
func (ck chaosKind) cleanup(ctx context.Context, c client.Client, host, ns string, timeout, poll time.Duration) ([]string, error) {
	list := ck.newList()
	err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{ManagedByLabel: ManagedByValue})
	if err != nil {
		if ck.listOptional && (meta.IsNoMatchError(err) || apierrors.IsForbidden(err)) {
			return nil, nil
		}
		return nil, kubeErr(err, host, "list", ck.resource, ns)
	}
	names := make([]string, 0, meta.LenList(list))
	err = meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("list %s: item %T is not an object", ck.resource, o)
		}
		names = append(names, obj.GetName())
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for i, name := range names {
		if err := ck.deleteAndWait(ctx, c, host, ns, name, timeout, poll); err != nil {
			return names[:i], err
		}
	}
	return names, nil
}

// cleanupFunc is cleanupWith or cleanupNetworkWith.
type cleanupFunc func(ctx context.Context, c client.Client, host, ns string, timeout, poll time.Duration) ([]string, error)

// cleanupFromOptions builds the client o names and runs cleanup in
// o.Namespace (Cleanup, CleanupNetwork).
func cleanupFromOptions(ctx context.Context, o Options, cleanup cleanupFunc) ([]string, error) {
	quiet()
	if err := (Options{Namespace: o.Namespace}).Validate(); err != nil {
		return nil, err
	}
	c, host, err := newClient(o)
	if err != nil {
		return nil, err
	}
	timeout := o.InjectTimeout
	if timeout <= 0 {
		timeout = DefaultInjectTimeout
	}
	return cleanup(ctx, c, host, o.Namespace, timeout, defaultPoll)
}

// cleanupWithBuiltClient runs cleanup with c in namespace
// (CleanupWithClient, CleanupNetworkWithClient).
func cleanupWithBuiltClient(ctx context.Context, c client.Client, namespace string, cleanup cleanupFunc) ([]string, error) {
	if err := (Options{Namespace: namespace}).Validate(); err != nil {
		return nil, err
	}
	return cleanup(ctx, c, "", namespace, DefaultInjectTimeout, defaultPoll)
}
