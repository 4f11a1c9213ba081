package reassign

import (
	"os"

	"github.com/kplan-dev/kplan/internal/audit"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/reassign"
)

// ratesUsage is --rates's help: the syntax and meaning of kplan audit's.
const ratesUsage = "producers' rate per topic, to weigh the failover order: topic=100MB/s,... or relative weights topic=3,...; *=rate for the others; or a kplan observe --out snapshot's file name (as kplan audit --rates; not with --balance load)"

// validateRates reads --rates with kplan audit's parser (its syntax and
// meaning); with --balance load the snapshot's loads weigh the order, so
// the two are refused together. Topics the layout lacks are refused once
// it is read (reassign.Compute: field "rates").
func (o *Options) validateRates() error {
	if o.rates == "" {
		return nil
	}
	if o.Balance == reassign.BalanceLoad {
		return errkind.Usagef("", "--rates and --balance load: the snapshot's loads weigh a load plan's failover order; give one, not both")
	}
	r, err := audit.ParseRatesArg(o.rates, os.ReadFile)
	if err != nil {
		return errkind.Usagef("", "--rates: %w", err)
	}
	o.Rates = &r
	return nil
}
