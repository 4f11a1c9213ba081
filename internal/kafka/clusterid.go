package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ForeignClusterError is a broker that answered on an address kplan
// expected one of its cluster at, and belongs to another cluster: another
// lab started on the same ports, say.
type ForeignClusterError struct {
	// Broker is the broker id asked, Addr its address.
	Broker int32
	Addr   string
	// Want is the expected cluster id, Got the broker's.
	Want, Got string
}

func (e *ForeignClusterError) Error() string {
	return fmt.Sprintf("broker %d at %s belongs to cluster %s, not %s (another cluster on these ports?)", e.Broker, e.Addr, e.Got, e.Want)
}

// ForeignCluster reports true: waiting longer does not help
// (localkafka.Ready).
func (e *ForeignClusterError) ForeignCluster() bool { return true }

// brokerOfCluster asks broker id itself for metadata and checks the cluster
// id in its answer (want "" accepts any).
func brokerOfCluster(ctx context.Context, cl *kgo.Client, id int32, want string) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // no topic: brokers and the cluster id only
	kresp, err := cl.Broker(int(id)).RetriableRequest(ctx, req)
	if err != nil {
		return fmt.Errorf("broker %d: %w", id, err)
	}
	resp, ok := kresp.(*kmsg.MetadataResponse)
	if !ok {
		return fmt.Errorf("broker %d: unexpected answer %T", id, kresp)
	}
	if want == "" {
		return nil
	}
	got := ""
	if resp.ClusterID != nil {
		got = *resp.ClusterID
	}
	if got != want {
		addr := ""
		for _, b := range resp.Brokers {
			if b.NodeID == id {
				addr = fmt.Sprintf("%s:%d", b.Host, b.Port)
			}
		}
		return &ForeignClusterError{Broker: id, Addr: addr, Want: want, Got: got}
	}
	return nil
}
