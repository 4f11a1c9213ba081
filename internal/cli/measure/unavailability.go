package measure

import (
	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
)

// UnavailabilityOptions are `kplan measure unavailability`'s flags.
type UnavailabilityOptions struct{}

// NewCmdUnavailability returns `kplan measure unavailability`.
// Placeholder replaced by the measure helper's branch.
func NewCmdUnavailability(f *cmdutil.Factory, runF func(*UnavailabilityOptions) error) *cobra.Command {
	return &cobra.Command{Use: "unavailability", Hidden: true, RunE: func(*cobra.Command, []string) error {
		return cmdutil.UsageErrorf("measure unavailability: not built yet")
	}}
}
