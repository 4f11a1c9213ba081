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
	var h maphash.Hash
	h.SetSeed(seed)
	var buf [8]byte
	for _, w := range s {
		for i := range 8 {
			buf[i] = byte(w >> (8 * i))
		}
		_, _ = h.Write(buf[:])
	}
	return h.Sum64()
}

// Index maps sparse broker ids onto dense indexes 0..n-1 in id order.
type Index struct {
	ids []int32
	pos map[int32]int
}

// NewIndex builds the index of the cluster's brokers (sorted by id).
func NewIndex(brokers []Broker) *Index {
	ix := &Index{ids: make([]int32, len(brokers)), pos: make(map[int32]int, len(brokers))}
	for i, b := range brokers {
		ix.ids[i] = b.ID
		ix.pos[b.ID] = i
	}
	return ix
}

// Len returns the number of brokers.
func (ix *Index) Len() int { return len(ix.ids) }

// ID returns the broker id at dense index i.
func (ix *Index) ID(i int) int32 { return ix.ids[i] }

// Pos returns the dense index of broker id.
func (ix *Index) Pos(id int32) (int, bool) {
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
