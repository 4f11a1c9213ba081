package reassign

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kplan-dev/kplan/internal/topology"
)

// jbodLayout puts every replica of c in one of dirs log dirs per broker
// the way Kafka does (the dir holding the fewest partitions), so that
// dirs hold equal counts and skewed bytes.
func jbodLayout(c *topology.Cluster, dirs int) *DirLayout {
	l := &DirLayout{Brokers: map[int32]BrokerDirs{}, Current: map[DirReplica]string{}}
	names := make([]string, dirs)
	for d := range names {
		names[d] = fmt.Sprintf("/data/%d", d)
	}
	count := map[int32][]int{}
	for _, b := range c.Brokers {
		l.Brokers[b.ID] = BrokerDirs{Dirs: names}
		count[b.ID] = make([]int, dirs)
	}
	for i := range c.Partitions {
		p := &c.Partitions[i]
		for _, r := range p.Replicas {
			n := count[r]
			d := slices.Index(n, slices.Min(n))
			n[d]++
			l.Current[DirReplica{p.Key(), r}] = names[d]
		}
	}
	return l
}

// BenchmarkDirs100k is the dir pass alone on sizedLayout (100,000
// partitions, RF 3, 100 brokers) with 4 log dirs per broker, after
// `--balance bytes --tolerance 0.05`. Reported: the intra-broker moves
// and their bytes, and whether every broker's dirs end within 5%.
func BenchmarkDirs100k(b *testing.B) {
	c := sizedLayout(b, 100)
	l := jbodLayout(c, 4)
	opts := Options{Balance: BalanceBytes, Tolerance: 0.05, Dirs: l}
	base, err := compute(c, opts)
	if err != nil {
		b.Fatal(err)
	}
	var d *DirsBalance
	b.ResetTimer()
	for range b.N {
		pl := *base
		pl.Changes = slices.Clone(base.Changes)
		d = planDirs(c, &pl, opts)
	}
	b.StopTimer()
	within := 0
	for _, br := range d.Brokers {
		if br.Within {
			within++
		}
	}
	b.ReportMetric(float64(len(d.IntraMoves)), "intra-moves")
	b.ReportMetric(float64(d.IntraBytes)/(1<<40), "intra-TiB")
	b.ReportMetric(float64(d.IntraBound)/(1<<40), "bound-TiB")
	b.ReportMetric(float64(d.Placed), "placed")
	b.ReportMetric(float64(within), "brokers-within")
}
