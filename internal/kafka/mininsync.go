package kafka

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// minInsyncKey is the topic (and broker default) config that acks=all
// producers need that many in-sync replicas for.
const minInsyncKey = "min.insync.replicas"

// MinInsync reads min.insync.replicas of each of topics (the effective
// value: the topic's own, else the broker's) with DescribeConfigs, and,
// when broker >= 0, that broker's value as the default for topics not yet
// created (0 when broker < 0). Topics the cluster does not know are left
// out of the map.
func MinInsync(ctx context.Context, cl *kgo.Client, topics []string, broker int32) (map[string]int, int, error) {
	adm := kadm.NewClient(cl)
	out := map[string]int{}
	read := func(kind string, rcs kadm.ResourceConfigs, err error, put func(string, int)) error {
		if err != nil {
			return fmt.Errorf("describe %s configs: %w", kind, err)
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				continue // unknown topic: created later, or deleted
			}
			for _, c := range rc.Configs {
				if c.Key != minInsyncKey || c.Value == nil {
					continue
				}
				n, err := strconv.Atoi(*c.Value)
				if err != nil {
					return fmt.Errorf("%s %s: %s=%q is not a number", kind, rc.Name, minInsyncKey, *c.Value)
				}
				put(rc.Name, n)
			}
		}
		return nil
	}
	if len(topics) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
		if err := read("topic", rcs, err, func(name string, n int) { out[name] = n }); err != nil {
			return nil, 0, err
		}
	}
	def := 0
	if broker >= 0 {
		rcs, err := adm.DescribeBrokerConfigs(ctx, broker)
		if err := read("broker", rcs, err, func(_ string, n int) { def = n }); err != nil {
			return nil, 0, err
		}
	}
	return out, def, nil
}

// MinInsync reads the effective min.insync.replicas of each of topics (the
// topic's own, else the broker's default), as the package function
// MinInsync does with the Admin's client. Topics the cluster does not know
// are left out.
func (a *Admin) MinInsync(ctx context.Context, topics []string) (map[string]int, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	out, _, err := MinInsync(ctx, cl, topics, -1)
	if err != nil {
		return nil, a.classify(err)
	}
	return out, nil
}
