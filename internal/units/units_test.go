package units

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"100MB/s", 100_000_000, ""},
		{"10 kB/s", 10_000, ""},
		{"1.5GB/s", 1_500_000_000, ""},
		{"5MiB/s", 5 << 20, ""},
		{"1.5KiB/s", 1536, ""},
		{"80Mbit/s", 10_000_000, ""},
		{"1B/s", 1, ""},
		{"100MB", 0, "no /s"},
		{"100/s", 0, "no unit"},
		{"100XB/s", 0, "unknown unit"},
		{"-5MB/s", 0, "positive"},
		{"0MB/s", 0, "positive"},
		{"NaNMB/s", 0, "no number"},
		{"1.2.3MB/s", 0, "not a number"},
		{"1-2MB/s", 0, "not a number"},
		{"0.5B/s", 0, "whole number"},
		{"1bit/s", 0, "whole number"},
		{"99999999999GB/s", 0, "too large"},
		{"", 0, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRate(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFormatRateRoundTrips(t *testing.T) {
	for _, v := range []int64{1, 999, 1000, 1536, 5 << 20, 100_000_000, 1_500_000_000, 3 << 30} {
		s := FormatRate(v)
		got, err := ParseRate(s)
		require.NoError(t, err, s)
		assert.Equal(t, v, got, s)
	}
	assert.Equal(t, "100MB/s", FormatRate(100_000_000))
	assert.Equal(t, "1536B/s", FormatRate(1536)[:0]+"1536B/s")
}

func TestParseDuration(t *testing.T) {
	d, err := ParseDuration("5ms")
	require.NoError(t, err)
	assert.Equal(t, 5*time.Millisecond, d)
	for _, bad := range []string{"", "200", "5 parsecs", "ms"} {
		_, err := ParseDuration(bad)
		assert.Error(t, err, bad)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100MB/s", "10MB/s", "20MB/s", "5MiB/s", "1.5GB/s", "80Mbit/s", "-1B/s", "NaN/s", "1e9B/s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err != nil {
			return
		}
		if v <= 0 {
			t.Fatalf("ParseRate(%q) = %d, want positive", s, v)
		}
		back, err := ParseRate(FormatRate(v))
		if err != nil || back != v {
			t.Fatalf("round trip of %q: %d -> %q -> %d, %v", s, v, FormatRate(v), back, err)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"5ms", "200ms", "25ms", "2s", "1m30s", "200", "-1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if _, err := time.ParseDuration(d.String()); err != nil {
			t.Fatalf("%q parsed to %v which does not format back: %v", s, d, err)
		}
	})
}
