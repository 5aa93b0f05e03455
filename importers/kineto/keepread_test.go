package kineto

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// TestKeepReadDamagedLate: with KeepRead, one trace damaged or cut late gives the events read
// before the damage and the error naming where; progress is told that offset, not a figure
// behind it. Without it nothing goes out (a report refuses the file).
func TestKeepReadDamagedLate(t *testing.T) {
	dir := t.TempDir()
	p := writeRank(t, dir, 0, 100)
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The 81st event's opening brace: the first 80 are whole before it.
	at := 0
	for range 81 {
		at += strings.Index(string(good[at+1:]), `{"ph"`) + 1
	}
	tests := []struct {
		name string
		body []byte
		msg  string
	}{
		{"damaged", append(append(append([]byte{}, good[:at]...), "@@garbage@@"...), good[at+11:]...), "not valid JSON at byte offset"},
		{"cut", good[:at+3], "truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(p, tc.body, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, keep := range []bool{false, true} {
				var told int64
				events := 0
				opts := Options{KeepRead: keep, Progress: func(done, _ int64) { told = done }}
				_, err := Stream([]string{p}, opts, func(*Imported) error { return nil },
					func(b []timeline.Event) error { events += len(b); return nil })
				if err == nil || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("KeepRead %v: error %v; want one saying %q", keep, err, tc.msg)
				}
				want := 0
				if keep {
					want = 80
				}
				if events != want {
					t.Errorf("KeepRead %v: %d events went out; want %d (those before byte %d)", keep, events, want, at)
				}
				if keep && (told < int64(at) || told > int64(at)+12 || !strings.Contains(err.Error(), "offset "+strconv.FormatInt(told, 10))) {
					t.Errorf("progress told %d; want the offset the error names: %v", told, err)
				}
			}
		})
	}
}
