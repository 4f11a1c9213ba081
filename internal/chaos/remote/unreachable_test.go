package remote

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
)

// TestNewUnreachable: chaos --bootstrap-server on a broker that accepts the
// connection and never answers fails within the connection timeout (it
// took the client's 10 s retry plus a 10 s read before), with
// kafka.ConnError's line naming the address, as audit does. The time taken
// is logged, not asserted.
func TestNewUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for len(held) > 0 {
			_ = (<-held).Close()
		}
	})
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = New(ctx, Options{Conn: kafka.ConnOptions{BootstrapServers: addr, Timeout: time.Second}, Version: "test", Killer: &fakeKiller{}})
	t.Logf("%v: %v", time.Since(start).Round(time.Millisecond), err)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "returned only at the caller's deadline")
	assert.ErrorContains(t, err, "cluster unreachable: no broker at "+addr+" answered within 1s")
	assert.ErrorIs(t, err, kafka.ErrUnreachable)
	assert.Equal(t, errkind.Runtime, errkind.KindOf(err))
	assert.Equal(t, "bootstrap-server", errkind.FieldOf(err))
}
