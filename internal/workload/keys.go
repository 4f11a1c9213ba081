// Package workload describes the traffic of a chaos experiment or an audit's
// prediction: per-topic rates and record keys. Keys follow Kafka's rule for
// keyed records (murmur2 of the key, high bit masked, modulo the partition
// count), so the share of records each partition takes under a key
// distribution is computed exactly rather than sampled.
//
// The package is pure: no I/O, no Kafka client; random sources are injected.
package workload

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// KeyKind is how record keys are drawn.
type KeyKind uint8

// Key kinds.
const (
	// KeysNone writes keyless records.
	KeysNone KeyKind = iota
	// KeysUniform draws each key uniformly from N distinct keys.
	KeysUniform
	// KeysZipf draws key i (0-based) of N with probability proportional to
	// 1/(i+1)^S: a few hot keys, a long tail.
	KeysZipf
)

// MaxKeys bounds N: the exact per-partition mass hashes every key once.
const MaxKeys = 1_000_000

// FieldKeys is the field (flag) key errors name.
const FieldKeys = "keys"

// Keys is a key distribution: none, uniform:N or zipf:S:N.
type Keys struct {
	Kind KeyKind
	N    int
	S    float64
}

// ParseKeys parses none, uniform:N or zipf:S:N (S >= 0, 1 <= N <= MaxKeys).
// Errors are usage errors naming FieldKeys.
func ParseKeys(s string) (Keys, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	bad := func(why string) (Keys, error) {
		return Keys{}, errkind.Usagef(FieldKeys, "keys %q: %s (want none, uniform:N or zipf:S:N)", s, why)
	}
	count := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 1 && n <= MaxKeys
	}
	switch parts[0] {
	case "none", "":
		if len(parts) != 1 || parts[0] == "" {
			return bad("no distribution")
		}
		return Keys{}, nil
	case "uniform":
		if len(parts) != 2 {
			return bad("uniform takes one argument, the key count")
		}
		n, ok := count(parts[1])
		if !ok {
			return bad("key count " + strconv.Quote(parts[1]) + " is not 1 to " + strconv.Itoa(MaxKeys))
		}
		return Keys{Kind: KeysUniform, N: n}, nil
	case "zipf":
		if len(parts) != 3 {
			return bad("zipf takes two arguments, the exponent and the key count")
		}
		sv, err := strconv.ParseFloat(parts[1], 64)
		if err != nil || !(sv >= 0) || sv > 100 {
			return bad("exponent " + strconv.Quote(parts[1]) + " is not a number from 0 to 100")
		}
		n, ok := count(parts[2])
		if !ok {
			return bad("key count " + strconv.Quote(parts[2]) + " is not 1 to " + strconv.Itoa(MaxKeys))
		}
		return Keys{Kind: KeysZipf, N: n, S: sv}, nil
	}
	return bad("unknown distribution " + strconv.Quote(parts[0]))
}

// String returns the distribution as ParseKeys reads it.
func (k Keys) String() string {
	switch k.Kind {
	case KeysUniform:
		return "uniform:" + strconv.Itoa(k.N)
	case KeysZipf:
		return "zipf:" + strconv.FormatFloat(k.S, 'g', -1, 64) + ":" + strconv.Itoa(k.N)
	}
	return "none"
}

// Keyed reports whether records carry keys.
func (k Keys) Keyed() bool { return k.Kind != KeysNone && k.N > 0 }

// Key returns key i as records carry it.
func Key(i int) []byte { return strconv.AppendInt([]byte("key-"), int64(i), 10) }

// Weights returns each key's probability, in key order; nil for keyless.
func (k Keys) Weights() []float64 {
	if !k.Keyed() {
		return nil
	}
	w := make([]float64, k.N)
	var total float64
	for i := range w {
		if k.Kind == KeysZipf {
			w[i] = math.Pow(float64(i+1), -k.S)
		} else {
			w[i] = 1
		}
		total += w[i]
	}
	for i := range w {
		w[i] /= total
	}
	return w
}

// Murmur2 is Kafka's murmur2 hash of b (Utils.murmur2, seed 0x9747b28c).
func Murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[3])<<24 | uint32(b[2])<<16 | uint32(b[1])<<8 | uint32(b[0])
		b = b[4:]
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// PartitionOf is the partition Kafka's default rule sends key to among n:
// murmur2 with the high bit masked, modulo n.
func PartitionOf(key []byte, n int) int { return int(Murmur2(key)&0x7fffffff) % n }

// PartitionMass returns the share of records each of n partitions takes when
// keyed records are hashed to partitions by Kafka's rule; keyless records
// give every partition 1/n (the mean over a keyless partitioner's choices).
func (k Keys) PartitionMass(n int) []float64 {
	out := make([]float64, n)
	if n <= 0 {
		return out
	}
	w := k.Weights()
	if w == nil {
		for i := range out {
			out[i] = 1 / float64(n)
		}
		return out
	}
	for i, wi := range w {
		out[PartitionOf(Key(i), n)] += wi
	}
	return out
}

// Sampler draws keys from a distribution.
type Sampler struct {
	cum []float64
	rng *rand.Rand
}

// NewSampler returns a sampler of k drawing from rng; nil for keyless.
func NewSampler(k Keys, rng *rand.Rand) *Sampler {
	w := k.Weights()
	if w == nil {
		return nil
	}
	cum := make([]float64, len(w))
	var s float64
	for i, x := range w {
		s += x
		cum[i] = s
	}
	return &Sampler{cum: cum, rng: rng}
}

// Next returns the next key's index.
func (s *Sampler) Next() int {
	u := s.rng.Float64() * s.cum[len(s.cum)-1]
	i := sort.SearchFloat64s(s.cum, u)
	return min(i, len(s.cum)-1)
}
