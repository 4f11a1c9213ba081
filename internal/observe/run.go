package observe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kplan-dev/kplan/internal/clock"
)

// Sampler reads one sample of the cluster. The sample's At is set by Run.
type Sampler interface {
	Sample(ctx context.Context) (Sample, error)
}

// SamplerFunc adapts a function to Sampler.
type SamplerFunc func(ctx context.Context) (Sample, error)

// Sample calls f.
func (f SamplerFunc) Sample(ctx context.Context) (Sample, error) { return f(ctx) }

// Plan is how to sample: n samples spread evenly over window.
type Plan struct {
	Window  time.Duration
	Samples int
}

// Field names for PlanError.
const (
	FieldWindow  = "window"
	FieldSamples = "samples"
)

// PlanError is a plan's fault, naming its field.
type PlanError struct {
	Field string
	Msg   string
}

func (e *PlanError) Error() string { return e.Field + ": " + e.Msg }

// ErrorField returns the field the error is about.
func (e *PlanError) ErrorField() string { return e.Field }

// ErrorMessage returns the message without the field.
func (e *PlanError) ErrorMessage() string { return e.Msg }

// Validate checks the plan: two samples or more, a positive window of at
// least a millisecond per interval.
func (p Plan) Validate() error {
	if p.Samples < 2 {
		return &PlanError{Field: FieldSamples, Msg: fmt.Sprintf("want 2 or more, got %d", p.Samples)}
	}
	if p.Samples > 10000 {
		return &PlanError{Field: FieldSamples, Msg: fmt.Sprintf("want at most 10000, got %d", p.Samples)}
	}
	if p.Window <= 0 {
		return &PlanError{Field: FieldWindow, Msg: fmt.Sprintf("want a positive duration, got %s", p.Window)}
	}
	if p.Window/time.Duration(p.Samples-1) < time.Millisecond {
		return &PlanError{Field: FieldWindow, Msg: fmt.Sprintf("%s is too short for %d samples (a millisecond or more between samples)", p.Window, p.Samples)}
	}
	return nil
}

// Interval is the time between two samples.
func (p Plan) Interval() time.Duration { return p.Window / time.Duration(p.Samples-1) }

// Run takes p.Samples samples from s, the i-th due p.Interval()*i after the
// first, on clock c (nil: the wall clock), stamping each with the time it
// was started. progress (nil: none) hears of each sample as it is taken.
// A sample that fails ends the run with its error.
func Run(ctx context.Context, s Sampler, c clock.Clock, p Plan, progress func(i int, sm Sample)) ([]Sample, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if c == nil {
		c = clock.System{}
	}
	start := c.Now()
	out := make([]Sample, 0, p.Samples)
	for i := range p.Samples {
		due := start.Add(p.Interval() * time.Duration(i))
		if wait := due.Sub(c.Now()); wait > 0 {
			if err := c.Sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
		at := c.Now()
		sm, err := s.Sample(ctx)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("sample %d of %d: %w", i+1, p.Samples, err)
		}
		sm.At = at
		out = append(out, sm)
		if progress != nil {
			progress(i, sm)
		}
	}
	return out, nil
}
