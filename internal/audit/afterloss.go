package audit

import (
	"slices"

	"github.com/kplan-dev/kplan/internal/topology"
	"github.com/kplan-dev/kplan/internal/workload"
)

// Loads is the workload of every topic of c at rates with keys, in topic
// order: what PredictShares takes.
func Loads(c *topology.Cluster, rates Rates, keys workload.TopicKeys) []workload.Topic {
	var out []workload.Topic
	for _, t := range c.Topics() {
		out = append(out, workload.Topic{Name: t.Name, Rate: rates.Of(t.Name), Keys: keys.Of(t.Name)})
	}
	return out
}

// SkewBrokers returns the brokers a prediction's skew (max/mean) is taken
// over: the live brokers leading at least one partition of a topic written
// at a positive rate, sorted. These are the leaders kplan chaos measures,
// so a lost broker, a broker that is down (Missing) and a broker leading
// only unwritten topics do not pull the mean down.
func SkewBrokers(c *topology.Cluster, loads []workload.Topic) []int32 {
	written := make([]workload.Topic, 0, len(loads))
	for _, l := range loads {
		if l.Rate > 0 {
			written = append(written, l)
		}
	}
	ix := topology.NewIndex(c.Brokers)
	lead := make([]bool, ix.Len())
	for _, rs := range topicRuns(c, written) {
		for _, r := range rs {
			for i := r[0]; i < r[1]; i++ {
				if j, ok := ix.Pos(c.Partitions[i].Leader); ok {
					lead[j] = true
				}
			}
		}
	}
	var ids []int32
	for j, b := range c.Brokers {
		if lead[j] && !b.Missing {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// AfterLoss returns a copy of c once the brokers in lost are gone: each is
// marked Missing and every partition led by a broker that is down elects
// its new leader by Kafka's clean rule (topology.ElectAfterLoss), or goes
// offline (NoLeader). The copy shares its partitions' replica, ISR and
// offline lists with c (only leaders differ): treat both as read-only.
func AfterLoss(c *topology.Cluster, lost ...int32) *topology.Cluster {
	out := &topology.Cluster{Brokers: slices.Clone(c.Brokers), Partitions: slices.Clone(c.Partitions), Live: c.Live}
	down := map[int32]bool{}
	for i, b := range out.Brokers {
		if b.Missing || slices.Contains(lost, b.ID) {
			out.Brokers[i].Missing = true
			down[b.ID] = true
		}
	}
	dead := func(id int32) bool { return down[id] }
	for i := range out.Partitions {
		p := &out.Partitions[i]
		p.Leader = topology.ElectAfterLoss(p, dead)
	}
	return out
}

// PredictAll returns one Prediction per partitioner named (every one of
// SharePartitioners when none is), each from PredictShares on c: loads and
// shares for every broker of c in id order, max/mean over SkewBrokers.
func PredictAll(c *topology.Cluster, loads []workload.Topic, o ShareOptions, names ...string) ([]Prediction, error) {
	ps, _, err := predictAll(c, loads, o, nil, names...)
	return ps, err
}

func predictAll(c *topology.Cluster, loads []workload.Topic, o ShareOptions, lost []int32, names ...string) ([]Prediction, []int32, error) {
	if len(names) == 0 {
		names = SharePartitioners
	}
	m, err := predictMany(c, loads, names, o, lost)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Prediction, 0, len(names))
	for _, s := range m.shares {
		p := prediction(s.Partitioner, c.Brokers, s.Load, m.over)
		p.Basis = s.Basis
		out = append(out, p)
	}
	return out, m.over, nil
}

// LossPrediction is the predicted load per broker under every partitioner
// once one broker is lost and Kafka has elected new leaders: what kplan
// chaos predicts for its `after` phase when it kills that broker.
type LossPrediction struct {
	Lost int32 `json:"lost"`
	// SkewBrokers are the brokers max/mean is taken over: the live leaders
	// of the written topics after the loss.
	SkewBrokers []int32      `json:"skew_brokers"`
	Predictions []Prediction `json:"predictions"`
}

// PredictAfterLoss predicts, for each broker in lost (one at a time), the
// load per broker under every partitioner after the loss.
func PredictAfterLoss(c *topology.Cluster, rates Rates, keys workload.TopicKeys, o ShareOptions, lost []int32) ([]LossPrediction, error) {
	out := make([]LossPrediction, 0, len(lost))
	l := Loads(c, rates, keys)
	for _, id := range lost {
		// The same as PredictAll(AfterLoss(c, id), ...), without the copy.
		ps, over, err := predictAll(c, l, o, []int32{id})
		if err != nil {
			return nil, err
		}
		if over == nil {
			over = []int32{}
		}
		out = append(out, LossPrediction{Lost: id, SkewBrokers: over, Predictions: ps})
	}
	return out, nil
}
