package kafka

import "github.com/twmb/franz-go/pkg/kfake"

// FakeCluster starts an in-process cluster of brokers brokers (franz-go's
// kfake) and returns its addresses and its stop function: for tests of
// verbs outside this package, which may not import franz-go. kfake cannot
// judge rates, replication or elections; it checks plumbing only.
func FakeCluster(brokers int) (addrs []string, stop func(), err error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers))
	if err != nil {
		return nil, nil, err
	}
	return c.ListenAddrs(), c.Close, nil
}
