package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
)

// backgroundImport imports traces or exports (or merges a job's per-rank recordings) into a
// temporary recording on its own goroutine, publishing each batch as it is written, so that the
// console replays the recording while it grows instead of waiting for the whole import. Memory is
// the importer's and the console's window: no event is kept here.
type backgroundImport struct {
	dir      string // the temporary directory, removed by stop
	path     string // the recording in it
	unit     string // what the importer's progress counts
	growth   *recordings.Growth
	cancel   context.CancelFunc
	ctx      context.Context
	began    time.Time
	ready    chan struct{} // closed once the import has told progress, begun writing or ended
	readyOne sync.Once
	finished chan struct{} // closed when the import's goroutine has ended

	done, total atomic.Int64 // the importer's progress
	mu          sync.Mutex
	err         error         // what stopped the import; set before finished closes
	elapsed     time.Duration // how long it took, once finished
	warnings    bytes.Buffer  // what the import warned of, printed once the console has closed
}

// importHooks let tests stand between the importer and the recording (to hold the import after
// some events, or fail it); production passes none. ctx is the import's: done when it is stopped.
type importHooks struct {
	wrap func(ctx context.Context, s importers.Sink) importers.Sink
}

// startImport starts importing paths into a new temporary recording. The import stops when ctx is
// done or stop is called; stop also removes the recording.
func startImport(ctx context.Context, paths []string, opts importers.Options, hooks importHooks) (*backgroundImport, error) {
	dir, err := os.MkdirTemp("", "xfertop-import-")
	if err != nil {
		return nil, failure(err)
	}
	name := importName(paths)
	b := &backgroundImport{dir: dir, path: filepath.Join(dir, name+".xfr"), unit: progressUnit(paths),
		growth: recordings.NewGrowth(), began: time.Now(), ready: make(chan struct{}), finished: make(chan struct{})}
	b.ctx, b.cancel = context.WithCancel(ctx)
	opts.Context = b.ctx
	opts.Progress = b.progress
	opts.Trace.KeepRead = true // the console shows what a trace damaged late held before the damage
	if opts.Trace.TempDir == "" {
		opts.Trace.TempDir = dir // a trace's sorted runs, if it spills any, go with the recording
	}
	namesOf(ctx).stand(b.path, importedName(paths, opts))
	ps := &publishSink{recordingSink: recordingSink{path: b.path}, b: b}
	var sink importers.Sink = ps
	if hooks.wrap != nil {
		sink = hooks.wrap(b.ctx, ps)
	}
	go b.run(paths, opts, ps, sink)
	return b, nil
}

// progressUnit names what importers.Options.Progress counts for the format of paths.
func progressUnit(paths []string) string {
	f, _ := importers.Detect(paths[0])
	switch {
	case f == importers.FormatNsys:
		return "row reads" // every row is read twice: by the survey, then into events
	case f == importers.FormatTrace:
		return "bytes" // of the files, each read once
	case f == importers.FormatFlightRecorder || f == importers.FormatInspector:
		return "files" // their importers count the files read (a rank's dump, a process's log)
	}
	return "events"
}

// run imports into sink, which ends in ps (the recording).
func (b *backgroundImport) run(paths []string, opts importers.Options, ps *publishSink, sink importers.Sink) {
	defer close(b.finished)
	res, err := readInput(paths, opts, sink, &b.warnings)
	if err == nil && res.Events == 0 {
		err = dataError(fmt.Errorf("%s: no events", strings.Join(paths, ", ")))
	}
	if err == nil {
		err = ps.close(res)
	}
	if err != nil {
		_ = ps.fail(err)
	}
	if b.ctx.Err() != nil {
		err = nil // stopped: by the user quitting, not by what was read
	}
	b.mu.Lock()
	b.err, b.elapsed = err, time.Since(b.began)
	b.mu.Unlock()
	b.growth.End(err) // once the recording is closed: nothing writes it after readers see its end
	b.markReady()
}

func (b *backgroundImport) progress(done, total int64) {
	b.done.Store(done)
	b.total.Store(total)
	if done > 0 {
		b.markReady()
	}
}

func (b *backgroundImport) markReady() { b.readyOne.Do(func() { close(b.ready) }) }

// waitReady waits until the import has read something, begun writing or ended, so that an input
// that fails at once (not an export, a missing table) is reported as it always was, before the
// console opens. It returns ctx's error, or errImportEnded when the import ended before writing
// anything (stop says why).
func (b *backgroundImport) waitReady(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-b.ready:
	}
	if st := b.growth.State(); st.Ended && st.Size == 0 {
		return errImportEnded
	}
	return nil
}

// errImportEnded is waitReady's error for an import that ended before writing anything.
var errImportEnded = errors.New("the import ended before its first event")

// result is what stopped the import, once it has finished (nil while it runs, or when stopped).
func (b *backgroundImport) result() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// status says how far the import has got, for the console.
func (b *backgroundImport) status() ui.ImportStatus {
	st := b.growth.State()
	done, total := b.done.Load(), b.total.Load()
	if b.unit == "events" && total == 0 {
		done = st.Events // merged ranks tell no progress: count what is written
	}
	s := ui.ImportStatus{Done: done, Total: total, Unit: b.unit, Events: st.Events, Length: st.MaxEnd, Finished: st.Ended}
	b.mu.Lock()
	s.Err, s.Elapsed = b.err, b.elapsed
	b.mu.Unlock()
	if !s.Finished {
		s.Elapsed = time.Since(b.began)
		if secs := s.Elapsed.Seconds(); secs > 0 && done > 0 {
			s.Rate = float64(done) / secs
			if total > done {
				s.ETA = time.Duration(float64(total-done) / s.Rate * float64(time.Second))
			}
		}
	}
	return s
}

// stop cancels the import if it still runs, waits for it, removes the temporary recording, and
// prints what it warned of on stderr. It returns what stopped the import early (nil when it
// completed or was stopped).
func (b *backgroundImport) stop(stderr io.Writer) error {
	b.cancel()
	<-b.finished
	os.RemoveAll(b.dir)
	_, _ = io.Copy(stderr, &b.warnings)
	return b.result()
}

// publishSink writes the import as a recording and publishes every batch to the console's replay.
type publishSink struct {
	recordingSink
	b *backgroundImport
}

func (s *publishSink) Begin(h *importers.Header) error {
	if err := s.recordingSink.Begin(h); err != nil {
		return err
	}
	return s.publish()
}

func (s *publishSink) Events(batch []timeline.Event) error {
	if err := s.b.ctx.Err(); err != nil {
		return err // stopped: the JSON and recording readers do not watch the context
	}
	if err := s.recordingSink.Events(batch); err != nil {
		return err
	}
	// The console shows what is published: the events of each batch go to the file at once, in
	// a chunk cut short where need be. This temporary recording is not compared with any other.
	if err := s.flush(); err != nil {
		return err
	}
	return s.publish()
}

func (s *publishSink) publish() error {
	if err := s.w.Publish(s.b.growth); err != nil {
		return s.fail(err)
	}
	s.b.markReady()
	return nil
}

// importName names the recording an import writes, which the console shows as its title: the
// input's name without its extension (a directory's own name: a Flight Recorder or Inspector
// directory of ranks), or the directory of several files with "-ranks", as XFERTOP_RECORD_DIR's
// recordings are named.
func importName(paths []string) string {
	if len(paths) > 1 {
		return filepath.Base(filepath.Dir(paths[0])) + "-ranks"
	}
	return strings.TrimSuffix(filepath.Base(paths[0]), filepath.Ext(paths[0]))
}
