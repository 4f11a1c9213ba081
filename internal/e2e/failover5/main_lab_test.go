//go:build integration || acceptance

package failover5

import (
	"os"
	"testing"

	"github.com/kplan-dev/kplan/internal/labtest"
)

// One 5-broker, 2-rack lab for the binary, shared by the integration and
// the acceptance tests.
func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }
