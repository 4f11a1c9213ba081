package kafka

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// silentListener accepts connections and never answers: a broker that
// hangs, or a port behind a firewall that lets the handshake through.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestUnreachableWithinTimeout: a bootstrap server that refuses the
// connection, or accepts it and never answers, fails Snapshot and Ping with
// "cluster unreachable" naming the address and the timeout, a runtime
// error of field bootstrap-server, and returns by itself (the caller's
// deadline is far later). The time taken is logged, not asserted.
func TestUnreachableWithinTimeout(t *testing.T) {
	for name, addr := range map[string]string{"closed port": closedPort(t), "silent broker": silentListener(t)} {
		for _, call := range []string{"Snapshot", "Ping"} {
			t.Run(name+"/"+call, func(t *testing.T) {
				a := NewAdmin(ConnOptions{BootstrapServers: addr, Timeout: 2 * time.Second}, "test")
				defer a.Close()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				start := time.Now()
				var err error
				if call == "Snapshot" {
					_, err = a.Snapshot(ctx, nil)
				} else {
					err = a.Ping(ctx)
				}
				t.Logf("%v: %v", time.Since(start).Round(time.Millisecond), err)
				require.Error(t, err)
				require.NoError(t, ctx.Err(), "returned only at the caller's deadline")
				assert.ErrorContains(t, err, "cluster unreachable: no broker at "+addr+" answered within 2s")
				assert.ErrorIs(t, err, ErrUnreachable)
				assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
				assert.Equal(t, "bootstrap-server", errkind.FieldOf(err))
			})
		}
	}
}
