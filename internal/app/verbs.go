package app

import (
	"github.com/spf13/cobra"

	"github.com/kplan-dev/kplan/internal/cli/audit"
	"github.com/kplan-dev/kplan/internal/cli/chaos"
	"github.com/kplan-dev/kplan/internal/cli/generate"
	"github.com/kplan-dev/kplan/internal/cli/lab"
	"github.com/kplan-dev/kplan/internal/cli/measure"
	"github.com/kplan-dev/kplan/internal/cli/observe"
	"github.com/kplan-dev/kplan/internal/cli/reassign"
	"github.com/kplan-dev/kplan/internal/cli/size"
	"github.com/kplan-dev/kplan/internal/cli/worker"
	"github.com/kplan-dev/kplan/internal/cmdutil"
)

// verbs returns kplan's top-level commands in help order. A verb appears
// here only once it works.
func verbs(f *cmdutil.Factory) []*cobra.Command {
	return []*cobra.Command{
		size.NewCmdSize(f, nil),
		audit.NewCmdAudit(f, nil),
		reassign.NewCmdReassign(f, nil),
		observe.NewCmdObserve(f, nil),
		generate.NewCmdGenerate(f, nil),
		lab.NewCmdLab(f),
		chaos.NewCmdChaos(f, nil),
		measure.NewCmdMeasure(f),
		worker.NewCmdWorker(f, nil, nil),
	}
}
