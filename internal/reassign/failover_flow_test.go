package reassign

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlowNetAgainstDinic: on random layered networks (source, items,
// pairs, survivors, sink, as the joint pass builds them), flowNet's
// maximum flow equals the tests' independent solver's, also when it
// starts from a flow pushed along some paths first and when capacities
// rise after a first flow (augmenting again from the flow it has).
func TestFlowNetAgainstDinic(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 30))
	for iter := range 300 {
		items, pairs, surv := 1+rng.IntN(30), 1+rng.IntN(12), 1+rng.IntN(6)
		type arc struct{ u, v, c int32 }
		var arcs []arc
		pairNode := func(p int) int32 { return int32(2 + items + p) }
		survNode := func(s int) int32 { return int32(2 + items + pairs + s) }
		for k := range items {
			arcs = append(arcs, arc{0, int32(2 + k), 1 + int32(rng.IntN(2))})
			for range 1 + rng.IntN(3) {
				arcs = append(arcs, arc{int32(2 + k), pairNode(rng.IntN(pairs)), 1})
			}
		}
		for p := range pairs {
			arcs = append(arcs, arc{pairNode(p), survNode(rng.IntN(surv)), int32(rng.IntN(5)) - 1})
		}
		sinkArc := len(arcs)
		for s := range surv {
			arcs = append(arcs, arc{survNode(s), 1, int32(rng.IntN(8))})
		}
		nodes := 2 + items + pairs + surv
		want := func(raise int32) int {
			d := newDinic(nodes)
			for x, a := range arcs {
				c := max(a.c, 0)
				if x >= sinkArc {
					c += raise
				}
				d.edge(int(a.u), int(a.v), int(c))
			}
			return d.flow(0, 1)
		}
		var g flowNet
		g.reset(nodes)
		es := make([]int32, len(arcs))
		for x, a := range arcs {
			es[x] = g.add(a.u, a.v, a.c)
		}
		// A starting flow: one unit along the first item's first arcs
		// where they have room.
		got := 0
		if e1, e2 := es[0], es[1]; g.res[e1] > 0 && g.res[e2] > 0 {
			p := g.to[e2]
			var e3, e4 int32 = -1, -1
			for x, a := range arcs {
				if a.u == p && x < sinkArc && g.res[es[x]] > 0 {
					e3 = es[x]
					break
				}
			}
			if e3 >= 0 {
				for x := sinkArc; x < len(arcs); x++ {
					if arcs[x].u == g.to[e3] && g.res[es[x]] > 0 {
						e4 = es[x]
					}
				}
			}
			if e4 >= 0 {
				for _, e := range []int32{e1, e2, e3, e4} {
					g.push(e, 1)
				}
				got = 1
			}
		}
		got += g.augment(0, 1)
		require.Equal(t, want(0), got, "iteration %d", iter)
		for x := sinkArc; x < len(arcs); x++ {
			g.raise(es[x], 2)
		}
		got += g.augment(0, 1)
		require.Equal(t, want(2), got, "iteration %d, capacities raised", iter)
	}
}
