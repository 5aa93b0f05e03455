package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// readInput streams recordings, trace files or Nsight Systems exports into sink through
// importers.Stream: the one path by which analyze, compare, convert and replay read what they are
// given. It prints the input's warnings, and its progress when standard error is a terminal. The
// errors of a recording are returned as they are (exitStatus classifies them); those of an import
// are data errors (a limit's names the flag that raises it), the operating system's failures; the
// sink's are returned as the sink made them.
func readInput(paths []string, opts importers.Options, sink importers.Sink, stderr io.Writer) (*importers.Result, error) {
	if interactive(stderr) {
		p := &progressLine{w: stderr, name: strings.Join(paths, ", ")}
		opts.Progress = p.show
		defer p.clear()
	}
	opts.Writer = session.Writer
	res, err := importers.Stream(paths, opts, sink)
	var xe *exitError
	sinkErr := errors.As(err, &xe)
	if res.Format == importers.FormatRecording || err == nil || sinkErr || res.Events > 0 {
		for _, w := range res.Warnings {
			fmt.Fprintf(stderr, "xfertop: warning: %s\n", namesOf(opts.Context).say(w))
		}
	}
	var me *join.MergeError
	var rc *join.RankConflictError
	var de *importers.DuplicateError
	if errors.As(err, &me) || errors.As(err, &rc) || errors.As(err, &de) {
		return res, dataError(err) // per-rank recordings that are not one job's, or an input given twice
	}
	if err == nil || sinkErr || res.Format == importers.FormatRecording {
		return res, err
	}
	return res, importError(err)
}

// importError classifies an error importing a trace or an export: a limit's is a data error naming
// the flag that raises it.
func importError(err error) error {
	var le *kineto.LimitError
	if errors.As(err, &le) {
		name := "max-token-bytes"
		if le.What == "input" {
			name = "max-input-bytes"
		}
		return dataError(fmt.Errorf("%w (raise it with --%s)", err, name))
	}
	return readError(err)
}

// analyzerSink folds every event of an input into an analyzer, keeping none itself; also get
// every event too (compare keeps a window of each run for its timelines).
type analyzerSink struct {
	header *importers.Header
	an     *analysis.Analyzer
	also   []timeline.Sink
}

func (s *analyzerSink) Begin(h *importers.Header) error {
	s.header, s.an = h, analysis.New(h.Meta)
	return nil
}

// NameHost gives the analysis, and the description the report is built with, a host's name that
// a recording holds after its Meta chunk (timeline.HostNamer).
func (s *analyzerSink) NameHost(h int32, name string) {
	s.an.NameHost(h, name)
	m := &s.header.Meta
	m.Extra = maps.Clone(m.Extra) // the header's map may be the reader's
	if m.Extra == nil {
		m.Extra = map[string]string{}
	}
	m.Extra[timeline.HostNameKey(h)] = name
}

func (s *analyzerSink) Events(batch []timeline.Event) error {
	for i := range batch {
		s.an.Emit(&batch[i])
		for _, o := range s.also {
			o.Emit(&batch[i])
		}
	}
	return nil
}

// inputReport analyses one recording, or traces or exports of one job, into a report: what analyze
// prints and compare lays side by side. A recording's report says how its run ended and what it
// dropped, as its replay does; a recording without events is session.ErrNoEvents.
func inputReport(paths []string, opts importers.Options, stderr io.Writer, also ...timeline.Sink) (*report.Report, *importers.Result, error) {
	sink := analyzerSink{also: also}
	res, err := readInput(paths, opts, &sink, stderr)
	if err != nil {
		return nil, res, err
	}
	if res.Events == 0 && res.Format == importers.FormatRecording {
		return nil, res, fmt.Errorf("%s: %w", paths[0], session.ErrNoEvents)
	}
	if f := res.InFlight; f != nil {
		// The recorded run stopped early: its diagnosis looked at what was in flight then (ops
		// that never ended, in no Events chunk); this one looks at the same, and names the same root.
		sink.an.Pending(f.Now, f.Events)
	}
	run := report.Run{DroppedEvents: res.Dropped, StepsFrom: res.Steps}
	for _, kv := range res.Outcome {
		if kv[0] == "ended" {
			run.Ended = kv[1]
		}
	}
	return report.Build(sink.an.Result(sink.header.Strings), sink.header.Meta, run), res, nil
}

// recordingSink writes an input as a recording at path, created when the input begins (so that
// an input that fails to import leaves no file). The file's bytes are a function of the input's
// meta, labels and events alone, so that converting the same input twice gives the same file:
// events are written in chunks of recordings.DefaultBatch whatever batches the importer hands
// over (a recording's or a merge's follow the chunks of the files read, which a live recorder cut
// by the clock), each chunk preceded by the labels it is the first to use, and nothing in it says
// when it was written.
type recordingSink struct {
	path    string
	w       *recordings.Writer
	strings *timeline.Strings
	written int                   // labels written so far, the empty label 0 included
	pending []timeline.Event      // events not yet written: fewer than a chunk
	created bool                  // Begin created the file at path
	names   []recordings.HostName // hosts' names the input gave after its description, not yet written
}

// NameHost keeps a host's name that the input gives after its description (a recording's
// HostNames chunk: timeline.HostNamer), for the recording to give it before the next events.
func (s *recordingSink) NameHost(h int32, name string) {
	s.names = append(s.names, recordings.HostName{Host: h, Name: name})
}

// writeNames writes the hosts' names NameHost kept since the last chunk.
func (s *recordingSink) writeNames() error {
	if err := s.w.WriteHostNames(s.names); err != nil {
		return s.fail(err)
	}
	s.names = s.names[:0]
	return nil
}

func (s *recordingSink) Begin(h *importers.Header) error {
	w, err := recordings.Create(s.path)
	if err != nil {
		return failure(err)
	}
	s.w, s.strings, s.written, s.created = w, h.Strings, 1, true
	if err := w.WriteMeta(h.Meta); err != nil {
		return s.fail(err)
	}
	return nil
}

// writeLabels writes the labels from the first not yet written up to id upTo (exclusive): those
// the next chunk refers to. A recording's table grows as it is read, so how far it has grown at a
// batch depends on how the input was cut; which labels a chunk needs does not.
func (s *recordingSink) writeLabels(upTo int) error {
	all := s.strings.All()
	upTo = min(upTo, len(all))
	if upTo > s.written {
		if err := s.w.WriteStrings(uint32(s.written), all[s.written:upTo]); err != nil {
			return s.fail(err)
		}
		s.written = upTo
	}
	return nil
}

// Events adds batch to the chunk being filled, writing each chunk as it fills.
func (s *recordingSink) Events(batch []timeline.Event) error {
	for len(batch) > 0 {
		if len(s.pending) == 0 && len(batch) >= recordings.DefaultBatch {
			// A whole chunk in the batch: written from it, without a copy.
			if err := s.writeChunk(batch[:recordings.DefaultBatch]); err != nil {
				return err
			}
			batch = batch[recordings.DefaultBatch:]
			continue
		}
		n := min(len(batch), recordings.DefaultBatch-len(s.pending))
		s.pending = append(s.pending, batch[:n]...)
		batch = batch[n:]
		if len(s.pending) == recordings.DefaultBatch {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes the events waiting, a chunk cut short (the input's end, or a console that shows
// the import as it goes).
func (s *recordingSink) flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	err := s.writeChunk(s.pending)
	s.pending = s.pending[:0]
	return err
}

// writeChunk writes evs as one chunk, after the labels it is the first to use and the hosts'
// names learned since the last chunk.
func (s *recordingSink) writeChunk(evs []timeline.Event) error {
	if err := s.writeNames(); err != nil {
		return err
	}
	var top uint32
	for i := range evs {
		top = max(top, evs[i].Label)
	}
	if err := s.writeLabels(int(top) + 1); err != nil {
		return err
	}
	if err := s.w.WriteEvents(evs); err != nil {
		return s.fail(err)
	}
	return nil
}

// close writes the last chunk, the labels no event uses and how the input's run ended (res: a
// recording's or a merged job's outcome and the events its recorders dropped, known only once it
// has been read), and ends the recording.
func (s *recordingSink) close(res *importers.Result) error {
	if s.w == nil {
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	if err := s.writeNames(); err != nil { // names given after the last events
		return err
	}
	if err := s.writeLabels(s.strings.Len()); err != nil {
		return err
	}
	if res.Dropped > 0 {
		if err := s.w.WriteDropped(res.Dropped); err != nil {
			return s.fail(err)
		}
	}
	if res.InFlight != nil { // what the run had in flight when it stopped: the diagnosis's look
		if err := s.w.WriteInFlight(*res.InFlight); err != nil {
			return s.fail(err)
		}
	}
	// A trace's or an export's outcome is empty: an import has no run that ended, and a time of
	// writing (which the outcome once held) would make every conversion of the same input a
	// different file.
	if err := s.w.WriteOutcome(res.Outcome); err != nil {
		return s.fail(err)
	}
	err := s.w.Close()
	s.w = nil
	if err != nil {
		return failure(err)
	}
	return nil
}

// fail abandons the recording after err, a runtime failure.
func (s *recordingSink) fail(err error) error {
	if s.w != nil {
		_ = s.w.Close() // err says what went wrong; the file is incomplete either way
		s.w = nil
	}
	return failure(err)
}
