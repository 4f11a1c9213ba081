package app

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// addProfileFlag adds the hidden --cpu-profile FILE flag: a Go CPU profile of
// the whole command, for finding where a verb spends its time (like kubectl's
// --profile). It is hidden because it is a developer's tool, not an
// operator's. The returned function stops the profile and closes the file;
// it does nothing when no profile was started.
func addProfileFlag(root *cobra.Command) func() error {
	var path string
	var f *os.File
	root.PersistentFlags().StringVar(&path, "cpu-profile", "", "write a Go CPU profile of the command to `FILE`")
	_ = root.PersistentFlags().MarkHidden("cpu-profile")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if path == "" {
			return nil
		}
		out, err := os.Create(path)
		if err != nil {
			return errkind.Wrap(errkind.Usage, "", fmt.Errorf("--cpu-profile: %w", err))
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			_ = out.Close()
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		f = out
		return nil
	}
	return func() error {
		if f == nil {
			return nil
		}
		pprof.StopCPUProfile()
		err := f.Close()
		f = nil
		if err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		return nil
	}
}
