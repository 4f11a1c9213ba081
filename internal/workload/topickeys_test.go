package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

func TestParseTopicKeys(t *testing.T) {
	k, err := ParseTopicKeys("zipf:1.2:100")
	require.NoError(t, err)
	assert.Equal(t, Keys{Kind: KeysZipf, S: 1.2, N: 100}, k.Of("anything"))
	assert.True(t, k.Keyed())
	k, err = ParseTopicKeys("A=uniform:10, B=none,*=zipf:1:5")
	require.NoError(t, err)
	assert.Equal(t, Keys{Kind: KeysUniform, N: 10}, k.Of("A"))
	assert.Equal(t, Keys{}, k.Of("B"))
	assert.Equal(t, Keys{Kind: KeysZipf, S: 1, N: 5}, k.Of("C"))
	assert.Equal(t, "*=zipf:1:5,A=uniform:10,B=none", k.String())
	k, err = ParseTopicKeys("none")
	require.NoError(t, err)
	assert.False(t, k.Keyed())
	for _, bad := range []string{"", "zipf", "uniform:0", "A=", "=uniform:3", "A=uniform:3,A=none", "*=none,*=none", "A=hot:1", "A=uniform:2,B"} {
		_, err := ParseTopicKeys(bad)
		require.Error(t, err, bad)
		assert.Equal(t, errkind.Usage, errkind.KindOf(err), bad)
		assert.Equal(t, FieldKeys, errkind.FieldOf(err), bad)
	}
}

func FuzzParseTopicKeys(f *testing.F) {
	for _, s := range []string{"zipf:1.2:100", "A=uniform:10,B=none,*=zipf:1:5", "A=", "=x", "A=uniform:3,A=none", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseTopicKeys(s)
		if err != nil {
			if errkind.FieldOf(err) != FieldKeys {
				t.Fatalf("%q: error %v does not name %s", s, err, FieldKeys)
			}
			return
		}
		back, err := ParseTopicKeys(k.String())
		if err != nil || back.Default != k.Default || len(back.ByTopic) != len(k.ByTopic) {
			t.Fatalf("%q: %q does not round-trip: %+v, %v", s, k.String(), back, err)
		}
	})
}
