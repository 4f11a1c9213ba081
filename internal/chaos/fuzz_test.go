package chaos

import (
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// FuzzFlagErrors: --kill and --assignment errors are usage errors on one
// line carrying their field ("kill", "assignment"), which the command line
// spells as the flag.
func FuzzFlagErrors(f *testing.F) {
	f.Add("broker-3", "1,2;2,3;3,1")
	f.Add("leader-of:kplan-chaos-A/0", "1;2;1")
	f.Add("broker-x", "1,1")
	f.Add("leader-of:t/x", "1,2;3")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, target, assignment string) {
		if _, err := ParseTarget(target); err != nil {
			checkFlagError(t, err, "kill")
		}
		if _, err := ParseAssignment(assignment); err != nil {
			checkFlagError(t, err, "assignment")
		}
	})
}

func checkFlagError(t *testing.T, err error, field string) {
	t.Helper()
	if errkind.KindOf(err) != errkind.Usage || errkind.FieldOf(err) != field || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%v: kind %v field %q, want a one-line usage error on %s", err, errkind.KindOf(err), errkind.FieldOf(err), field)
	}
}
