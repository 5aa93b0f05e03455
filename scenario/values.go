package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func parseInt(s string) (int64, error) {
	return strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(s), "_", ""), 10, 64)
}

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

// ParseSize reads a byte count such as 8, 64KiB, 1.5MiB, 1GiB or 4GB.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil || !(v >= 0) || v*mult > 1<<62 { // !(v >= 0) also rejects NaN
		return 0, fmt.Errorf("%q is not a size (examples: 8, 64KiB, 1GiB)", s)
	}
	return int64(v * mult), nil
}

// FormatSize writes a byte count compactly with binary units (1GiB, 64MiB, 8B).
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// ParseDuration reads a duration such as 21ms, 150us, 1.5s or 250µs.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (examples: 150us, 21ms, 2s)", s)
	}
	return d, nil
}

// ParseBool reads on/off, true/false, yes/no, 1/0.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "true", "yes", "1":
		return true, nil
	case "off", "false", "no", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not on/off", s)
}
