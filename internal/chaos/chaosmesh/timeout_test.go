package chaosmesh

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// TestSilentAPIServer: an API server that accepts the connection and the
// TLS handshake but never answers fails `kplan chaos cleanup` (and every
// other call) within apiTimeout, naming the server; client-go alone waits
// for ever. The time taken is logged, not asserted.
func TestSilentAPIServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: silent
  cluster:
    server: `+srv.URL+`
    insecure-skip-tls-verify: true
contexts:
- name: silent
  context: {cluster: silent, user: u}
current-context: silent
users:
- name: u
  user: {token: t}
`), 0o600))
	old := apiTimeout
	apiTimeout = time.Second
	t.Cleanup(func() { apiTimeout = old })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := Cleanup(ctx, Options{Namespace: "kafka", Kubeconfig: kubeconfig})
	t.Logf("%v: %v", time.Since(start).Round(time.Millisecond), err)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "returned only at the caller's deadline")
	assert.ErrorContains(t, err, "cannot reach the Kubernetes API server "+srv.URL)
	assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
}
