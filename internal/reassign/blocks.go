package reassign

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Leader blocks (FixOverlaps). A topic's leaders live in its block: a set
// of brokers inside its cell. Blocks never partially overlap: they are the
// cells themselves, or, in a cell where some topic has fewer partitions
// than the cell has brokers, a partition of the cell into disjoint blocks
// no larger than the partition count of any topic in them (the thesis's
// Fig 6.6 remedy: topics that cannot cover a cell get brokers of their
// own). Without FixOverlaps every block is its cell.

// chooseBlocks sets w.blocks, w.blockOf and w.tblock.
func (w *work) chooseBlocks() {
	n := w.n()
	w.blockOf = make([]int32, n)
	for b := range w.blockOf {
		w.blockOf[b] = -1
	}
	w.tblock = make([]int32, len(w.tname))
	w.blocks = nil
	for ci, cell := range w.cells {
		var topics []int
		for t := range w.tname {
			if int(w.tcell[t]) == ci {
				topics = append(topics, t)
			}
		}
		groups, sizes := w.groupTopics(topics, len(cell))
		if groups == nil {
			w.addBlock(cell, topics)
			continue
		}
		for gi, brokers := range w.pickBrokers(cell, groups, sizes) {
			w.addBlock(brokers, groups[gi])
		}
	}
}

func (w *work) addBlock(brokers []int32, topics []int) {
	id := int32(len(w.blocks))
	bs := slices.Clone(brokers)
	slices.Sort(bs)
	w.blocks = append(w.blocks, bs)
	for _, b := range bs {
		w.blockOf[b] = id
	}
	for _, t := range topics {
		w.tblock[t] = id
	}
}

func (w *work) parts(t int) int { return int(w.tstart[t+1] - w.tstart[t]) }

// groupTopics splits a cell's topics into groups, each to lead from a block
// of its own, when some topic has fewer partitions than the cell has
// brokers. A group of topics gets round(its partitions / leaders per
// broker) brokers, never more than its smallest topic's partition count, so
// every topic covers its whole block. It returns nil when one block (the
// whole cell) is the answer or no split fits the cell exactly.
func (w *work) groupTopics(topics []int, k int) ([][]int, []int) {
	if !w.opts.FixOverlaps || len(topics) == 0 {
		return nil, nil
	}
	total := 0
	small := false
	for _, t := range topics {
		total += w.parts(t)
		small = small || w.parts(t) < k
	}
	if !small {
		return nil, nil
	}
	m := float64(total) / float64(k) // leaders per broker
	// A group of topics needs ceil(partitions/m) brokers and may have no
	// more than its smallest topic's partition count. Topics join the open
	// group (largest first) while it can still cover them; every group is
	// then at most m leaders per broker, and the sizes are evened out below.
	need := func(sum int) int { return max(1, int(math.Ceil(float64(sum)/m-1e-9))) }
	// room is how many brokers a topic of p partitions may lead from. A
	// large topic keeps two partitions per broker, so that every broker of
	// its block can find partitions to lead among its replicas; a small one
	// needs only one each.
	room := func(p int) int {
		if p >= 16 {
			return p / 2
		}
		return p
	}
	order := slices.Clone(topics)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(w.parts(b), w.parts(a)) })
	var groups [][]int
	var sizes, sums, mins []int
	for _, t := range order {
		p := w.parts(t)
		if g := len(groups) - 1; g >= 0 && need(sums[g]+p) <= room(p) {
			groups[g] = append(groups[g], t)
			sums[g] += p
			mins[g] = room(p)
			sizes[g] = need(sums[g])
			continue
		}
		groups = append(groups, []int{t})
		sums, mins, sizes = append(sums, p), append(mins, room(p)), append(sizes, min(need(p), room(p)))
	}
	// Make the sizes add up to the cell: shrink the groups with the fewest
	// leaders per broker, grow those with the most (within their caps).
	sum := 0
	for _, s := range sizes {
		sum += s
	}
	perBroker := func(g int) float64 { return float64(sums[g]) / float64(sizes[g]) }
	for sum != k {
		best := -1
		for g := range groups {
			switch {
			case sum > k && sizes[g] > 1 && (best < 0 || perBroker(g) < perBroker(best)):
				best = g
			case sum < k && sizes[g] < mins[g] && (best < 0 || perBroker(g) > perBroker(best)):
				best = g
			}
		}
		if best < 0 {
			return nil, nil // more groups than brokers, or caps too small
		}
		if sum > k {
			sizes[best]--
			sum--
		} else {
			sizes[best]++
			sum++
		}
	}
	if len(groups) == 1 {
		return nil, nil
	}
	// Only leaders are confined to a block; replicas may sit anywhere in
	// the cell, so a block may be smaller than the replication factor.
	return groups, sizes
}

// pickBrokers gives each group the brokers of the cell that lead most of
// its topics' partitions now (largest groups first), so few leaders move.
func (w *work) pickBrokers(cell []int32, groups [][]int, sizes []int) [][]int32 {
	n := w.n()
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	taken := make([]bool, n)
	out := make([][]int32, len(groups))
	score := make([]int, n)
	for _, g := range order {
		for _, b := range cell {
			score[b] = 0
		}
		for _, t := range groups[g] {
			for i := w.tstart[t]; i < w.tstart[t+1]; i++ {
				p := &w.c.Partitions[i]
				for j, r := range p.Replicas {
					if b, ok := w.pos[r]; ok && w.cellOf[b] >= 0 {
						if j == 0 {
							score[b] += 4 // a leader now: keeping it costs nothing
						} else {
							score[b]++ // a replica: leading it costs no copy
						}
					}
				}
			}
		}
		free := make([]int32, 0, len(cell))
		for _, b := range cell {
			if !taken[b] {
				free = append(free, b)
			}
		}
		slices.SortStableFunc(free, func(a, b int32) int { return cmp.Compare(score[b], score[a]) })
		out[g] = free[:sizes[g]]
		for _, b := range out[g] {
			taken[b] = true
		}
	}
	return out
}

// inBlock reports whether broker b may lead topic t.
func (w *work) inBlock(b int32, t int) bool { return w.blockOf[b] == w.tblock[t] }

// anchor gives every partition of a topic confined to a smaller block than
// its cell a replica inside the block, so it can lead from there. A
// partition of replication factor 1 moves only off a broker above its
// target (a move count balance needs anyway, as in the thesis's Fig 6.6),
// otherwise it stays: its only replica is its data, and anchoring every one
// moved a whole topic onto its block (an RF-1 topic spread 1-1-1 onto one
// broker, several times the bound). It then leads from where it is, and
// the overlap it leaves is reported.
func (w *work) anchor() {
	n := w.n()
	tie := w.tieOrder()
	// sole counts, per broker, the partitions whose only replica in their
	// block it holds: it will have to lead them. Anchors go where it is
	// lowest, so forced leaderships spread over the block.
	sole := make([]int, n)
	for i := range w.c.Partitions {
		t := int(w.ptopic[i])
		if w.inBlockReplicas(i, t) == 1 {
			for s := w.off[i]; s < w.off[i+1]; s++ {
				if b := w.slots[s]; w.inBlock(b, t) {
					sole[b]++
				}
			}
		}
	}
	for t := range w.tname {
		block := w.blocks[w.tblock[t]]
		if len(block) == len(w.cells[w.tcell[t]]) {
			continue
		}
		hi := int32((w.parts(t) + len(block) - 1) / len(block))
		single := 0
		for i := int(w.tstart[t]); i < int(w.tstart[t+1]); i++ {
			if w.inBlockReplicas(i, t) > 0 {
				continue
			}
			if b := w.slots[w.off[i]]; w.off[i+1]-w.off[i] == 1 && w.cnt[b] <= w.tgt[b] {
				single++
				continue
			}
			// Move the replica on the most loaded broker (relative to its
			// target) to the block broker with the fewest forced
			// leaderships, among those below the topic's share.
			bestS := int32(-1)
			for s := w.off[i]; s < w.off[i+1]; s++ {
				if b := w.slots[s]; bestS < 0 || w.cnt[b]-w.tgt[b] > w.cnt[w.slots[bestS]]-w.tgt[w.slots[bestS]] {
					bestS = s
				}
			}
			best := int32(-1)
			better := func(d int32) bool {
				if best < 0 {
					return true
				}
				od, ob := w.tc[t*n+int(d)] >= hi, w.tc[t*n+int(best)] >= hi
				if od != ob {
					return !od
				}
				if sole[d] != sole[best] {
					return sole[d] < sole[best]
				}
				return tie[d] < tie[best]
			}
			for _, d := range block {
				if !w.holds(i, d) && w.rackFree(i, d, bestS) && w.mayTake(i, d) && better(d) {
					best = d
				}
			}
			if best >= 0 {
				w.put(i, bestS, best)
				sole[best]++
			}
		}
		if single > 0 {
			w.notes = append(w.notes, fmt.Sprintf("topic %s: %s of replication factor 1 outside its leader block stay where they are (moving one moves all its data, and their brokers are within their targets); they lead from there",
				w.tname[t], plural(single, "partition")))
		}
	}
}

// inBlockReplicas counts partition i's replicas inside topic t's block.
func (w *work) inBlockReplicas(i, t int) int {
	k := 0
	for s := w.off[i]; s < w.off[i+1]; s++ {
		if w.inBlock(w.slots[s], t) {
			k++
		}
	}
	return k
}

// spreadSole relieves block brokers that would be forced to lead more than
// their share of a topic: for a partition whose only replica in its block
// sits on such a broker, a replica outside the block (useless for leading)
// moves to the block broker holding fewest of the topic, giving the
// partition a second broker it can lead from.
func (w *work) spreadSole() {
	n := w.n()
	tie := w.tieOrder()
	sole := make([]int32, n)
	for t := range w.tname {
		block := w.blocks[w.tblock[t]]
		if len(block) == len(w.cells[w.tcell[t]]) {
			continue
		}
		hi := int32((w.parts(t) + len(block) - 1) / len(block))
		var touched []int32
		soleOn := func(i int) int32 {
			for s := w.off[i]; s < w.off[i+1]; s++ {
				if b := w.slots[s]; w.inBlock(b, t) {
					return b
				}
			}
			return -1
		}
		for i := int(w.tstart[t]); i < int(w.tstart[t+1]); i++ {
			if w.inBlockReplicas(i, t) == 1 {
				b := soleOn(i)
				if sole[b] == 0 {
					touched = append(touched, b)
				}
				sole[b]++
			}
		}
		for i := int(w.tstart[t]); i < int(w.tstart[t+1]); i++ {
			if w.inBlockReplicas(i, t) != 1 {
				continue
			}
			b := soleOn(i)
			if sole[b] <= hi {
				continue
			}
			out := int32(-1)
			for s := w.off[i]; s < w.off[i+1]; s++ {
				if x := w.slots[s]; !w.inBlock(x, t) && (out < 0 || w.cnt[x]-w.tgt[x] > w.cnt[w.slots[out]]-w.tgt[w.slots[out]]) {
					out = s
				}
			}
			if out < 0 {
				continue
			}
			best := int32(-1)
			for _, d := range block {
				if w.holds(i, d) || !w.rackFree(i, d, out) || !w.mayTake(i, d) {
					continue
				}
				if best < 0 || w.tc[t*n+int(d)] < w.tc[t*n+int(best)] || w.tc[t*n+int(d)] == w.tc[t*n+int(best)] && tie[d] < tie[best] {
					best = d
				}
			}
			if best >= 0 {
				w.put(i, out, best)
				sole[b]--
			}
		}
		for _, b := range touched {
			sole[b] = 0
		}
	}
}
