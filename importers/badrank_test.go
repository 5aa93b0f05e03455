package importers

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// discard counts the events streamed to it.
type discard struct{ events int }

func (d *discard) Begin(*Header) error                 { return nil }
func (d *discard) Events(batch []timeline.Event) error { d.events += len(batch); return nil }

// TestBadTraceBesideGood: a file named like a trace that is garbage or empty, beside a good trace,
// is one rank's trace that cannot be read: left out with a warning naming it and what is wrong, as
// a trace cut short is, and the good one imported. A garbage file not named like a trace, or
// traces that are all bad, are still refused.
func TestBadTraceBesideGood(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("rank0.json", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1000,"dur":5,"args":{"device":0,"stream":7}},`+
		`{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1010,"dur":5,"args":{"device":0,"stream":7}}]}`))
	noise := make([]byte, 4096)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	noise[0] = 0 // binary whatever the draw: no format of xfertop's
	garbage := write("rank1.json", noise)
	empty := write("rank2.json", nil)
	other := write("rank3.bin", noise)
	tests := []struct {
		name   string
		paths  []string
		events int
		warn   []string // each a warning's text, naming the file
		err    string   // the refusal, when there is one
	}{
		{"garbage", []string{good, garbage}, 2, []string{garbage + ": not valid JSON at byte offset 0"}, ""},
		{"empty", []string{good, empty}, 2, []string{empty + ": the file is empty (0 bytes)"}, ""},
		{"both", []string{empty, good, garbage}, 2, []string{empty + ": the file is empty", garbage + ": not valid JSON"}, ""},
		{"not named a trace", []string{good, other}, 0, nil, other + ": none of the formats"},
		{"all bad", []string{garbage, empty}, 0, nil, garbage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d discard
			res, err := Stream(tc.paths, Options{}, &d)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Stream(%v) = %v; want refused with %q", tc.paths, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Stream(%v) = %v; want the good trace imported", tc.paths, err)
			}
			if d.events != tc.events {
				t.Errorf("%d events; want %d", d.events, tc.events)
			}
			for _, w := range tc.warn {
				if !slices.ContainsFunc(res.Warnings, func(s string) bool { return strings.Contains(s, w) && strings.Contains(s, "left out") }) {
					t.Errorf("warnings %s; want one with %q, left out", fmt.Sprintf("%q", res.Warnings), w)
				}
			}
		})
	}
}
