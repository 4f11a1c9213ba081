package chaosmesh

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"sync"
	"time"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// RBACDoc is where the Role kplan needs is written down; RBAC errors point
// at it.
const RBACDoc = "docs/chaos-mesh.md#rbac"

var quietOnce sync.Once

// quiet silences controller-runtime's global logger, which Chaos Mesh's
// webhook methods log to: kplan prints its own output, and an unset logger
// makes controller-runtime print a warning with a stack trace.
func quiet() { quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) }) }

// Scheme returns a scheme with the types the killer reads and writes:
// core/v1, batch/v1 (the workers' Job) and Chaos Mesh's v1alpha1.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register core/v1: %w", err)
	}
	if err := batchv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register batch/v1: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register chaos-mesh.org/v1alpha1: %w", err)
	}
	return s, nil
}

// apiTimeout bounds each request to the Kubernetes API server (a variable
// for the tests).
var apiTimeout = 10 * time.Second

// restConfig loads the Kubernetes client configuration the way kubectl
// does: the explicit file, else KUBECONFIG or ~/.kube/config, else the
// pod's in-cluster account. Its errors are one line naming the field.
func restConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return nil, errkind.Usagef("kubeconfig", "cannot read the kubeconfig file: %w", err)
	case clientcmd.IsContextNotFound(err):
		return nil, errkind.Usagef("context", "%w", err)
	case clientcmd.IsEmptyConfig(err):
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, errkind.Usagef("kubeconfig", "no Kubernetes configuration: give a kubeconfig file, set KUBECONFIG, or run kplan in a pod")
		}
	default:
		field := "kubeconfig"
		if context != "" {
			field = "context"
		}
		return nil, errkind.Usagef(field, "the Kubernetes configuration is not usable: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kplan"
	// client-go sets no timeout: a request to an API server that accepts the
	// connection and never answers would wait for ever.
	if cfg.Timeout == 0 {
		cfg.Timeout = apiTimeout
	}
	// Kubernetes' deprecation warnings would go to stderr between kplan's
	// lines.
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg, nil
}

// newClient builds the controller-runtime client for o. It does not reach
// the API server: the first call does.
func newClient(o Options) (client.Client, string, error) {
	cfg, err := restConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, "", err
	}
	s, err := Scheme()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, "", kubeErr(err, cfg.Host, "connect to", "the API server", "")
	}
	return c, cfg.Host, nil
}

// kubeErr gives a Kubernetes error one line and a kind: RBAC forbidden is
// refused (naming the verb and resource and pointing at the Role), Chaos
// Mesh's CRDs missing and an unreachable API server are runtime errors. It
// classifies with apierrors and meta, never by the text.
func kubeErr(err error, host, verb, resource, namespace string) error {
	if err == nil {
		return nil
	}
	where := ""
	if namespace != "" {
		where = " in namespace " + namespace
	}
	chaosResource := resource == "podchaos"
	switch {
	case meta.IsNoMatchError(err) && chaosResource,
		apierrors.IsNotFound(err) && chaosResource && verb == "create" && !namespaceMissing(err):
		return errkind.New(errkind.Runtime, "", "Chaos Mesh's CRDs are not installed: the API server has no podchaos.chaos-mesh.org/v1alpha1 (install Chaos Mesh first): %w", err)
	case apierrors.IsNotFound(err) && namespaceMissing(err):
		return errkind.Usagef("namespace", "namespace %q does not exist: %w", namespace, err)
	case apierrors.IsForbidden(err):
		return errkind.Refusedf("", "Kubernetes RBAC forbids kplan to %s %s%s (grant the Role in %s): %w", verb, resource, where, RBACDoc, err)
	case apierrors.IsUnauthorized(err):
		return errkind.Refusedf("kubeconfig", "the API server %s does not accept kplan's credentials: %w", host, err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return errkind.New(errkind.Runtime, "", "cannot reach the Kubernetes API server %s: %w", host, err)
	}
	return errkind.New(errkind.Runtime, "", "%s %s%s: %w", verb, resource, where, err)
}

// namespaceMissing reports whether a NotFound error is about the namespace
// rather than the object or resource, from the status details the API
// server sends.
func namespaceMissing(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces"
}
