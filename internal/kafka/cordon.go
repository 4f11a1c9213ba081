package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CordonKey is the broker config of KIP-1066 (Kafka 4.3): the log
// directories of the broker that take no new replica ("*": all of them).
const CordonKey = "cordoned.log.dirs"

// BrokerCordon is one live broker's log directories and which of them are
// cordoned (KIP-1066), as the broker reports them in DescribeLogDirs v5.
type BrokerCordon struct {
	Broker int32 `json:"broker"`
	// Dirs are the broker's log directories, sorted; Cordoned those of them
	// that take no new replica.
	Dirs     []string `json:"log_dirs"`
	Cordoned []string `json:"cordoned_log_dirs"`
	// Unknown is set when the broker answers DescribeLogDirs below v5, which
	// carries no cordon flag (Kafka before 4.3): its dirs are listed, none
	// as cordoned.
	Unknown bool `json:"cordon_unknown,omitempty"`
}

// All reports whether every log directory of the broker is cordoned: such
// a broker takes no new replica in any plan.
func (c BrokerCordon) All() bool {
	return len(c.Dirs) > 0 && len(c.Cordoned) == len(c.Dirs)
}

// Cordons asks every live broker for its log directories and their cordon
// flag (DescribeLogDirs for no topic: directories only, no partition
// list), in broker order. A broker that does not answer is an error naming
// it: a plan must not place replicas on a broker whose cordon it could not
// read.
func (a *Admin) Cordons(ctx context.Context) ([]BrokerCordon, error) {
	cl, err := a.Client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
	if err != nil {
		return nil, a.classify(fmt.Errorf("list brokers: %w", err))
	}
	out := make([]BrokerCordon, 0, len(brokers))
	for _, b := range brokers {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{} // no topic: the directories alone
		resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
		if err != nil {
			return nil, a.classify(fmt.Errorf("describe log dirs of broker %d: %w", b.NodeID, err))
		}
		bc, err := cordonOf(b.NodeID, resp)
		if err != nil {
			return nil, err
		}
		out = append(out, bc)
	}
	slices.SortFunc(out, func(x, y BrokerCordon) int { return int(x.Broker - y.Broker) })
	return out, nil
}

// cordonOf reads one broker's DescribeLogDirs answer.
func cordonOf(broker int32, resp *kmsg.DescribeLogDirsResponse) (BrokerCordon, error) {
	bc := BrokerCordon{Broker: broker, Dirs: []string{}, Cordoned: []string{}, Unknown: resp.Version < 5}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return bc, fmt.Errorf("describe log dirs of broker %d: %w", broker, err)
	}
	for _, d := range resp.Dirs {
		if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
			// An offline directory takes no replica either; list it as
			// neither usable nor cordoned.
			continue
		}
		bc.Dirs = append(bc.Dirs, d.Dir)
		if d.IsCordoned {
			bc.Cordoned = append(bc.Cordoned, d.Dir)
		}
	}
	slices.Sort(bc.Dirs)
	slices.Sort(bc.Cordoned)
	return bc, nil
}

// CordonedBrokers are the brokers of cs whose every log directory is
// cordoned, sorted.
func CordonedBrokers(cs []BrokerCordon) []int32 {
	var out []int32
	for _, c := range cs {
		if c.All() {
			out = append(out, c.Broker)
		}
	}
	return out
}
