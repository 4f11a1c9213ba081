package topology

import "github.com/kplan-dev/kplan/internal/errkind"

// ErrorKind makes a fault in an input file a usage error.
func (e *LoadError) ErrorKind() errkind.Kind { return errkind.Usage }

// ErrorField returns the field of the file the fault is about, or "" when
// it is about the file as a whole (its position is in the message).
func (e *LoadError) ErrorField() string { return e.Field }
