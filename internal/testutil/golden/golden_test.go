package golden

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPath(t *testing.T) {
	assert.Equal(t, "testdata/fig3.3.golden.json", Path("fig3.3.json"))
	assert.Equal(t, "testdata/prototype.golden.txt", Path("prototype.txt"))
	assert.Equal(t, "testdata/plain.golden", Path("plain"))
}

// TestUpdatingFromEnv: KPLAN_UPDATE_GOLDEN=1 rewrites golden files in every
// package (`go test ./... -update` stops at packages without the flag), and
// Assert then writes the file before comparing.
func TestUpdatingFromEnv(t *testing.T) {
	t.Setenv(UpdateEnv, "")
	assert.False(t, Updating())
	t.Setenv(UpdateEnv, "1")
	assert.True(t, Updating())
	t.Chdir(t.TempDir())
	Assert(t, "new.txt", []byte("written\n"))
	b, err := os.ReadFile(Path("new.txt"))
	assert.NoError(t, err)
	assert.Equal(t, "written\n", string(b))
}
