// Package golden is kplan's one golden-file helper for tests. A golden file
// for name "fig3.3.json" lives at testdata/fig3.3.golden.json (".golden" goes
// before the extension, so editors still know the format).
//
// `go test ./internal/report -update` rewrites one package's golden files
// from what the code prints today. `-update` is a flag of the test binaries
// that import this package only (go test refuses it elsewhere), so for the
// whole tree set the environment instead: `KPLAN_UPDATE_GOLDEN=1 go test
// ./...` (or `make golden`) rewrites every golden file.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ (the whole tree: KPLAN_UPDATE_GOLDEN=1)")

// UpdateEnv is the environment variable that rewrites golden files in every
// package of one `go test ./...` run.
const UpdateEnv = "KPLAN_UPDATE_GOLDEN"

// Updating reports whether this run rewrites golden files (-update, or
// KPLAN_UPDATE_GOLDEN=1).
func Updating() bool { return *update || os.Getenv(UpdateEnv) == "1" }

// Path returns the golden file's path for name: testdata/NAME.golden.EXT.
func Path(name string) string {
	ext := filepath.Ext(name)
	return filepath.Join("testdata", strings.TrimSuffix(name, ext)+".golden"+ext)
}

// Assert compares got with the golden file for name, rewriting it first
// under -update.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	path := Path(name)
	if Updating() {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file %s is missing: run go test -update (or make golden)", path)
	assert.Equal(t, string(want), string(got), "output differs from %s (go test -update, or make golden, rewrites it)", path)
}

// AssertString is Assert for a string.
func AssertString(t testing.TB, name, got string) {
	t.Helper()
	Assert(t, name, []byte(got))
}
