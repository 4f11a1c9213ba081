package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestIndexDenseAndSparseAgree checks Pos on ids close together (a lookup
// array) and far apart (a map), absent ids included.
func TestIndexDenseAndSparseAgree(t *testing.T) {
	for _, ids := range [][]int32{{3, 5, 9}, {0, 2_000_000, 2_147_483_647}, {1001}} {
		var bs []Broker
		for _, id := range ids {
			bs = append(bs, Broker{ID: id})
		}
		ix := NewIndex(bs)
		for i, id := range ids {
			p, ok := ix.Pos(id)
			assert.True(t, ok)
			assert.Equal(t, i, p)
			assert.Equal(t, id, ix.ID(p))
		}
		for _, id := range []int32{-1, 1, 4, 1000, 1002, 2_000_001, 2_147_483_646} {
			_, ok := ix.Pos(id)
			assert.False(t, ok, "id %d", id)
		}
	}
	_, ok := NewIndex(nil).Pos(0)
	assert.False(t, ok)
}
