package kafka

import "strings"

// WithSeeds returns o with its bootstrap servers replaced by seeds: for
// clusters that know their own addresses (the chaos experiment's embedded
// cluster and lab), while the command config's security settings still
// apply.
func (o ConnOptions) WithSeeds(seeds []string) ConnOptions {
	o.BootstrapServers = strings.Join(seeds, ",")
	return o
}
