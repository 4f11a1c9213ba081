package lab

import "github.com/kplan-dev/kplan/internal/localkafka"

// State is the lab's state, for the network faults of package faulter
// (which implements chaos.Faulter; it lives apart because package chaos's
// own tests import this package, and a Faulter here would import chaos).
func (l *Cluster) State() *localkafka.State { return l.state }
