// Package measure is `kplan measure`: the sizing model's inputs measured on
// a live cluster (the root command), broker-loss unavailability against the
// partitions a broker led (`measure unavailability`), and seed 003's
// batching study (`measure batching`).
package measure

import (
	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cmdutil"
)

// NewCmdMeasure returns `kplan measure` and its subcommands.
func NewCmdMeasure(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "measure",
		Short: "Measure the sizing model's inputs on a live cluster",
	}
	cmd.AddCommand(NewCmdUnavailability(f, nil), NewCmdBatching(f, nil))
	return cmd
}
