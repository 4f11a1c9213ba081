// Package k8stest runs a real Kubernetes control plane for integration
// tests, one per test binary: etcd (Debian's etcd-server), kube-apiserver
// (built from k8s.io/kubernetes by `make k8s`) with RBAC and token
// authentication, Chaos Mesh's CRDs, and Chaos Mesh's own
// chaos-controller-manager running outside a cluster against it. No kubelet
// runs: BrokerPods creates pods standing for a lab's brokers and a node
// agent that plays the kubelet's and the StatefulSet controller's parts.
//
// The binaries are found through $KPLAN_KUBE_APISERVER (the kube-apiserver
// binary), $KPLAN_CHAOS_MESH (the directory holding
// chaos-controller-manager and crd.yaml) and $KPLAN_ETCD (default: etcd on
// PATH); without them, under the repository's .cache as `make k8s` leaves
// them. A missing binary fails the test with one line; nothing is skipped.
//
// Use it from a test binary's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(k8stest.Main(m)) }
//
// or, with a labtest lab in the same binary (the lab stops first):
//
//	func TestMain(m *testing.M) { os.Exit(k8stest.Stop(labtest.Main(m))) }
//
// and call k8stest.Shared(t) in each test that needs the control plane.
package k8stest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	chaosv1alpha1 "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace is where the tests' pods and chaos objects live.
const Namespace = "kafka"

// ChaosMeshNamespace is the namespace Chaos Mesh's controller runs for.
const ChaosMeshNamespace = "chaos-mesh"

// RestrictedUser is the user of Env.RestrictedKubeconfig.
const RestrictedUser = "restricted"

// OperatorUser is the user of Env.OperatorKubeconfig.
const OperatorUser = "operator"

// Env is one control plane per test binary: etcd, kube-apiserver (RBAC on,
// token auth), Chaos Mesh's CRDs, and Chaos Mesh's controller-manager
// running outside a cluster.
type Env struct {
	// Kubeconfig is a kubeconfig file of the admin user (system:masters).
	Kubeconfig string
	// RestrictedKubeconfig is a kubeconfig file of user "restricted": it
	// may get, list and watch pods in Namespace, and nothing on podchaos
	// (so creating a PodChaos is 403).
	RestrictedKubeconfig string
	// OperatorKubeconfig is a kubeconfig file of user "operator", who has
	// no rights until a test binds a Role to it (e.g. the Role the docs
	// tell operators to grant kplan).
	OperatorKubeconfig string
	// Namespace is "kafka", with a "default" ServiceAccount.
	Namespace string
	// Client is a controller-runtime client of the admin user, with a
	// scheme holding client-go's types (core/v1 ...) and Chaos Mesh's
	// v1alpha1.
	Client client.Client
	// Dir holds the control plane's files: data, certificates, kubeconfigs
	// and the processes' logs (*.log).
	Dir string

	// Server is the API server's URL (https://127.0.0.1:PORT).
	Server string
	// Scheme is Client's scheme.
	Scheme *runtime.Scheme
	// StartedIn is how long the control plane took to start (processes,
	// CRDs, objects), for the record.
	StartedIn time.Duration

	rest  *rest.Config
	watch client.WithWatch
	procs []*proc
}

var (
	mu     sync.Mutex
	once   sync.Once
	shared *Env
	err    error
)

// Shared returns the binary's control plane, starting it on first use (it
// takes a few seconds). A missing binary or a failed start fails t with
// the reason (and the logs' tails); Main or Stop stops it.
func Shared(t testing.TB) *Env {
	t.Helper()
	once.Do(func() {
		e, serr := start()
		mu.Lock()
		shared, err = e, serr
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("k8stest: %v", err)
	}
	return shared
}

// Main is for TestMain: it runs the tests, then stops the control plane
// (Stop). With labtest in the same binary use Stop(labtest.Main(m)).
func Main(m *testing.M) int { return Stop(m.Run()) }

// Stop stops the control plane if one was started and returns code, or 1
// when stopping failed. When code is not 0 (tests failed) it prints the
// tails of the control plane's logs and keeps Dir; otherwise it removes it.
func Stop(code int) int {
	mu.Lock()
	e := shared
	shared = nil
	mu.Unlock()
	if e == nil {
		return code
	}
	if serr := e.stop(); serr != nil {
		fmt.Fprintf(os.Stderr, "k8stest: stopping the control plane: %v\n", serr)
		code = 1
	}
	if code != 0 {
		for _, p := range e.procs {
			fmt.Fprintf(os.Stderr, "k8stest: the end of %s:\n%s\n", p.log, tail(p.log, 20))
		}
		fmt.Fprintf(os.Stderr, "k8stest: control plane files kept in %s\n", e.Dir)
		return code
	}
	_ = os.RemoveAll(e.Dir)
	return code
}

// binaries are the control plane's programs.
type binaries struct {
	etcd, apiserver, controller, crds string
}

// findBinaries looks for the control plane's programs: the environment
// first, then the repository's .cache (as `make k8s` leaves it).
func findBinaries() (binaries, error) {
	var b binaries
	root := repoRoot()
	b.etcd = os.Getenv("KPLAN_ETCD")
	if b.etcd == "" {
		p, lerr := lookPath("etcd")
		if lerr != nil {
			return b, errors.New("etcd not found on PATH (run `make k8s`, which installs Debian's etcd-server, or set KPLAN_ETCD)")
		}
		b.etcd = p
	}
	b.apiserver = os.Getenv("KPLAN_KUBE_APISERVER")
	if b.apiserver == "" {
		b.apiserver = newest(filepath.Join(root, ".cache", "k8s-v*", "kube-apiserver"))
	}
	if !isFile(b.apiserver) {
		return b, errors.New("kube-apiserver not found (run `make k8s`, or set KPLAN_KUBE_APISERVER to the binary)")
	}
	dir := os.Getenv("KPLAN_CHAOS_MESH")
	if dir == "" {
		dir = filepath.Dir(newest(filepath.Join(root, ".cache", "chaos-mesh-*", "chaos-controller-manager")))
	}
	b.controller = filepath.Join(dir, "chaos-controller-manager")
	b.crds = filepath.Join(dir, "crd.yaml")
	if !isFile(b.controller) || !isFile(b.crds) {
		return b, errors.New("chaos-controller-manager and crd.yaml (Chaos Mesh) not found (run `make k8s`, or set KPLAN_CHAOS_MESH to their directory)")
	}
	return b, nil
}

// repoRoot is the nearest directory upwards holding kplan's go.mod ("" if
// none): tests run in their package's directory.
func repoRoot() string {
	d, werr := os.Getwd()
	if werr != nil {
		return ""
	}
	for {
		if b, rerr := os.ReadFile(filepath.Join(d, "go.mod")); rerr == nil && bytes.HasPrefix(b, []byte("module github.com/kplan-dev/kplan\n")) {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// newest returns the last match of pattern in lexical order, "" if none.
func newest(pattern string) string {
	m, _ := filepath.Glob(pattern)
	if len(m) == 0 {
		return ""
	}
	slices.Sort(m)
	return m[len(m)-1]
}

func isFile(p string) bool {
	st, serr := os.Stat(p)
	return p != "" && serr == nil && st.Mode().IsRegular()
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort() (int, error) {
	l, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		return 0, lerr
	}
	defer l.Close() //nolint:errcheck // a listener only probed
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	var out []int
	for len(out) < n {
		p, perr := freePort()
		if perr != nil {
			return nil, perr
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func token() (string, error) {
	b := make([]byte, 16)
	if _, rerr := rand.Read(b); rerr != nil {
		return "", rerr
	}
	return hex.EncodeToString(b), nil
}

// start brings the control plane up; on failure it stops what it started
// and returns an error carrying the logs' tails.
func start() (*Env, error) {
	bins, ferr := findBinaries()
	if ferr != nil {
		return nil, ferr
	}
	dir, derr := os.MkdirTemp("", "kplan-k8stest-")
	if derr != nil {
		return nil, derr
	}
	e := &Env{Dir: dir, Namespace: Namespace}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if serr := e.up(ctx, bins); serr != nil {
		var logs strings.Builder
		for _, p := range e.procs {
			fmt.Fprintf(&logs, "\nthe end of %s:\n%s", p.log, tail(p.log, 15))
		}
		if stopErr := e.stop(); stopErr != nil {
			serr = errors.Join(serr, stopErr)
		}
		return nil, fmt.Errorf("starting the control plane (files in %s): %w%s", dir, serr, logs.String())
	}
	e.StartedIn = time.Since(began)
	return e, nil
}

func (e *Env) up(ctx context.Context, bins binaries) error {
	ports, perr := freePorts(5)
	if perr != nil {
		return perr
	}
	etcdClient, etcdPeer, apiPort, metricsPort, webhookPort := ports[0], ports[1], ports[2], ports[3], ports[4]

	// etcd.
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	p, serr := e.spawn("etcd", bins.etcd, nil,
		"--name", "k8stest", "--data-dir", filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "k8stest="+peerURL)
	if serr != nil {
		return serr
	}
	if werr := waitHTTP(ctx, p, etcdURL+"/health", "", nil); werr != nil {
		return fmt.Errorf("etcd: %w", werr)
	}

	// kube-apiserver.
	saKey, saPub, kerr := writeServiceAccountKeys(e.Dir)
	if kerr != nil {
		return kerr
	}
	adminToken, terr := token()
	if terr != nil {
		return terr
	}
	restrictedToken, terr := token()
	if terr != nil {
		return terr
	}
	operatorToken, terr := token()
	if terr != nil {
		return terr
	}
	tokens := filepath.Join(e.Dir, "tokens.csv")
	csv := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n%s,%s,%s-uid\n%s,%s,%s-uid\n", adminToken,
		restrictedToken, RestrictedUser, RestrictedUser, operatorToken, OperatorUser, OperatorUser)
	if werr := os.WriteFile(tokens, []byte(csv), 0o600); werr != nil {
		return werr
	}
	e.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	p, serr = e.spawn("kube-apiserver", bins.apiserver, nil,
		"--etcd-servers="+etcdURL,
		"--secure-port="+strconv.Itoa(apiPort), "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--cert-dir="+filepath.Join(e.Dir, "apiserver-certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--profiling=false")
	if serr != nil {
		return serr
	}
	if werr := waitHTTP(ctx, p, e.Server+"/readyz", adminToken, insecureTransport()); werr != nil {
		return fmt.Errorf("kube-apiserver: %w", werr)
	}
	e.Kubeconfig = filepath.Join(e.Dir, "admin.kubeconfig")
	e.RestrictedKubeconfig = filepath.Join(e.Dir, "restricted.kubeconfig")
	if werr := os.WriteFile(e.Kubeconfig, kubeconfig(e.Server, "admin", adminToken, ""), 0o600); werr != nil {
		return werr
	}
	if werr := os.WriteFile(e.RestrictedKubeconfig, kubeconfig(e.Server, RestrictedUser, restrictedToken, Namespace), 0o600); werr != nil {
		return werr
	}
	e.OperatorKubeconfig = filepath.Join(e.Dir, "operator.kubeconfig")
	if werr := os.WriteFile(e.OperatorKubeconfig, kubeconfig(e.Server, OperatorUser, operatorToken, Namespace), 0o600); werr != nil {
		return werr
	}
	e.rest = &rest.Config{Host: e.Server, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}

	// Chaos Mesh's CRDs, then the clients that know them.
	if cerr := installCRDs(ctx, e.rest, bins.crds); cerr != nil {
		return cerr
	}
	e.Scheme = runtime.NewScheme()
	if aerr := clientgoscheme.AddToScheme(e.Scheme); aerr != nil {
		return aerr
	}
	if aerr := chaosv1alpha1.AddToScheme(e.Scheme); aerr != nil {
		return aerr
	}
	w, cerr := client.NewWithWatch(e.rest, client.Options{Scheme: e.Scheme})
	if cerr != nil {
		return cerr
	}
	e.watch, e.Client = w, w
	if oerr := e.objects(ctx); oerr != nil {
		return oerr
	}

	// Chaos Mesh's controller-manager, outside a cluster.
	certs := filepath.Join(e.Dir, "chaos-mesh-certs")
	if werr := writeWebhookCerts(certs); werr != nil {
		return werr
	}
	env := []string{
		"KUBECONFIG=" + e.Kubeconfig,
		"ENABLE_LEADER_ELECTION=false", "ENABLED_WEBHOOKS=",
		"NAMESPACE=" + ChaosMeshNamespace,
		"SECURITY_MODE=false", "CHAOSD_SECURITY_MODE=false",
		"METRICS_HOST=127.0.0.1", "METRICS_PORT=" + strconv.Itoa(metricsPort),
		"WEBHOOK_HOST=127.0.0.1", "WEBHOOK_PORT=" + strconv.Itoa(webhookPort),
		"CERTS_DIR=" + certs,
		"PPROF_ADDR=0",
	}
	p, serr = e.spawn("chaos-controller-manager", bins.controller, env, "-kubeconfig", e.Kubeconfig)
	if serr != nil {
		return serr
	}
	if werr := waitHTTP(ctx, p, "http://127.0.0.1:"+strconv.Itoa(metricsPort)+"/metrics", "", nil); werr != nil {
		return fmt.Errorf("chaos-controller-manager: %w", werr)
	}
	return nil
}

// objects creates what a cluster's controllers would have made: the
// namespaces, the "default" ServiceAccount, and the restricted user's Role.
func (e *Env) objects(ctx context.Context) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ChaosMeshNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: Namespace}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "kplan-pod-reader", Namespace: Namespace},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "kplan-pod-reader", Namespace: Namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "kplan-pod-reader"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: RestrictedUser}},
		},
	}
	for _, o := range objs {
		if cerr := e.Client.Create(ctx, o); cerr != nil && !apierrors.IsAlreadyExists(cerr) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), cerr)
		}
	}
	return nil
}

// installCRDs creates every CustomResourceDefinition of path (Chaos Mesh's
// manifests/crd.yaml) and waits until each is Established.
func installCRDs(ctx context.Context, cfg *rest.Config, path string) error {
	c, cerr := client.New(cfg, client.Options{})
	if cerr != nil {
		return cerr
	}
	f, oerr := os.Open(path)
	if oerr != nil {
		return oerr
	}
	defer f.Close() //nolint:errcheck // read only
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(f), 1<<20)
	var names []string
	for {
		var u unstructured.Unstructured
		if derr := dec.Decode(&u.Object); errors.Is(derr, io.EOF) {
			break
		} else if derr != nil {
			return fmt.Errorf("%s: %w", path, derr)
		}
		if u.Object == nil || u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if cerr := c.Create(ctx, &u); cerr != nil && !apierrors.IsAlreadyExists(cerr) {
			return fmt.Errorf("creating CRD %s: %w", u.GetName(), cerr)
		}
		names = append(names, u.GetName())
	}
	if len(names) == 0 {
		return fmt.Errorf("%s holds no CustomResourceDefinition", path)
	}
	for _, name := range names {
		for {
			var u unstructured.Unstructured
			u.SetAPIVersion("apiextensions.k8s.io/v1")
			u.SetKind("CustomResourceDefinition")
			if gerr := c.Get(ctx, client.ObjectKey{Name: name}, &u); gerr == nil && established(&u) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w", name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// kubeconfig renders a kubeconfig for a bearer token (the serving
// certificate is self-signed, hence insecure-skip-tls-verify).
func kubeconfig(server, user, tok, namespace string) []byte {
	ns := ""
	if namespace != "" {
		ns = "\n    namespace: " + namespace
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: k8stest
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: %s
  user:
    token: %s
contexts:
- name: %s@k8stest
  context:
    cluster: k8stest
    user: %s%s
current-context: %s@k8stest
`, server, user, tok, user, user, ns, user)
}

// waitHTTP polls url until it answers 200, p dies, or ctx ends.
func waitHTTP(ctx context.Context, p *proc, url, bearer string, tr http.RoundTripper) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	var last error
	for {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if rerr != nil {
			return rerr
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, herr := hc.Do(req)
		if herr == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			herr = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		last = herr
		if p.exited() {
			return fmt.Errorf("exited while starting (%s)", p.state())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %w)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(path string, n int) string {
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		return "(no log: " + rerr.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// DocYAML returns the first YAML block under heading (a whole line, e.g.
// "## RBAC") of the Markdown file at path: the manifests the docs tell
// operators to apply, which the tests apply as written.
func DocYAML(t testing.TB, path, heading string) []byte {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("k8stest: %v", err)
	}
	_, after, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("k8stest: %s has no %q section", path, heading)
	}
	_, after, ok = strings.Cut(after, "```yaml\n")
	if !ok {
		t.Fatalf("k8stest: %s's %q section has no YAML block", path, heading)
	}
	block, _, _ := strings.Cut(after, "```")
	return []byte(block)
}
