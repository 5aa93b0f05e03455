package ui

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	xtimeline "github.com/xfertop/xfertop/timeline"
)

// A replay of an import still being written shows the import's progress under the header, how it
// ended, or the error that stopped it; the replay's clock follows what is imported, and G plays on to its end.
func TestImportLine(t *testing.T) {
	diskFull := &errWrap{"write import.xfr", syscall.ENOSPC}
	tests := []struct {
		name  string
		im    ImportStatus
		want  []string
		avoid []string
	}{
		{"importing", ImportStatus{Done: 11_400_000, Total: 27_300_000, Unit: "rows", Rate: 1_200_000, ETA: 13 * time.Second,
			Events: 5_000_000, Length: 2_000_000_000},
			[]string{"importing  ████████░░░░░░░░░░░░  42%  11.4 M / 27.3 M rows  1.20 M rows/s  ETA 13.0 s", "5.00 M events so far; seek within 2.00 s",
				"t 0 s / 2.00 s"}, []string{"imported "}},
		{"before the first event", ImportStatus{Done: 131_072, Total: 4_200_000, Unit: "rows"},
			[]string{"importing  █░░░░░░░░░░░░░░░░░░░  3%  131 k / 4.20 M rows  no events yet"}, []string{"seek within"}},
		{"bytes", ImportStatus{Done: 3 << 29, Total: 4 << 30, Unit: "bytes", Rate: 380e6, Events: 1000, Length: 5000},
			[]string{"importing  ████████░░░░░░░░░░░░  38%  1.5 GiB / 4 GiB read  380 MB/s"}, nil},
		{"total unknown", ImportStatus{Done: 4096, Unit: "events", Events: 4096, Length: 1000},
			[]string{"importing  4.10 k events  seek within 1.00 µs"}, []string{"░░░░░░░░░░░░░░░░░░░░"}},
		{"finished", ImportStatus{Done: 27_300_000, Total: 27_300_000, Unit: "rows", Events: 12_300_000, Finished: true, Elapsed: 21 * time.Second},
			[]string{"imported 27.3 M / 27.3 M rows (12.3 M events) in 21.0 s"}, []string{"importing"}},
		{"files", ImportStatus{Done: 1024, Total: 1024, Unit: "files", Events: 7170, Finished: true, Elapsed: time.Second},
			[]string{"imported 1,024 / 1,024 files (7.17 k events) in 1.00 s"}, []string{"1.02 k"}},
		{"failed", ImportStatus{Done: 13_650_000, Total: 27_300_000, Unit: "rows", Events: 6_000_000, Finished: true, Err: diskFull},
			[]string{"import stopped at 50% (13.7 M / 27.3 M rows): write import.xfr: no space left on device", "6.00 M events imported before stay"},
			[]string{"importing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			win := xtimeline.NewWindow(0, nil)
			src := &fakeSource{win: win, info: SourceInfo{Replay: true, Name: "run.sqlite"}, status: Status{Speed: 1, Import: &tc.im}}
			m := sized(src, 160, 30)
			got := text(m)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, a := range tc.avoid {
				if strings.Contains(got, a) {
					t.Errorf("shows %q:\n%s", a, got)
				}
			}
			if tc.im.Err != nil && !errors.Is(m.status.Import.Err, syscall.ENOSPC) {
				t.Errorf("the status holds %v", m.status.Import.Err)
			}
			press(m, "G") // on to the end of what is imported, as fast as the replay can
			if len(src.seeks) != 0 || len(src.speeds) != 1 || src.speeds[0] != 0 {
				t.Errorf("G sought %v, set speeds %v; want no seek and speed 0 (as fast as it can)", src.seeks, src.speeds)
			}
		})
	}
}

type errWrap struct {
	what string
	err  error
}

func (e *errWrap) Error() string { return e.what + ": " + e.err.Error() }
func (e *errWrap) Unwrap() error { return e.err }
