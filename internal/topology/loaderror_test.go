package topology

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// TestLoadErrorKind: a fault in an input file is a usage error, with the
// file's field when there is one, through errkind's interfaces.
func TestLoadErrorKind(t *testing.T) {
	_, err := Load(strings.NewReader(""), "empty.json")
	require.Error(t, err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(fmt.Errorf("--from: %w", err)))
	assert.Empty(t, errkind.FieldOf(err), "about the file as a whole")

	le := &LoadError{File: "plan.json", Line: 3, Col: 7, Field: "replicas", Msg: "want an array"}
	assert.Equal(t, errkind.Usage, errkind.KindOf(le))
	assert.Equal(t, "replicas", errkind.FieldOf(le))
	assert.EqualError(t, le, "plan.json:3:7: replicas: want an array")
}
