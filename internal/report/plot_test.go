package report

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

func TestGridOf(t *testing.T) {
	ps := []*plot.Plot{plot.New(), plot.New(), plot.New()}
	g := GridOf(ps, 2)
	require.Len(t, g, 2)
	assert.Len(t, g[0], 2)
	assert.Same(t, ps[2], g[1][0])
	assert.Nil(t, g[1][1], "the last row is padded")
	assert.Len(t, GridOf(ps[:1], 2)[0], 1, "one plot: one column")
}

// PNGs are files people hand on: 0644 less the umask (a regression: they
// were 0600).
func TestWriteGridPNG(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "x.png")
	require.NoError(t, WriteGridPNG(path, GridOf([]*plot.Plot{plot.New(), plot.New()}, 2), 2*vg.Inch))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	assert.Positive(t, fi.Size())
	require.ErrorContains(t, WriteGridPNG(path, nil, vg.Inch), "nothing to draw")
}
