package measure

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/killers"
	chaoslab "github.com/kplan-dev/kplan/internal/chaos/lab"
	"github.com/kplan-dev/kplan/internal/chaos/remote"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/report/measurereport"
)

// runUnavailability resolves the cluster, runs the experiment.Unavailability
// action and renders what it measured.
func runUnavailability(ctx context.Context, opts *UnavailabilityOptions) error {
	a, err := unavailOpen(ctx, opts)
	if err != nil {
		return err
	}
	defer a.Cluster.Close()
	defer a.Admin.Close()
	res, runErr := a.Run(ctx)
	if res == nil {
		return unavailErr(runErr)
	}
	if err := report.Render(opts.IO.Out, opts.Format, res, func() report.Document { return measurereport.UnavailabilityDocument(res) }); err != nil {
		return err
	}
	errOut := opts.IO.ErrOut
	if opts.ReportDir != "" {
		files, err := measurereport.WriteUnavailabilityReport(res, opts.ReportDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(errOut, "report written to %s (%s)\n", opts.ReportDir, strings.Join(files, ", "))
	}
	if opts.OutPlan != "" {
		switch {
		case res.Fit == nil || res.Partial:
			fmt.Fprintf(errOut, "measure unavailability: %s left as it was (no complete fit)\n", opts.OutPlan)
		default:
			if err := measurereport.WriteElectionTime(res, opts.OutPlan); err != nil {
				return err
			}
			fmt.Fprintf(errOut, "measure unavailability: election-time: %s written to %s\n", res.ElectionTime, opts.OutPlan)
		}
	}
	return unavailErr(runErr)
}

// unavailErr spells a run's error for the command line: an error about
// one of the action's fields names its flag.
func unavailErr(err error) error {
	var ke *errkind.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("interrupted; the runs that finished were printed: %w", err)
	case errors.As(err, &ke) && ke.Kind == errkind.Refused && ke.Field == chaos.FieldAllowUnavailable:
		return errkind.Wrap(ke.Kind, "", fmt.Errorf("%w; pass --allow-unavailable to kill anyway", err))
	}
	return cmdutil.SpellFlag(err, nil)
}

// unavailOpen connects to the cluster, builds the admin client and the
// action over them.
func unavailOpen(ctx context.Context, o *UnavailabilityOptions) (*experiment.Unavailability, error) {
	a := o.Unavailability // a copy: the options stay as parsed
	a.Progress = func(format string, args ...any) { fmt.Fprintf(o.IO.ErrOut, format+"\n", args...) }
	if o.ClusterKind == "lab" {
		c, err := chaoslab.New(o.LabDir, o.Conn, o.Version)
		if err != nil {
			return nil, errkind.Wrap(errkind.Usage, "", fmt.Errorf("--cluster lab: %w", err))
		}
		a.Cluster, a.Conn = c, c.Conn().WithSeeds(c.Seeds())
	} else {
		k, err := o.Killer.New(killers.NewRunID())
		if err != nil {
			return nil, errkind.Wrap(errkind.Usage, "", cmdutil.SpellFlag(err, nil))
		}
		rc, err := remote.New(ctx, remote.Options{Conn: o.Conn, Version: o.Version, Killer: k, KeepTopics: o.Keep})
		if err != nil {
			return nil, err
		}
		a.Cluster, a.Remote, a.Conn = rc, rc, o.Conn
		a.OnPlan = func(p experiment.UnavailabilityPlan) error {
			out := o.IO.ErrOut
			if !o.Yes {
				out = o.IO.Out
			}
			measurereport.WriteUnavailabilityPlan(out, p)
			return nil
		}
	}
	admin, err := kafka.NewScratchAdmin(a.Conn, o.Version)
	if err != nil {
		a.Cluster.Close()
		return nil, err
	}
	a.Admin = admin
	return &a, nil
}
