package cmdutil

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"plain", errors.New("boom"), ExitRuntime},
		{"usage", UsageErrorf("--flag: bad"), ExitUsage},
		{"wrapped usage", fmt.Errorf("ctx: %w", UsageErrorf("bad")), ExitUsage},
		{"usage nil", Usage(nil), ExitOK},
		{"refused", RefusedErrorf("no"), ExitRefused},
		{"silent findings", SilentExit(ExitFindings), ExitFindings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ExitCode(tt.err))
		})
	}
	assert.ErrorIs(t, SilentExit(3), ErrSilent)
	assert.Equal(t, "--flag: bad", UsageErrorf("--flag: %s", "bad").Error())
}

func TestOutputFlag(t *testing.T) {
	var o OutputFlag
	o.Set("json")
	f, err := o.Format()
	assert.NoError(t, err)
	assert.Equal(t, "json", string(f))
	o.Set("xml")
	_, err = o.Format()
	assert.Equal(t, ExitUsage, ExitCode(err))
	assert.Contains(t, err.Error(), "--output")
}
