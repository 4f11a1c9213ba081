package reassign

// pathSearch is the augmenting-path search the failover phase and its
// figures share (exactRows, topicRows, rackRows, topicRepair,
// minMaxAssign): a breadth-first search over brokers from one broker, each
// hop an item (a partition) handed from the broker it is on to another of
// its brokers. It is scratch sized to the brokers once; every search
// leaves it reset.
type pathSearch struct {
	// from and item are the hop that reached a broker: item, handed over
	// from broker from.
	from, item     []int32
	seen           []bool
	queue, visited []int32
}

func newPathSearch(n int) *pathSearch {
	return &pathSearch{from: make([]int32, n), item: make([]int32, n), seen: make([]bool, n)}
}

// search looks for a path from start and returns the broker that ends it,
// or -1. on(x) lists the items on broker x in the order they are tried;
// to(k, x) the brokers item k on x may be handed to, in order (nil: none);
// may(k, y) whether it may go to broker y, not reached yet (nil: any);
// end(y) whether a broker just reached ends the path. walk then applies it.
func (p *pathSearch) search(start int32, on func(x int32) []int32, to func(k, x int32) []int32, may func(k, y int32) bool, end func(y int32) bool) int32 {
	p.queue = append(p.queue[:0], start)
	p.visited = append(p.visited[:0], start)
	p.seen[start] = true
	found := int32(-1)
	for head := 0; head < len(p.queue) && found < 0; head++ {
		x := p.queue[head]
		for _, k := range on(x) {
			for _, y := range to(k, x) {
				if p.seen[y] || may != nil && !may(k, y) {
					continue
				}
				p.seen[y] = true
				p.visited = append(p.visited, y)
				p.from[y], p.item[y] = x, k
				if end(y) {
					found = y
					break
				}
				p.queue = append(p.queue, y)
			}
			if found >= 0 {
				break
			}
		}
	}
	for _, v := range p.visited {
		p.seen[v] = false
	}
	return found
}

// walk calls hop(k, x, y) for each hop of the path search found from
// start to end, from the end back: item k goes from broker x to broker y.
func (p *pathSearch) walk(start, end int32, hop func(k, x, y int32)) {
	for y := end; y != start; {
		k, x := p.item[y], p.from[y]
		hop(k, x, y)
		y = x
	}
}
