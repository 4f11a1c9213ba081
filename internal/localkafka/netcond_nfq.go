package localkafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// netd: the delay process of a lab whose kernel has no tc netem. It binds
// the NFQUEUE numbers of lab.json's delayed paths over netfilter's netlink
// protocol (nfnetlink_queue, written out here with x/sys/unix: no cgo, no
// libnetfilter_queue) and accepts each queued packet delay±jitter after it
// arrived. Each queue is a FIFO whose release times never go backwards, so
// a constant delay keeps TCP's order and jitter delays but never reorders
// (as netem with a rate); packets beyond nfqLimit per queue are dropped by
// the kernel (netem's default limit is also 1000).

const (
	nfnlSubsysQueue   = 3
	nfqnlMsgPacket    = 0
	nfqnlMsgVerdict   = 1
	nfqnlMsgConfig    = 2
	nfqaPacketHdr     = 1
	nfqaVerdictHdr    = 2
	nfqaCfgCmd        = 1
	nfqaCfgParams     = 2
	nfqaCfgQueueMax   = 3
	nfqnlCfgCmdBind   = 1
	nfqnlCopyMeta     = 1
	nfAccept          = 1
	nfqLimit          = 1000
	netlinkNoENOBUFS  = 5
	nlmsgHdrLen       = 16
	nfgenHdrLen       = 4
	nlaHdrLen         = 4
	nlmFRequest       = 1
	nlmFAck           = 4
	nlmsgError        = 2
	nfnetlinkV0       = 0
	nfqnlMsgTypeShift = 8
)

// nfqSocket is a netlink socket bound to some NFQUEUE numbers.
type nfqSocket struct {
	fd  int
	mu  sync.Mutex
	seq uint32
}

func openNFQ() (*nfqSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, netlinkNoENOBUFS, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	return &nfqSocket{fd: fd}, nil
}

// nfqMsg builds one nfnetlink_queue message for queue q.
func nfqMsg(typ uint16, flags uint16, seq uint32, q uint16, attrs ...[]byte) []byte {
	n := nlmsgHdrLen + nfgenHdrLen
	for _, a := range attrs {
		n += len(a)
	}
	b := make([]byte, n)
	binary.NativeEndian.PutUint32(b[0:], uint32(n))
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<nfqnlMsgTypeShift|typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	b[16] = unix.AF_UNSPEC
	b[17] = nfnetlinkV0
	binary.BigEndian.PutUint16(b[18:], q)
	off := nlmsgHdrLen + nfgenHdrLen
	for _, a := range attrs {
		copy(b[off:], a)
		off += len(a)
	}
	return b
}

// nla is one netlink attribute, padded to 4 bytes.
func nla(typ uint16, payload []byte) []byte {
	n := nlaHdrLen + len(payload)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[nlaHdrLen:], payload)
	return b
}

// bind binds queue q in copy-meta mode with its limit and waits for the
// kernel's answer.
func (s *nfqSocket) bind(q uint16) error {
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0} // command, pad, pf (unused since Linux 3.8)
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0)
	params[4] = nfqnlCopyMeta
	limit := binary.BigEndian.AppendUint32(nil, nfqLimit)
	for _, attrs := range [][][]byte{{nla(nfqaCfgCmd, cmd)}, {nla(nfqaCfgParams, params)}, {nla(nfqaCfgQueueMax, limit)}} {
		s.seq++
		if err := s.send(nfqMsg(nfqnlMsgConfig, nlmFRequest|nlmFAck, s.seq, q, attrs...)); err != nil {
			return err
		}
		if err := s.ack(s.seq); err != nil {
			return fmt.Errorf("binding NFQUEUE %d: %w", q, err)
		}
	}
	return nil
}

func (s *nfqSocket) send(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return unix.Sendto(s.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// ack reads the kernel's answer to request seq.
func (s *nfqSocket) ack(seq uint32) error {
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(s.fd, buf, 0)
		if err != nil {
			return err
		}
		for b := buf[:n]; len(b) >= nlmsgHdrLen; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < nlmsgHdrLen || l > len(b) {
				break
			}
			if binary.NativeEndian.Uint16(b[4:]) == nlmsgError && binary.NativeEndian.Uint32(b[8:]) == seq && l >= nlmsgHdrLen+4 {
				if code := int32(binary.NativeEndian.Uint32(b[16:])); code != 0 {
					return unix.Errno(-code)
				}
				return nil
			}
			b = b[(l+3)&^3:]
		}
	}
}

// verdict accepts packet id of queue q.
func (s *nfqSocket) verdict(q uint16, id uint32) error {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v, nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	return s.send(nfqMsg(nfqnlMsgVerdict, nlmFRequest, 0, q, nla(nfqaVerdictHdr, v)))
}

// parsePackets returns the (queue, packet id) of each packet message in b.
func parsePackets(b []byte) (qs []uint16, ids []uint32) {
	for len(b) >= nlmsgHdrLen+nfgenHdrLen {
		l := int(binary.NativeEndian.Uint32(b))
		if l < nlmsgHdrLen || l > len(b) {
			return qs, ids
		}
		typ := binary.NativeEndian.Uint16(b[4:])
		if typ == nfnlSubsysQueue<<nfqnlMsgTypeShift|nfqnlMsgPacket && l >= nlmsgHdrLen+nfgenHdrLen {
			q := binary.BigEndian.Uint16(b[18:])
			for a := b[nlmsgHdrLen+nfgenHdrLen : l]; len(a) >= nlaHdrLen; {
				al := int(binary.NativeEndian.Uint16(a))
				if al < nlaHdrLen || al > len(a) {
					break
				}
				if binary.NativeEndian.Uint16(a[2:])&0x3fff == nfqaPacketHdr && al >= nlaHdrLen+4 {
					qs, ids = append(qs, q), append(ids, binary.BigEndian.Uint32(a[nlaHdrLen:]))
					break
				}
				a = a[min(len(a), (al+3)&^3):]
			}
		}
		b = b[min(len(b), (l+3)&^3):]
	}
	return qs, ids
}

// held is a packet waiting for its release time.
type held struct {
	id  uint32
	due time.Time
}

// RunNetd serves the NFQUEUE numbers of the lab in dir until ctx ends, then
// accepts every packet it still holds. It writes "ready\n" to ready once it
// serves every queue.
func RunNetd(ctx context.Context, dir string, ready func()) error {
	s, err := Load(dir)
	if err != nil {
		return err
	}
	if s.NetCond == nil {
		return errors.New("no network conditions in lab.json")
	}
	sock, err := openNFQ()
	if err != nil {
		return err
	}
	defer unix.Close(sock.fd) //nolint:errcheck // exiting
	queues := map[uint16]chan held{}
	conds := map[uint16]Condition{}
	for _, c := range s.NetCond.Conds {
		if c.Queue == 0 {
			continue
		}
		if err := sock.bind(c.Queue); err != nil {
			return err
		}
		queues[c.Queue] = make(chan held, nfqLimit+16)
		conds[c.Queue] = c.Condition
	}
	var wg sync.WaitGroup
	for q, ch := range queues {
		wg.Go(func() { release(ctx, sock, q, ch) })
	}
	ready()
	go func() {
		<-ctx.Done()
		_ = unix.Shutdown(sock.fd, unix.SHUT_RD)
	}()
	buf := make([]byte, 1<<16)
	var last = map[uint16]time.Time{}
	for ctx.Err() == nil {
		n, _, err := unix.Recvfrom(sock.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) {
				continue
			}
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("netd: reading packets: %w", err)
		}
		if n == 0 {
			break
		}
		now := time.Now()
		qs, ids := parsePackets(buf[:n])
		for i, q := range qs {
			ch, ok := queues[q]
			if !ok {
				continue
			}
			due := now.Add(jittered(conds[q]))
			if due.Before(last[q]) {
				due = last[q] // never reorder
			}
			last[q] = due
			select {
			case ch <- held{id: ids[i], due: due}:
			default:
				_ = sock.verdict(q, ids[i]) // over the limit: let it through
			}
		}
	}
	for _, ch := range queues {
		close(ch)
	}
	wg.Wait()
	return nil
}

// jittered is c's delay with a uniform jitter in [-Jitter, +Jitter].
func jittered(c Condition) time.Duration {
	d := c.Delay
	if c.Jitter > 0 {
		d += time.Duration(rand.Int64N(int64(2*c.Jitter)+1)) - c.Jitter
	}
	return max(d, 0)
}

// release accepts each held packet of queue q at its due time; once ch is
// closed (netd ends) it accepts the rest at once.
func release(ctx context.Context, sock *nfqSocket, q uint16, ch chan held) {
	for h := range ch {
		if d := time.Until(h.due); d > 0 && ctx.Err() == nil {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if err := sock.verdict(q, h.id); err != nil {
			fmt.Fprintf(os.Stderr, "netd: verdict for packet %d of queue %d: %v\n", h.id, q, err)
		}
	}
}

// MaybeNetd runs netd and exits when NetdEnv is set. startNetd re-executes
// os.Executable(), which in a test is the test binary: the TestMain of a
// package whose tests set network conditions calls MaybeNetd first.
func MaybeNetd() {
	dir := os.Getenv(NetdEnv)
	if dir == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err := RunNetd(ctx, dir, NetdReady)
	if err != nil {
		fmt.Fprintln(os.Stderr, "netd:", err)
		os.Exit(1)
	}
	os.Exit(0) //nolint:gocritic // stop is only the signal handler
}

// NetdReady tells startNetd that netd serves its queues: "ready" on stdout,
// which it then closes.
func NetdReady() {
	fmt.Fprint(os.Stdout, "ready\n")
	_ = os.Stdout.Close()
}
