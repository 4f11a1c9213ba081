package topology

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// Bitset is a set of dense broker indexes (see Index), one bit each.
// All bitsets of one Index have the same length, so they compare word by word.
type Bitset []uint64

// NewBitset returns an empty set able to hold n indexes.
func NewBitset(n int) Bitset { return make(Bitset, (n+63)/64) }

// Set adds index i.
func (s Bitset) Set(i int) { s[i>>6] |= 1 << (uint(i) & 63) }

// Clear removes index i.
func (s Bitset) Clear(i int) { s[i>>6] &^= 1 << (uint(i) & 63) }

// Has reports whether index i is in the set.
func (s Bitset) Has(i int) bool { return s[i>>6]&(1<<(uint(i)&63)) != 0 }

// Count returns the number of indexes in the set.
func (s Bitset) Count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// Empty reports whether the set has no index.
func (s Bitset) Empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether two sets of the same length hold the same indexes.
func (s Bitset) Equal(o Bitset) bool { return slices.Equal(s, o) }

// Intersects reports whether the sets share an index.
func (s Bitset) Intersects(o Bitset) bool {
	for i := range s {
		if s[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// And returns the intersection as a new set.
func (s Bitset) And(o Bitset) Bitset {
	out := make(Bitset, len(s))
	for i := range s {
		out[i] = s[i] & o[i]
	}
	return out
}

// Clone returns a copy.
func (s Bitset) Clone() Bitset { return slices.Clone(s) }

// Indexes returns the set's indexes in increasing order.
func (s Bitset) Indexes() []int {
	out := make([]int, 0, s.Count())
	for wi, w := range s {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			out = append(out, wi*64+b)
			w &= w - 1
		}
	}
	return out
}

// Hash returns a hash of the set's words under seed, for grouping sets in
// maps without comparing every pair.
func (s Bitset) Hash(seed maphash.Seed) uint64 {
	// The seed keys a multiply-xorshift over the words: one maphash call per
	// set instead of one per word.
	h := maphash.String(seed, "kplan.Bitset")
	for _, w := range s {
		h ^= w
		h *= 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	return h
}

// Index maps sparse broker ids onto dense indexes 0..n-1 in id order.
type Index struct {
	ids []int32
	pos map[int32]int
	// dense[id-lo] is pos+1 (0: absent) when the ids span at most
	// denseSpan values, so Pos is an array load, not a map lookup.
	lo    int32
	dense []int32
}

// denseSpan bounds the id range Index keeps as a lookup array (4 MiB).
const denseSpan = 1 << 20

// NewIndex builds the index of the cluster's brokers (sorted by id).
func NewIndex(brokers []Broker) *Index {
	ix := &Index{ids: make([]int32, len(brokers)), pos: make(map[int32]int, len(brokers))}
	lo, hi := int64(0), int64(-1)
	for i, b := range brokers {
		ix.ids[i] = b.ID
		ix.pos[b.ID] = i
		if i == 0 || int64(b.ID) < lo {
			lo = int64(b.ID)
		}
		hi = max(hi, int64(b.ID))
	}
	if len(brokers) > 0 && hi-lo < denseSpan {
		ix.lo = int32(lo)
		ix.dense = make([]int32, hi-lo+1)
		for i, id := range ix.ids {
			ix.dense[id-ix.lo] = int32(i) + 1
		}
	}
	return ix
}

// Len returns the number of brokers.
func (ix *Index) Len() int { return len(ix.ids) }

// ID returns the broker id at dense index i.
func (ix *Index) ID(i int) int32 { return ix.ids[i] }

// Pos returns the dense index of broker id.
func (ix *Index) Pos(id int32) (int, bool) {
	if ix.dense != nil {
		if d := int64(id) - int64(ix.lo); d >= 0 && d < int64(len(ix.dense)) {
			i := ix.dense[d]
			return int(i) - 1, i != 0
		}
		return 0, false
	}
	i, ok := ix.pos[id]
	return i, ok
}

// NewSet returns an empty set sized for this index.
func (ix *Index) NewSet() Bitset { return NewBitset(len(ix.ids)) }

// IDs returns the broker ids in a set, in increasing order.
func (ix *Index) IDs(s Bitset) []int32 {
	idx := s.Indexes()
	out := make([]int32, len(idx))
	for i, j := range idx {
		out[i] = ix.ids[j]
	}
	return out
}
