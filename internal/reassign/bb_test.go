package reassign

import "math"

// bbSpec is one depth-first branch and bound over decisions 0..levels-1,
// the search bfOptimum (bytes) and bbLoad (load) share: decision k takes
// one of its options, cheapest first, and the caller keeps the state.
type bbSpec struct {
	levels int
	// cost lists decision k's options' costs, ascending.
	cost func(k int) []int64
	// open takes decision k's item out of the undecided state, shut puts
	// it back.
	open, shut func(k int)
	// take and drop apply and undo option j of decision k.
	take, drop func(k, j int)
	// gap, at a node before decision k: dead when no completion can be
	// within the target; otherwise how far outside it the state is (0:
	// within) and the least cost per unit of that the rest can pay.
	gap func(k int) (dead bool, outside, perUnit float64)
	// found, when set, is called at each completion cheaper than the best
	// so far (the caller reads its state there).
	found func()
}

// bbSearch returns the least cost of a completion within the target, -1
// when there is none, and ok false when it gave up after maxNodes nodes.
// ub >= 0 is a known completion's cost: only cheaper ones are searched,
// and ub comes back when none is.
func bbSearch(s bbSpec, ub int64, maxNodes int) (best int64, ok bool) {
	best = -1
	if ub >= 0 {
		best = ub + 1 // find anything at most ub
	}
	nodes := 0
	var dfs func(k int, cost int64) bool
	dfs = func(k int, cost int64) bool {
		if nodes++; nodes > maxNodes {
			return false
		}
		dead, outside, per := s.gap(k)
		if dead {
			return true
		}
		if k == s.levels {
			if outside == 0 && (best < 0 || cost < best) {
				best = cost
				if s.found != nil {
					s.found()
				}
			}
			return true
		}
		if best >= 0 && outside > 0 && float64(cost)+outside*per >= float64(best) {
			return true
		}
		s.open(k)
		for j, c := range s.cost(k) {
			if best >= 0 && cost+c >= best {
				break
			}
			s.take(k, j)
			cont := dfs(k+1, cost+c)
			s.drop(k, j)
			if !cont {
				return false
			}
		}
		s.shut(k)
		return true
	}
	if !dfs(0, 0) {
		return 0, false
	}
	if ub >= 0 && best == ub+1 {
		return ub, true // nothing cheaper
	}
	return best, true
}

// subsets calls f with every rf-subset of 0..n-1, ascending (f must not
// keep cur).
func subsets(n, rf int, f func(cur []int)) {
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) == rf {
			f(cur)
			return
		}
		for b := start; b < n; b++ {
			rec(b+1, append(cur, b))
		}
	}
	rec(0, nil)
}

// suffixMinRatio is, for k = 0..levels, the least cost/amount among items
// k.. (item j's pair from pair(j); an item of amount 0 counts as +Inf,
// and so does the empty suffix).
func suffixMinRatio(levels int, pair func(j int) (cost, amount float64)) []float64 {
	out := make([]float64, levels+1)
	out[levels] = math.Inf(1)
	for j := levels - 1; j >= 0; j-- {
		r := math.Inf(1)
		if c, a := pair(j); a > 0 {
			r = c / a
		}
		out[j] = min(out[j+1], r)
	}
	return out
}
