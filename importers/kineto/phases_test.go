package kineto

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// TestEventsLeftOutSayWhy: events that are not read, or not read whole, are named in a warning
// saying what is wrong: a dur that is a number out of range (not "not a number"), duration events
// (B, E) and phases the format does not name (counted, once per file), and a copy that moves its
// bytes faster than anything can (its size unknown, so no rate above every link is made of it).
func TestEventsLeftOutSayWhy(t *testing.T) {
	const kernel = `{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":5,"args":{"device":0,"stream":7}}`
	tests := []struct {
		name, event string
		warn        string // the warning, after the file's name
		events      int    // events imported, the kernel's included
		bytes       int64  // the last event's
	}{
		{"dur 31 years", `{"ph":"X","cat":"kernel","name":"long","pid":0,"tid":7,"ts":20,"dur":1e15,"args":{"device":0,"stream":7}}`,
			`traceEvents[1] "long": dur 277777h46m40s is longer than 24 h: event left out`, 1, 0},
		{"dur past int64", `{"ph":"X","cat":"kernel","name":"huge","pid":0,"tid":7,"ts":20,"dur":99999999999999999999,"args":{"device":0,"stream":7}}`,
			`traceEvents[1] "huge": dur is out of range (146 years or more): event left out`, 1, 0},
		{"dur 1e400", `{"ph":"X","cat":"kernel","name":"inf","pid":0,"tid":7,"ts":20,"dur":1e400,"args":{"device":0,"stream":7}}`,
			`traceEvents[1] "inf": dur is out of range (146 years or more): event left out`, 1, 0},
		{"unmatched B", `{"ph":"B","cat":"cpu_op","name":"op","pid":0,"tid":1,"ts":1}`,
			`1 duration event (ph B or E) not read: xfertop reads complete events (ph X)`, 1, 0},
		{"unknown ph", `{"ph":"Q","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":10,"dur":5,"args":{"device":0,"stream":7}}`,
			`1 event of a phase the Trace Event Format does not name (the first: ph "Q") left out`, 1, 0},
		{"no ph", `{"cat":"kernel","name":"k2","pid":0,"tid":7,"ts":10,"dur":5,"args":{"device":0,"stream":7}}`,
			`1 event of a phase the Trace Event Format does not name (the first: no ph) left out`, 1, 0},
		{"1 GB in no time", `{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":10,"dur":0,"args":{"device":0,"stream":7,"bytes":1000000000}}`,
			`traceEvents[1] "Memcpy HtoD (Pageable -> Device)": args.bytes 1000000000 in dur 0s is faster than anything moves data (20000 GB/s): a broken record, its size taken as unknown`, 2, 0},
		{"8 B in no time", `{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":10,"dur":0,"args":{"device":0,"stream":7,"bytes":8}}`,
			"", 2, 8},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "t.json")
			if err := os.WriteFile(p, []byte(`{"traceEvents":[`+kernel+",\n"+tc.event+`]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			im, err := ReadFiles([]string{p}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.warn == "" && len(im.Warnings) > 0 || tc.warn != "" && !slices.ContainsFunc(im.Warnings, func(w string) bool { return strings.HasPrefix(w, p+": "+tc.warn) }) {
				t.Errorf("warnings %q; want %q", im.Warnings, tc.warn)
			}
			if len(im.Events) != tc.events {
				t.Fatalf("%d events; want %d", len(im.Events), tc.events)
			}
			last := im.Events[len(im.Events)-1]
			if last.Kind == timeline.KindMemcpy && last.Bytes != tc.bytes {
				t.Errorf("the copy's bytes %d; want %d", last.Bytes, tc.bytes)
			}
		})
	}
}
