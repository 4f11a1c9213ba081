package reassign

// flowNet is a maximum-flow network (Dinic's algorithm) for the failover
// phase's joint pass (failover_joint.go): adjacency lists in flat arrays,
// residual capacities, a flow that may start from a given one (push) and
// grow after capacities rise (raise, then augment again). Sized once per
// build; every search leaves its scratch reset.
type flowNet struct {
	head        []int32 // per node: its first edge, -1 none
	next, to    []int32 // per edge
	res         []int32 // per edge: residual capacity (edge e^1 is e's reverse)
	level, iter []int32 // per node: the phase's BFS level and current edge
	queue       []int32
}

// reset empties the network and sizes it to nodes.
func (g *flowNet) reset(nodes int) {
	g.head = g.head[:0]
	for range nodes {
		g.head = append(g.head, -1)
	}
	g.next, g.to, g.res = g.next[:0], g.to[:0], g.res[:0]
	g.level = append(g.level[:0], make([]int32, nodes)...)
	g.iter = append(g.iter[:0], make([]int32, nodes)...)
}

// add adds an edge u -> v of capacity c (0 when negative) and returns it.
func (g *flowNet) add(u, v, c int32) int32 {
	e := int32(len(g.to))
	g.to = append(g.to, v, u)
	g.res = append(g.res, max(c, 0), 0)
	g.next = append(g.next, g.head[u], g.head[v])
	g.head[u], g.head[v] = e, e+1
	return e
}

// push sends x units along edge e (the starting flow).
func (g *flowNet) push(e, x int32) {
	g.res[e] -= x
	g.res[e^1] += x
}

// flowOn is the flow edge e carries.
func (g *flowNet) flowOn(e int32) int32 { return g.res[e^1] }

// raise adds d to edge e's capacity.
func (g *flowNet) raise(e, d int32) { g.res[e] += d }

// augment sends flow from s to t until no augmenting path is left and
// returns what it added.
func (g *flowNet) augment(s, t int32) int {
	total := 0
	for g.bfs(s, t) {
		copy(g.iter, g.head)
		for {
			x := g.dfs(s, t, 1<<30)
			if x == 0 {
				break
			}
			total += int(x)
		}
	}
	return total
}

func (g *flowNet) bfs(s, t int32) bool {
	for i := range g.level {
		g.level[i] = -1
	}
	g.level[s] = 0
	g.queue = append(g.queue[:0], s)
	for h := 0; h < len(g.queue); h++ {
		u := g.queue[h]
		if g.level[t] >= 0 && g.level[u] >= g.level[t] {
			break // nodes this far cannot lie on a shortest path
		}
		for e := g.head[u]; e >= 0; e = g.next[e] {
			if v := g.to[e]; g.res[e] > 0 && g.level[v] < 0 {
				g.level[v] = g.level[u] + 1
				g.queue = append(g.queue, v)
			}
		}
	}
	return g.level[t] >= 0
}

func (g *flowNet) dfs(u, t, x int32) int32 {
	if u == t {
		return x
	}
	for ; g.iter[u] >= 0; g.iter[u] = g.next[g.iter[u]] {
		e := g.iter[u]
		v := g.to[e]
		if g.res[e] > 0 && g.level[v] == g.level[u]+1 {
			if got := g.dfs(v, t, min(x, g.res[e])); got > 0 {
				g.push(e, got)
				return got
			}
		}
	}
	return 0
}
