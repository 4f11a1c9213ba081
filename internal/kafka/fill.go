package kafka

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ThrottleConfigs lists the replication throttle configs set dynamically
// on brokers and on topics, as "broker N: key=value" and "topic T:
// key=value" (read with DescribeConfigs): empty once a throttle is gone.
func (a *Admin) ThrottleConfigs(ctx context.Context, brokers []int32, topics []string) ([]string, error) {
	adm, err := a.kadm()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	var got []string
	collect := func(kind string, rcs kadm.ResourceConfigs, err error) error {
		if err != nil {
			return a.classify(fmt.Errorf("describe %s configs: %w", kind, err))
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				return fmt.Errorf("describe %s %s configs: %w", kind, rc.Name, rc.Err)
			}
			for _, c := range rc.Configs {
				dynamic := c.Source != kmsg.ConfigSourceDefaultConfig && c.Source != kmsg.ConfigSourceStaticBrokerConfig
				if dynamic && strings.Contains(c.Key, "replication.throttled") && c.Value != nil && *c.Value != "" {
					got = append(got, fmt.Sprintf("%s %s: %s=%s", kind, rc.Name, c.Key, *c.Value))
				}
			}
		}
		return nil
	}
	if len(brokers) > 0 {
		rcs, err := adm.DescribeBrokerConfigs(ctx, brokers...)
		if err := collect("broker", rcs, err); err != nil {
			return nil, err
		}
	}
	if len(topics) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
		if err := collect("topic", rcs, err); err != nil {
			return nil, err
		}
	}
	return got, nil
}
