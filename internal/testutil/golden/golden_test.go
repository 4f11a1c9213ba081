package golden

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPath(t *testing.T) {
	assert.Equal(t, "testdata/fig3.3.golden.json", Path("fig3.3.json"))
	assert.Equal(t, "testdata/prototype.golden.txt", Path("prototype.txt"))
	assert.Equal(t, "testdata/plain.golden", Path("plain"))
}
