package localkafka

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

// goldenLab is a 3-broker lab on loopback in a fixed directory, so that
// chain names, classids and queue numbers are stable.
func goldenLab(brokers int) *State {
	cfg := Config{Brokers: brokers, BasePort: 19092, Dir: "/tmp/kplan-golden-lab"}
	return &State{Dir: cfg.Dir, Nodes: plan(cfg)}
}

func TestNetRules(t *testing.T) {
	tests := []struct {
		name    string
		brokers int
		mech    string
		conds   []NetCond
	}{
		{"netrules-nfqueue", 3, MechNFQueue, []NetCond{
			{Path: "broker-2", Condition: Condition{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05}},
			{Path: "broker-3", Condition: Partition()},
			{Path: PathClients, Condition: Condition{Delay: 30 * time.Millisecond}},
		}},
		{"netrules-rate", 3, MechNFQueue, []NetCond{
			{Path: "broker-1", Condition: Condition{Rate: 10_000_000}},
		}},
		{"netrules-netem", 3, MechNetem, []NetCond{
			{Path: "broker-2", Condition: Condition{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05}},
			{Path: PathClients, Condition: Condition{Delay: 30 * time.Millisecond, Rate: 5_000_000}},
		}},
		// 20 brokers: the clients' ports need two multiport rules (15 at most each).
		{"netrules-20-brokers", 20, MechNFQueue, []NetCond{
			{Path: PathClients, Condition: Condition{Loss: 0.1}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := goldenLab(tc.brokers)
			nc := &NetConds{Mechanism: tc.mech, Chain: chainName(s.Dir), Conds: tc.conds}
			for i := range nc.Conds {
				if tc.mech == MechNFQueue && nc.Conds[i].Condition.Delay > 0 {
					nc.Conds[i].Queue = queueBase(s.Dir) + uint16(i)
				}
			}
			var b strings.Builder
			for _, c := range s.netRules(nc) {
				b.WriteString(strings.Join(c, " ") + "\n")
			}
			golden.AssertString(t, tc.name+".txt", b.String())
		})
	}
}

func TestChainNameFitsIptables(t *testing.T) {
	for _, dir := range []string{"/", "/tmp/kplan-lab-0", strings.Repeat("/very/long/path", 40)} {
		assert.LessOrEqual(t, len(chainName(dir)), 28, dir)
		assert.NotZero(t, classid(dir, 0)>>16, "a classid's major is never 0")
		assert.GreaterOrEqual(t, int(queueBase(dir)), 1000)
		assert.LessOrEqual(t, int(queueBase(dir))+16, 65535)
	}
}

func TestParseLoss(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		err  string
	}{
		{"5%", 0.05, ""},
		{"0.5%", 0.005, ""},
		{"100%", 1, ""},
		{"0%", 0, ""},
		{"0.25", 0.25, ""},
		{" 10 % ", 0.1, ""},
		{"", 0, "want a percentage"},
		{"%", 0, "want a percentage"},
		{"five", 0, "want a percentage"},
		{"101%", 0, "0% to 100%"},
		{"-1%", 0, "0% to 100%"},
		{"1.5", 0, "0% to 100%"},
		{"NaN%", 0, "want a percentage"},
		{"Inf", 0, "want a percentage"},
		{"1e-2", 0, "want a percentage"},
		{"0x10", 0, "want a percentage"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseLoss(tc.in)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

func FuzzParseLoss(f *testing.F) {
	for _, s := range []string{"5%", "0.5%", "100%", "10%", "0.05", "", "%", "101%", "-0%", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseLoss(s)
		if err != nil {
			return
		}
		if !(v >= 0 && v <= 1) {
			t.Fatalf("ParseLoss(%q) = %g, outside 0..1", s, v)
		}
		back, err := ParseLoss(FormatLoss(v))
		require.NoError(t, err, "FormatLoss(%g) = %q parses back", v, FormatLoss(v))
		assert.InDelta(t, v, back, 1e-12)
		assert.NoError(t, Condition{Loss: v + 1e-300}.Validate())
	})
}

func TestConditionValidate(t *testing.T) {
	tests := []struct {
		name  string
		c     Condition
		field string
	}{
		{"negative delay", Condition{Delay: -time.Millisecond}, FieldDelay},
		{"delay too long", Condition{Delay: time.Minute}, FieldDelay},
		{"jitter without delay", Condition{Jitter: time.Millisecond}, FieldJitter},
		{"jitter beyond delay", Condition{Delay: time.Millisecond, Jitter: 2 * time.Millisecond}, FieldJitter},
		{"loss above 1", Condition{Loss: 1.5}, FieldLoss},
		{"negative rate", Condition{Rate: -1}, FieldRate},
		{"nothing", Condition{}, FieldDelay},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			require.Error(t, err)
			assert.Equal(t, errkind.Usage, errkind.KindOf(err))
			assert.Equal(t, tc.field, errkind.FieldOf(err))
		})
	}
	assert.NoError(t, Condition{Delay: 30 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.05, Rate: 1}.Validate())
	assert.NoError(t, Partition().Validate())
}

func TestConditionString(t *testing.T) {
	assert.Equal(t, "delay 30ms±5ms, loss 5%, rate 10000000B/s", Condition{Delay: 30 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.05, Rate: 10_000_000}.String())
	assert.Equal(t, "partition (100% loss)", Partition().String())
}

func TestParseNetPath(t *testing.T) {
	p, err := ParseNetPath("broker-2")
	require.NoError(t, err)
	assert.Equal(t, BrokerPath(2), p)
	p, err = ParseNetPath("clients")
	require.NoError(t, err)
	assert.Equal(t, ClientsPath(), p)
	for _, bad := range []string{"broker-0", "broker-x", "", "client"} {
		_, err := ParseNetPath(bad)
		assert.ErrorContains(t, err, "not a path", bad)
	}
}

// TestNFQMessages checks the netlink encoding against the kernel's layout:
// nlmsghdr (host order), nfgenmsg (queue big-endian), attributes padded to 4.
func TestNFQMessages(t *testing.T) {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v, nfAccept)
	binary.BigEndian.PutUint32(v[4:], 77)
	m := nfqMsg(nfqnlMsgVerdict, nlmFRequest, 9, 1234, nla(nfqaVerdictHdr, v))
	require.Len(t, m, 16+4+12)
	assert.Equal(t, uint32(len(m)), binary.NativeEndian.Uint32(m))
	assert.Equal(t, uint16(3<<8|1), binary.NativeEndian.Uint16(m[4:]))
	assert.Equal(t, uint16(1234), binary.BigEndian.Uint16(m[18:]))
	assert.Equal(t, uint16(12), binary.NativeEndian.Uint16(m[20:]), "attribute length")
	assert.Equal(t, uint32(77), binary.BigEndian.Uint32(m[28:]))
	assert.Len(t, nla(1, []byte{1, 2, 3, 4, 5}), 12, "padded to 4 bytes")

	// Two packet messages back to back, as the kernel batches them.
	hdr := make([]byte, 7)
	pkt := func(q uint16, id uint32) []byte {
		binary.BigEndian.PutUint32(hdr, id)
		return nfqMsg(nfqnlMsgPacket, 0, 0, q, nla(5, []byte{0, 0, 0, 1}), nla(nfqaPacketHdr, hdr))
	}
	qs, ids := parsePackets(append(pkt(10, 1), pkt(11, 2)...))
	assert.Equal(t, []uint16{10, 11}, qs)
	assert.Equal(t, []uint32{1, 2}, ids)
	qs, ids = parsePackets([]byte{1, 2, 3})
	assert.Empty(t, qs)
	assert.Empty(t, ids)
}

func FuzzParsePackets(f *testing.F) {
	hdr := make([]byte, 7)
	f.Add(nfqMsg(nfqnlMsgPacket, 0, 0, 7, nla(nfqaPacketHdr, hdr)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		qs, ids := parsePackets(b)
		assert.Len(t, ids, len(qs))
	})
}

func TestJitteredStaysInBounds(t *testing.T) {
	c := Condition{Delay: 10 * time.Millisecond, Jitter: 3 * time.Millisecond}
	for range 1000 {
		d := jittered(c)
		require.GreaterOrEqual(t, d, 7*time.Millisecond)
		require.LessOrEqual(t, d, 13*time.Millisecond)
	}
	assert.Equal(t, 5*time.Millisecond, jittered(Condition{Delay: 5 * time.Millisecond}))
}
