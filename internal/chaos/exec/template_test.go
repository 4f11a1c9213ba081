package exec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestTemplateExpand(t *testing.T) {
	b := chaos.Broker{ID: 3, Host: "kafka-3.example", Port: 9092}
	for _, tc := range []struct{ in, want string }{
		{"ssh {host} sudo systemctl kill -s KILL kafka", "ssh kafka-3.example sudo systemctl kill -s KILL kafka"},
		{"kplan lab kill broker-{id} --dir /tmp/lab", "kplan lab kill broker-3 --dir /tmp/lab"},
		{"echo {host}:{port}/{id}", "echo kafka-3.example:9092/3"},
		{"kafka-{id}", "kafka-3"},
		{"echo ${HOME} {{id}}", "echo ${HOME} {id}"}, // shell variables and escaped braces stay
		{"awk '{print $1}' f", "awk '{print $1}' f"}, // not a placeholder: a space inside
		{"echo { } {}", "echo { } {}"},               // no word: literal
		{"no placeholders", "no placeholders"},
	} {
		tmpl, err := ParseTemplate("kill-cmd", tc.in)
		require.NoError(t, err, tc.in)
		got, err := tmpl.Expand(b)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.in, tmpl.String())
	}
}

func TestTemplateUnknownPlaceholder(t *testing.T) {
	for _, in := range []string{"ssh {hostname} true", "kill {ID}", "x {pod}", "docker kill kafka-{broker_id}"} {
		_, err := ParseTemplate("restore-cmd", in)
		require.Error(t, err, in)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), in)
		assert.Equal(t, "restore-cmd", errkind.FieldOf(err), in)
		assert.ErrorContains(t, err, "unknown placeholder", in)
	}
}

func TestTemplateUnsafeHost(t *testing.T) {
	tmpl, err := ParseTemplate("kill-cmd", "ssh {host} true")
	require.NoError(t, err)
	for _, host := range []string{"a;rm -rf /", "$(reboot)", "a b", "", "x`id`"} {
		_, err := tmpl.Expand(chaos.Broker{ID: 1, Host: host, Port: 9092})
		require.Error(t, err, host)
		assert.Equal(t, errkind.Refused, errkind.KindOf(err), host)
		assert.ErrorContains(t, err, "broker 1 advertises host", host)
	}
	// A template without {host} does not care what the host is.
	tmpl, err = ParseTemplate("kill-cmd", "kill {id}")
	require.NoError(t, err)
	got, err := tmpl.Expand(chaos.Broker{ID: 1, Host: "a;b"})
	require.NoError(t, err)
	assert.Equal(t, "kill 1", got)
	for _, host := range []string{"10.0.0.3", "fe80::1%eth0", "kafka_3.svc.cluster.local"} {
		assert.True(t, SafeHost(host), host)
	}
}
