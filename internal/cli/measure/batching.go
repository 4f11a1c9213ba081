package measure

import (
	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
)

// BatchingOptions are `kplan measure batching`'s flags.
type BatchingOptions struct{}

// NewCmdBatching returns `kplan measure batching`.
// Placeholder replaced by the batching helper's branch.
func NewCmdBatching(f *cmdutil.Factory, runF func(*BatchingOptions) error) *cobra.Command {
	return &cobra.Command{Use: "batching", Hidden: true, RunE: func(*cobra.Command, []string) error {
		return cmdutil.UsageErrorf("measure batching: not built yet")
	}}
}
