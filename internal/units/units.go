// Package units parses and formats the quantities kplan's flags and plan
// files take: data rates with decimal or binary units, and durations. Values
// are exact integers (bytes per second, nanoseconds) so that sizing never
// meets a float rounding surprise at a boundary.
package units

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// rateUnits maps a unit (before "/s") to bytes per unit as a rational
// numerator/denominator; bits are 1/8 byte.
var rateUnits = map[string][2]int64{
	"B": {1, 1}, "kB": {1000, 1}, "KB": {1000, 1}, "MB": {1000 * 1000, 1}, "GB": {1000 * 1000 * 1000, 1},
	"KiB": {1 << 10, 1}, "MiB": {1 << 20, 1}, "GiB": {1 << 30, 1},
	"bit": {1, 8}, "kbit": {1000, 8}, "Kbit": {1000, 8}, "Mbit": {1000 * 1000, 8}, "mbit": {1000 * 1000, 8}, "Gbit": {1000 * 1000 * 1000, 8},
}

// ParseRate parses a data rate such as "100MB/s", "5 MiB/s", "1.5GB/s" or
// "80Mbit/s" into bytes per second. Decimal units (kB, MB, GB) are powers of
// 1000, binary ones (KiB, MiB, GiB) powers of 1024. The "/s" is required, the
// value must be positive and finite, and the result a whole number of bytes.
func ParseRate(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty rate (want e.g. 100MB/s)")
	}
	unitPart, ok := strings.CutSuffix(s, "/s")
	if !ok {
		return 0, fmt.Errorf("rate %q has no /s (want e.g. 100MB/s)", orig)
	}
	i := 0
	for i < len(unitPart) && (unitPart[i] >= '0' && unitPart[i] <= '9' || unitPart[i] == '.' || unitPart[i] == '-' || unitPart[i] == '+') {
		i++
	}
	num, unit := unitPart[:i], strings.TrimSpace(unitPart[i:])
	if num == "" {
		return 0, fmt.Errorf("rate %q has no number", orig)
	}
	mult, ok := rateUnits[unit]
	if !ok {
		if unit == "" {
			return 0, fmt.Errorf("rate %q has no unit (want B, kB, MB, GB, KiB, MiB, GiB or kbit, Mbit, Gbit, before /s)", orig)
		}
		return 0, fmt.Errorf("rate %q has unknown unit %q (want B, kB, MB, GB, KiB, MiB, GiB or kbit, Mbit, Gbit, before /s)", orig, unit)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || strings.Count(num, ".") > 1 || strings.ContainsAny(num[1:], "+-") {
		return 0, fmt.Errorf("rate %q: %q is not a number", orig, num)
	}
	if r.Sign() <= 0 {
		return 0, fmt.Errorf("rate %q must be positive", orig)
	}
	r.Mul(r, big.NewRat(mult[0], mult[1]))
	if !r.IsInt() {
		return 0, fmt.Errorf("rate %q is not a whole number of bytes per second", orig)
	}
	n := r.Num()
	if !n.IsInt64() || n.Int64() > math.MaxInt64/1024 {
		return 0, fmt.Errorf("rate %q is too large", orig)
	}
	return n.Int64(), nil
}

// FormatRate formats bytes per second with the largest decimal unit that
// keeps the value exact, e.g. 100000000 -> "100MB/s", 1536 -> "1536B/s".
func FormatRate(bps int64) string {
	for _, u := range []struct {
		name string
		f    int64
	}{{"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}} {
		if bps != 0 && bps%u.f == 0 {
			return fmt.Sprintf("%d%s/s", bps/u.f, u.name)
		}
	}
	for _, u := range []struct {
		name string
		f    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if bps != 0 && bps%u.f == 0 {
			return fmt.Sprintf("%d%s/s", bps/u.f, u.name)
		}
	}
	return fmt.Sprintf("%dB/s", bps)
}

// ParseDuration parses a Go duration ("5ms", "2s", "1m30s") and insists on a
// unit, so "200" is an error rather than 200 ns. Sign checks are the caller's.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty duration (want e.g. 5ms)")
	}
	if strings.Trim(t, "0123456789.+-") == "" && t != "0" {
		return 0, fmt.Errorf("duration %q has no unit (want e.g. 5ms, 2s)", s)
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want Go syntax such as 5ms, 200ms, 2s", s)
	}
	return d, nil
}
