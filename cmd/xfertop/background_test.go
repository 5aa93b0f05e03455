package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
)

// holdSink stands between the importer and the recording: after `after` events it holds the
// import until released (or stopped), or fails it with fail.
type holdSink struct {
	importers.Sink
	ctx     context.Context
	after   int
	fail    error
	events  int
	held    chan struct{} // closed when the import is held (or failed)
	once    sync.Once
	release chan struct{}
}

func (h *holdSink) Events(batch []timeline.Event) error {
	if h.events >= h.after {
		h.once.Do(func() { close(h.held) })
		if h.fail != nil {
			return h.fail
		}
		select {
		case <-h.release:
		case <-h.ctx.Done():
			return h.ctx.Err()
		}
	}
	h.events += len(batch)
	return h.Sink.Events(batch)
}

// refreshed refreshes the console now (pause and resume) and returns its screen as text. A resume
// with many events to read returns their fold as a command, as the Bubble Tea runtime would run
// it: it is run here and its frame installed, else the console would wait for it for ever.
func refreshed(m *ui.Model) string {
	m.Update(tea.KeyPressMsg{Code: ' ', Text: " "})
	if _, cmd := m.Update(tea.KeyPressMsg{Code: ' ', Text: " "}); cmd != nil {
		m.Update(cmd())
	}
	return ansi.Strip(m.View().Content)
}

// until refreshes the console until cond holds of its screen; the bound only keeps a broken
// import from hanging the test. A cond on the source's state (its replay done) may come true after
// the refresh it is given: the console is refreshed once more, so what it shows follows that state.
func until(t *testing.T, m *ui.Model, what string, cond func(screen string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		scr := refreshed(m)
		if cond(scr) {
			return refreshed(m)
		}
		if time.Now().After(deadline) {
			t.Fatalf("never: %s; the console shows:\n%s", what, scr)
		}
	}
}

// TestImportConsole: `xfertop replay EXPORT` on a terminal opens the console while the export is
// imported, and replays the import as it is written. The importer is held after 8,192 events
// (event-based: nothing here depends on how fast the machine is).
func TestImportConsole(t *testing.T) {
	defer goleak.VerifyNone(t)
	const kernels, after = 65_536, 8192 // the importer tells progress every 65,536 rows
	export := filepath.Join(t.TempDir(), "big.sqlite")
	if err := nsystest.WriteLarge(export, kernels, 64); err != nil {
		t.Fatal(err)
	}
	diskFull := &os.PathError{Op: "write", Path: "big.xfr", Err: syscall.ENOSPC}
	tests := []struct {
		name string
		fail error
		// console drives the console while the import is held (or failed); release lets it go on.
		console func(t *testing.T, m *ui.Model, src replaySource, release func())
		code    int // the command's exit status once the console is closed
	}{
		{"first frame before the import completes", nil, func(t *testing.T, m *ui.Model, src replaySource, release func()) {
			scr := until(t, m, "the held import's events drawn", func(string) bool { return src.Snapshot().Total == after })
			if m.Result().Transfers.Count == 0 || !strings.Contains(scr, "importing") || !strings.Contains(scr, "%") || !strings.Contains(scr, "backend nsys") {
				t.Fatalf("the first frames lack the import's progress:\n%s", scr)
			}
			if st := src.Status().Import; st.Finished || st.Events != after || st.Done == 0 || st.Total == 0 {
				t.Fatalf("held after %d events, the import says %+v", after, st)
			}
			release()
			until(t, m, "the import's end", func(scr string) bool { return strings.Contains(scr, "imported ") })
			if st := src.Status().Import; !st.Finished || st.Err != nil || st.Events != int64(nsystest.LargeRows(kernels)) {
				t.Fatalf("after the import: %+v", st)
			}
			until(t, m, "every event replayed", func(string) bool { return src.Status().Done })
			if got := src.Snapshot().Total; got != int64(nsystest.LargeRows(kernels)) {
				t.Fatalf("replayed %d events; the export has %d", got, nsystest.LargeRows(kernels))
			}
		}, exitOK},
		{"seek within the imported part", nil, func(t *testing.T, m *ui.Model, src replaySource, release func()) {
			until(t, m, "events drawn", func(string) bool { return src.Snapshot().Total == after })
			imported := src.Status().Import.Length
			gen := src.Snapshot().Generation
			// G plays on to the end of what is imported at full speed, every event imported in the
			// figures: no new start (a seek to the end had started the figures there, blank).
			press(m, "G")
			until(t, m, "the end of what is imported", func(string) bool { s := src.Snapshot(); return s.Now == imported && s.Total == after })
			if s := src.Snapshot(); s.Generation != gen || src.Status().Speed != 0 {
				t.Fatalf("after G: generation %d (was %d), speed %v; want the same start, at full speed", s.Generation, gen, src.Status().Speed)
			}
			press(m, "g") // back to the start: everything imported plays again
			until(t, m, "the seek back", func(string) bool { s := src.Snapshot(); return s.Generation > gen && s.Total == after })
			release()
			until(t, m, "the import's end", func(string) bool { return src.Status().Import.Finished })
			gen = src.Snapshot().Generation
			press(m, "G") // now on to the end of the export, from the same start
			until(t, m, "the end", func(string) bool { return src.Status().Done })
			if _, length := src.r.Description(); src.Snapshot().Now != length || length <= imported || src.Snapshot().Generation != gen ||
				src.Snapshot().Total != int64(nsystest.LargeRows(kernels)) {
				t.Fatalf("after the import, G went to %d with %d events (generation %d, was %d); the recording ends at %d with %d (held, at %d)",
					src.Snapshot().Now, src.Snapshot().Total, src.Snapshot().Generation, gen, length, nsystest.LargeRows(kernels), imported)
			}
		}, exitOK},
		{"quit mid-import", nil, func(t *testing.T, m *ui.Model, src replaySource, release func()) {
			until(t, m, "events drawn", func(string) bool { return src.Snapshot().Total == after })
			// q: the console returns while the importer is held.
		}, exitOK},
		{"import error mid-way", diskFull, func(t *testing.T, m *ui.Model, src replaySource, release func()) {
			until(t, m, "the error shown", func(string) bool { return src.Status().Import.Err != nil })
			until(t, m, "what was imported replayed", func(string) bool { return src.Status().Done })
			scr := refreshed(m)
			st := src.Status().Import
			if !errors.Is(st.Err, syscall.ENOSPC) || !st.Finished || st.Events != after {
				t.Fatalf("the import's status: %+v", st)
			}
			if !strings.Contains(scr, "import stopped at") || !strings.Contains(scr, "no space left on device") {
				t.Fatalf("the error is not shown:\n%s", scr)
			}
			if got := src.Snapshot().Total; got != after || m.Result().Transfers.Count == 0 {
				t.Fatalf("after the error the console holds %d events; %d were imported", got, after)
			}
		}, exitFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hold *holdSink
			hooks := importHooks{wrap: func(ctx context.Context, s importers.Sink) importers.Sink {
				hold = &holdSink{Sink: s, ctx: ctx, after: after, fail: tc.fail, held: make(chan struct{}), release: make(chan struct{})}
				return hold
			}}
			var dir string
			err := openImport(context.Background(), []string{export}, importers.Options{}, session.ReplayConfig{}, 1<<20, hooks, io.Discard,
				func(s ui.Source) error {
					src := s.(replaySource)
					dir = src.imp.dir
					m := console(src)
					tc.console(t, m, src, func() { close(hold.release) })
					return nil
				})
			if code := exitStatus(err); code != tc.code {
				t.Fatalf("exit %d (%v); want %d", code, err, tc.code)
			}
			if tc.fail != nil && !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("the command's error %v is not the import's", err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the import's directory %s is left behind: %v", dir, err)
			}
		})
	}
}

// TestImportConsoleInputs: every format replay imports opens the console before its import ends
// (held after its first batch of events): an Nsight Systems export, two exports (two hosts on one
// time axis), and a Chrome trace (JSON); released, the console replays every event imported.
func TestImportConsoleInputs(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	export, second := filepath.Join(dir, "a.sqlite"), filepath.Join(dir, "b.sqlite")
	for i, p := range []string{export, second} { // two exports, not one twice (which is refused)
		if err := nsystest.WriteLarge(p, 65_536+64*i, 64); err != nil {
			t.Fatal(err)
		}
	}
	rec, trace := filepath.Join(dir, "pipeline.xfr"), filepath.Join(dir, "pipeline.json")
	p, err := session.Prepare(session.Config{Scenario: "pipeline", Steps: 40, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "convert", rec, trace); code != exitOK {
		t.Fatalf("convert: %s", errs)
	}
	tests := []struct {
		name    string
		paths   []string
		after   int // events let through before the import is held: its first batch
		backend string
		devices int
	}{
		{"Nsight Systems export", []string{export}, 4096, "nsys", 8},
		{"two exports, two hosts", []string{export, second}, 4096, "nsys", 16},
		{"Chrome trace", []string{trace}, 8192, "sim", 16},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hold *holdSink
			hooks := importHooks{wrap: func(ctx context.Context, s importers.Sink) importers.Sink {
				hold = &holdSink{Sink: s, ctx: ctx, after: tc.after, held: make(chan struct{}), release: make(chan struct{})}
				return hold
			}}
			err := openImport(context.Background(), tc.paths, importers.Options{}, session.ReplayConfig{}, 1<<20, hooks, io.Discard,
				func(s ui.Source) error {
					src := s.(replaySource)
					m := console(src)
					scr := until(t, m, "the first batch drawn", func(string) bool { return src.Snapshot().Total == int64(tc.after) })
					info := src.Info()
					if !strings.Contains(scr, "importing") || !strings.Contains(scr, "%") || src.Status().Import.Finished ||
						info.Meta.Backend != tc.backend || info.Meta.Devices != tc.devices {
						t.Fatalf("held after its first batch: backend %q, %d devices; the console shows:\n%s", info.Meta.Backend, info.Meta.Devices, scr)
					}
					close(hold.release)
					until(t, m, "every event replayed", func(string) bool { return src.Status().Import.Finished && src.Status().Done })
					if st := src.Status().Import; st.Err != nil || src.Snapshot().Total != st.Events || st.Events <= int64(tc.after) {
						t.Fatalf("replayed %d events; the import %+v", src.Snapshot().Total, st)
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The import bar counts what each importer reports: Flight Recorder and Inspector count the files
// they read (a rank's dump, a process's log), not events.
func TestProgressUnit(t *testing.T) {
	fr := filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang", "nccl_trace_rank_0")
	if got := progressUnit([]string{fr}); got != "files" {
		t.Errorf("Flight Recorder dump: %q; want files", got)
	}
	if got := progressUnit([]string{filepath.Join("testdata", "hta_small.json")}); got != "bytes" {
		t.Errorf("a trace: %q; want bytes", got)
	}
}
