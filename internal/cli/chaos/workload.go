package chaos

import (
	"context"
	"fmt"
	"os"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// WorkloadSpec is how a workload's topics get their rates and keys
// (chaos.WorkloadSpec, from --rates/--rates-file, --rate and --keys), with
// how the command spells its fields: the flag, or the experiment file's
// line that set it. With --layout the command applies it at once
// (Config.Workload); with --topics the campaign does at run time, to the
// topics that exist on the cluster.
type WorkloadSpec struct {
	chaos.WorkloadSpec
	where func(string) string
}

// loadLayout reads a layout file as `kplan audit --from` does and returns
// its topics (chaos.LayoutTopics). flag spells --layout (or the file line
// that set it); embedded checks the ids the embedded cluster can have.
func loadLayout(path, flag string, embedded bool) (names []string, assignments map[string][][]int32, maxID int32, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, errkind.Usagef("", "%s: %w", flag, err)
	}
	defer f.Close() //nolint:errcheck // read-only
	c, err := topology.Load(f, path)
	if err != nil {
		return nil, nil, 0, errkind.Wrap(errkind.Usage, "", fmt.Errorf("%s: %w", flag, err)) // names file:line
	}
	names, assignments, maxID, err = chaos.LayoutTopics(c, path, embedded)
	return names, assignments, maxID, errkind.Wrap(errkind.Usage, "", cmdutil.Spell(err, func(string) string { return flag }))
}

// existingWorkload builds Config.Workload from the topics of c matching
// --topics (assignments nil: the engine reads them from the cluster).
func existingWorkload(ctx context.Context, c chaos.Cluster, cfg chaos.Config, s *WorkloadSpec) ([]chaos.WorkloadTopic, error) {
	w, err := s.Existing(ctx, c, cfg.Conn, cfg.Version)
	return w, cmdutil.Spell(err, s.where)
}
