package sizing

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// TestFieldErrorKind: an input out of range is a usage error naming its
// field, through errkind's interfaces, wrapped or not.
func TestFieldErrorKind(t *testing.T) {
	in := Input{Throughput: 1, Consumers: 0}
	err := in.Validate()
	require.Error(t, err)
	wrapped := fmt.Errorf("plan.yaml: %w", err)
	assert.Equal(t, errkind.Usage, errkind.KindOf(wrapped))
	assert.Equal(t, FieldConsumers, errkind.FieldOf(wrapped))
	assert.ErrorContains(t, err, FieldConsumers+": must be positive")
}
