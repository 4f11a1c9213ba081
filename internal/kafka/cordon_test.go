package kafka

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCordonOf(t *testing.T) {
	dir := func(name string, cordoned bool, code int16) kmsg.DescribeLogDirsResponseDir {
		d := kmsg.NewDescribeLogDirsResponseDir()
		d.Dir, d.IsCordoned, d.ErrorCode = name, cordoned, code
		return d
	}
	resp := func(version int16, dirs ...kmsg.DescribeLogDirsResponseDir) *kmsg.DescribeLogDirsResponse {
		r := kmsg.NewPtrDescribeLogDirsResponse()
		r.Version, r.Dirs = version, dirs
		return r
	}
	tests := []struct {
		name         string
		resp         *kmsg.DescribeLogDirsResponse
		dirs, cordon []string
		all, unknown bool
	}{
		{"none", resp(5, dir("/b", false, 0), dir("/a", false, 0)), []string{"/a", "/b"}, []string{}, false, false},
		{"one of two", resp(5, dir("/b", true, 0), dir("/a", false, 0)), []string{"/a", "/b"}, []string{"/b"}, false, false},
		{"every dir", resp(5, dir("/b", true, 0), dir("/a", true, 0)), []string{"/a", "/b"}, []string{"/a", "/b"}, true, false},
		{"an offline dir is neither", resp(5, dir("/a", true, 0), dir("/x", false, kerr.KafkaStorageError.Code)), []string{"/a"}, []string{"/a"}, true, false},
		{"before v5", resp(4, dir("/a", false, 0)), []string{"/a"}, []string{}, false, true},
		{"no usable dir", resp(5, dir("/x", false, kerr.KafkaStorageError.Code)), []string{}, []string{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cordonOf(7, tt.resp)
			require.NoError(t, err)
			assert.Equal(t, int32(7), got.Broker)
			assert.Equal(t, tt.dirs, got.Dirs)
			assert.Equal(t, tt.cordon, got.Cordoned)
			assert.Equal(t, tt.all, got.All())
			assert.Equal(t, tt.unknown, got.Unknown)
		})
	}
	r := resp(5)
	r.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	_, err := cordonOf(3, r)
	require.ErrorIs(t, err, kerr.ClusterAuthorizationFailed)
	assert.Contains(t, err.Error(), "broker 3")

	assert.Equal(t, []int32{1, 4}, CordonedBrokers([]BrokerCordon{
		{Broker: 1, Dirs: []string{"/a"}, Cordoned: []string{"/a"}},
		{Broker: 2, Dirs: []string{"/a", "/b"}, Cordoned: []string{"/a"}},
		{Broker: 4, Dirs: []string{"/a"}, Cordoned: []string{"/a"}},
	}))
}
