//go:build integration

package lab_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/localkafka"
)

// TestLabLifecycle drives `kplan lab` as an operator would, from separate
// command invocations sharing only the lab directory.
func TestLabLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	base := 23092 + (os.Getpid()%40)*100
	port := strconv.Itoa(base)

	// A port in use is refused with one line, and nothing is left running.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+10))
	require.NoError(t, err)
	code, _, errOut := run("lab", "up", "--dir", dir, "--base-port", port)
	require.NoError(t, l.Close())
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "in use")

	code, out, errOut := run("lab", "up", "--dir", dir, "--base-port", port)
	require.Equal(t, 0, code, errOut)
	t.Cleanup(func() {
		if s, err := localkafka.Load(dir); err == nil {
			_ = s.Down(0)
		}
	})
	assert.Equal(t, "127.0.0.1:"+port+",127.0.0.1:"+strconv.Itoa(base+10)+",127.0.0.1:"+strconv.Itoa(base+20)+"\n", out)

	code, _, errOut = run("lab", "up", "--dir", dir, "--base-port", port)
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "already up")

	code, _, errOut = run("lab", "kill", "broker-9", "--dir", dir)
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Equal(t, "kplan: no broker-9 in this 3-broker lab\n", errOut)

	code, _, errOut = run("lab", "kill", "broker-2", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	code, out, errOut = run("lab", "status", "--dir", dir, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		Brokers []struct {
			ID    int32 `json:"id"`
			Alive bool  `json:"alive"`
			Rack  string
		} `json:"brokers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Brokers, 3)
	assert.True(t, st.Brokers[0].Alive)
	assert.False(t, st.Brokers[1].Alive)
	assert.Equal(t, "rack-c", st.Brokers[2].Rack)

	code, _, errOut = run("lab", "restart", "broker-2", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = run("lab", "elect-preferred", "--dir", dir)
	require.Equal(t, 0, code, errOut)

	s, err := localkafka.Load(dir)
	require.NoError(t, err)
	code, _, errOut = run("lab", "down", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	for _, n := range s.Nodes {
		assert.False(t, n.Alive(), "node-%d (pid %d) still runs after down", n.ID, n.PID)
	}
	code, _, errOut = run("lab", "status", "--dir", filepath.Join(dir, "none"))
	assert.Equal(t, cmdutil.ExitUsage, code)
	assert.Contains(t, errOut, "no lab in")
}

// TestLabUpSecured: `kplan lab up --security sasl_plaintext` on one broker
// prints the client.properties path on stderr (stdout stays the bootstrap
// servers), writes it 0600, and status, restart and elect-preferred work
// through it.
func TestLabUpSecured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	base := 24092 + (os.Getpid()%40)*100
	port := strconv.Itoa(base)
	code, out, errOut := run("lab", "up", "--dir", dir, "--base-port", port, "--brokers", "1", "--security", "sasl_plaintext")
	require.Equal(t, 0, code, errOut)
	t.Cleanup(func() {
		if s, err := localkafka.Load(dir); err == nil {
			_ = s.Down(0)
		}
	})
	assert.Equal(t, "127.0.0.1:"+port+"\n", out)
	cc := filepath.Join(dir, "client.properties")
	assert.Contains(t, errOut, "client properties (SASL_PLAINTEXT, SCRAM-SHA-512 user kplan, mode 0600): "+cc)
	fi, err := os.Stat(cc)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	code, _, errOut = run("lab", "kill", "broker-1", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = run("lab", "restart", "broker-1", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = run("lab", "elect-preferred", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	code, out, errOut = run("lab", "status", "--dir", dir, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		Security     string `json:"security"`
		ClientConfig string `json:"client_config"`
		Brokers      []struct {
			Alive bool `json:"alive"`
		} `json:"brokers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.Equal(t, "SASL_PLAINTEXT", st.Security)
	assert.Equal(t, cc, st.ClientConfig)
	require.Len(t, st.Brokers, 1)
	assert.True(t, st.Brokers[0].Alive)
	code, _, errOut = run("lab", "down", "--dir", dir)
	require.Equal(t, 0, code, errOut)
}
