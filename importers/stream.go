package importers

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/importers/flightrecorder"
	"github.com/xfertop/xfertop/importers/inspector"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/ras"
	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// Header is what an input is, told to a Sink before its first event.
type Header struct {
	Format Format
	// Meta describes the run: a recording's own, or one built from an import (ImportedMeta). A
	// recording's holds the host names its Meta chunk gave; those of its later HostNames chunks
	// go to a Sink that is a timeline.HostNamer, each as it is read, before the events after it.
	Meta timeline.Meta
	// Strings resolves the events' labels. A recording's grows as its chunks are read: it is
	// complete once Stream returns.
	Strings *timeline.Strings
}

// Sink receives an input's events as Stream reads them. An error it returns stops the stream and is
// returned by Stream as it is.
type Sink interface {
	Begin(h *Header) error
	// Events receives the next events in the input's order; the slice is reused once it returns.
	Events(batch []timeline.Event) error
}

// Result is what Stream read, besides the events.
type Result struct {
	Format Format
	// Importer names an import's format as its importer tells it ("kineto", "chrome",
	// "xfertop-chrome", "nsys"); empty for a recording.
	Importer string
	Events   int
	Warnings []string // what was wrong in the input and was taken as unknown or left out
	// A recording's: how its run ended (key, value pairs) and the events its writer dropped.
	Outcome [][2]string
	Dropped int64
	// InFlight is what a recording's run had in flight when it stopped early (a watchdog, a
	// deadlock): ops that never ended, for the diagnosis to look at as the run's did; nil when
	// it ran to its end, and for any other input.
	InFlight *recordings.InFlight
	// Merged and LeftOut count a job's per-rank recordings: those merged, and those left out
	// (torn before their meta said which rank they are; each named in Warnings). Both are 0 for
	// any other input.
	Merged, LeftOut int
	// Steps says how the input's steps were found: "" when it marks them (or has none to find);
	// else how they were inferred, or why none could be (steps.Infer).
	Steps string
}

// Stream reads one or more inputs of one format, told by their content, into sink: a recording, the
// per-rank recordings of one job (merged by join.MergeRecordings, as a live attach merges its
// ranks), or traces or exports (the ranks or hosts of one job). It tells opts.Progress how
// far it has got. The Result is returned with an error too, so that its Format says which reader
// failed.
func Stream(paths []string, opts Options, sink Sink) (*Result, error) {
	if opts.Source != "" {
		sink = &sourceSink{Sink: sink, source: opts.Source}
	}
	inf := &stepSink{inner: sink, rng: opts.StepRange}
	res, err := stream(paths, opts, inf)
	if err == nil {
		if w := stepRangeUnused(opts.StepRange, res.Format, inf.marked); w != "" {
			res.Warnings = append(res.Warnings, w) // before the fallback's account (Steps)
		}
		res.Steps, err = inf.finish()
		res.Events += inf.events
	}
	return res, err
}

// inputNoun names an input of a format, with its article, for a sentence.
func inputNoun(f Format) string {
	switch f {
	case FormatRecording:
		return "an xfertop recording"
	case FormatTrace:
		return "a JSON trace (its steps are its ProfilerStep#N ranges)"
	case FormatInspector:
		return "NCCL Inspector logs"
	case FormatRAS:
		return "an ncclras report"
	case FormatFlightRecorder:
		return "Flight Recorder dumps"
	}
	return "this input"
}

// DefaultStepRange is the NVTX range an Nsight Systems export's steps are, unless
// Options.StepRange names another.
const DefaultStepRange = "ProfilerStep"

// stepRangeUnused is the warning for a step range named (not the default) that did not mark the
// input's steps: an Nsight export with no such range, whose steps are then inferred or none, or an
// input of another format, to which the option does not apply. "" when there is none to give.
func stepRangeUnused(rng string, format Format, marked bool) string {
	switch {
	case rng == "" || rng == DefaultStepRange:
		return ""
	case format != FormatNsys:
		return fmt.Sprintf("--step-range %q applies to Nsight Systems exports only: ignored for %s", rng, inputNoun(format))
	case !marked:
		return fmt.Sprintf("--step-range %q: the export has no NVTX range named %q: its steps are inferred instead, or none (see Steps)", rng, rng)
	}
	return ""
}

// sourceSink names the input as the user gave it (Options.Source) in the header it passes on.
type sourceSink struct {
	Sink
	source string
}

// NameHost passes a host's name on to the sink it wraps, where that takes names.
func (s *sourceSink) NameHost(h int32, name string) {
	if n, ok := s.Sink.(timeline.HostNamer); ok {
		n.NameHost(h, name)
	}
}

func (s *sourceSink) Begin(h *Header) error {
	named := *h
	named.Meta.Source = s.source
	return s.Sink.Begin(&named)
}

// stream is Stream without the steps' inference.
func stream(paths []string, opts Options, sink Sink) (*Result, error) {
	if err := checkDuplicates(paths); err != nil {
		return &Result{}, err
	}
	format, err := detectAll(paths)
	if err != nil {
		return &Result{}, err
	}
	if err := CheckSizes(paths, format, opts.MaxWholeFileBytes); err != nil {
		return &Result{}, err
	}
	if format == FormatRecording && len(paths) > 1 {
		return streamRanks(paths, opts, sink)
	}
	if format == FormatRecording {
		return streamRecording(paths[0], opts, sink)
	}
	if format == FormatNsys {
		return streamNsys(paths, opts, sink)
	}
	if format == FormatInspector {
		return streamInspector(paths, opts, sink)
	}
	if format == FormatRAS {
		return streamRAS(paths, opts, sink)
	}
	if format == FormatFlightRecorder {
		return streamFlightRecorder(paths, opts, sink)
	}
	if format == FormatJoined {
		return streamJoined(paths, opts, sink)
	}
	return streamTraces(paths, opts, sink)
}

// streamTraces imports PyTorch profiler or Chrome traces straight into sink, event batch by batch
// in start order, holding none of them.
func streamTraces(paths []string, opts Options, sink Sink) (*Result, error) {
	res := &Result{Format: FormatTrace}
	im, err := kineto.Stream(paths, traceOptions(opts), func(im *kineto.Imported) error {
		res.Importer = im.Format
		return sink.Begin(&Header{Format: FormatTrace, Meta: ImportedMeta(im, opts.Writer), Strings: im.Strings})
	}, func(batch []timeline.Event) error {
		if err := sink.Events(batch); err != nil {
			return err
		}
		res.Events += len(batch)
		return nil
	})
	if im != nil {
		res.Warnings, res.Importer = im.Warnings, im.Format
	}
	return res, err
}

// streamer is an importer that streams: it calls begin once with what it found (the meta and the
// string table), then batch for each batch of events in start order, and returns what it imported.
type streamer func(begin func(*kineto.Imported) error, batch func([]timeline.Event) error) (*kineto.Imported, error)

// streamBatches runs a streaming importer into sink: the header from its begin, each batch as it
// comes (counted), its warnings into the result. Every streaming format goes through it.
func streamBatches(format Format, importer string, opts Options, sink Sink, run streamer) (*Result, error) {
	res := &Result{Format: format, Importer: importer}
	im, err := run(func(im *kineto.Imported) error {
		return sink.Begin(&Header{Format: format, Meta: ImportedMeta(im, opts.Writer), Strings: im.Strings})
	}, func(batch []timeline.Event) error {
		if err := sink.Events(batch); err != nil {
			return err
		}
		res.Events += len(batch)
		return nil
	})
	if im != nil {
		res.Warnings = im.Warnings
	}
	return res, err
}

// streamNsys imports Nsight Systems exports straight into sink, event batch by batch in start
// order, holding none of them.
func streamNsys(paths []string, opts Options, sink Sink) (*Result, error) {
	nopts := nsys.Options{StepRange: opts.StepRange, Progress: opts.Progress, Context: opts.Context, Verbose: opts.Verbose}
	return streamBatches(FormatNsys, nsys.Format, opts, sink, func(begin func(*kineto.Imported) error, batch func([]timeline.Event) error) (*kineto.Imported, error) {
		return nsys.Stream(paths, nopts, begin, batch)
	})
}

// streamInspector imports NCCL Inspector's logs or dumps into sink, batch by batch in start order.
func streamInspector(paths []string, opts Options, sink Sink) (*Result, error) {
	return streamBatches(FormatInspector, inspector.Format, opts, sink, func(begin func(*kineto.Imported) error, batch func([]timeline.Event) error) (*kineto.Imported, error) {
		return inspector.Stream(paths, inspectorOptions(opts), begin, batch)
	})
}

// streamFlightRecorder imports Flight Recorder dumps into sink, batch by batch in start order.
func streamFlightRecorder(paths []string, opts Options, sink Sink) (*Result, error) {
	fopts := flightRecorderOptions(opts)
	return streamBatches(FormatFlightRecorder, flightrecorder.Format, opts, sink, func(begin func(*kineto.Imported) error, batch func([]timeline.Event) error) (*kineto.Imported, error) {
		return flightrecorder.Stream(paths, fopts, begin, batch)
	})
}

// streamRAS reads ncclras JSON documents into sink: their findings, a few events per communicator.
func streamRAS(paths []string, opts Options, sink Sink) (*Result, error) {
	res := &Result{Format: FormatRAS, Importer: ras.Format}
	im, err := rasPlaced(ras.ReadFiles(paths))
	if err != nil {
		return res, err
	}
	return streamImported(res, im, opts, sink)
}

// streamImported hands an import read whole (an ncclras report, joined sources) to sink, a batch
// at a time, as res's format.
func streamImported(res *Result, im *kineto.Imported, opts Options, sink Sink) (*Result, error) {
	if err := sink.Begin(&Header{Format: res.Format, Meta: ImportedMeta(im, opts.Writer), Strings: im.Strings}); err != nil {
		return res, err
	}
	for b := im.Events; len(b) > 0; {
		n := min(len(b), recordings.DefaultBatch)
		if err := sink.Events(b[:n]); err != nil {
			return res, err
		}
		res.Events += n
		b = b[n:]
	}
	res.Warnings = im.Warnings
	return res, nil
}

// streamRecording reads a recording batch by batch into sink, telling progress in events when the
// recording has an index (one that was not closed has none, and its length is not known).
func streamRecording(path string, opts Options, sink Sink) (*Result, error) {
	res := &Result{Format: FormatRecording}
	r, err := recordings.Open(path, recordings.Options{Salvage: opts.Salvage})
	if err != nil {
		return res, err
	}
	defer r.Close()
	if err := sink.Begin(&Header{Format: FormatRecording, Meta: r.Meta(), Strings: r.Strings()}); err != nil {
		return res, err
	}
	if n, ok := sink.(timeline.HostNamer); ok {
		r.NameHostsTo(n) // the hosts' names learned after the Meta chunk, before their events
	}
	var total int64
	for _, e := range r.Index() {
		total += int64(e.Events)
	}
	progress := func(done int64) {
		if opts.Progress != nil && total > 0 {
			opts.Progress(min(done, total), total)
		}
	}
	progress(0)
	for r.Next() {
		if opts.Context != nil && opts.Context.Err() != nil {
			return res, opts.Context.Err()
		}
		if err := sink.Events(r.At()); err != nil {
			return res, err
		}
		res.Events += len(r.At())
		progress(int64(res.Events))
	}
	res.Outcome, res.Dropped, res.Warnings, res.InFlight = r.Outcome(), r.Dropped(), r.Warnings(), r.InFlight()
	return res, r.Err()
}

// streamRanks merges the per-rank recordings of one job into sink, batch by batch.
func streamRanks(paths []string, opts Options, sink Sink) (*Result, error) {
	res := &Result{Format: FormatRecording}
	m, err := join.MergeRecordings(paths, recordings.Options{Salvage: opts.Salvage})
	if err != nil {
		return res, err
	}
	defer m.Close()
	if err := sink.Begin(&Header{Format: FormatRecording, Meta: m.Meta(), Strings: m.Strings()}); err != nil {
		return res, err
	}
	for m.Next() {
		if opts.Context != nil && opts.Context.Err() != nil {
			return res, opts.Context.Err()
		}
		if err := sink.Events(m.At()); err != nil {
			return res, err
		}
		res.Events += len(m.At())
	}
	res.Outcome, res.Dropped, res.Warnings = m.Outcome(), m.Dropped(), m.Warnings()
	res.Merged, res.LeftOut = m.Ranks(), m.LeftOut()
	return res, m.Err()
}

// ImportedMeta describes an imported trace or export for the report, as written by writer. Traces
// carry no engine wait events, so idle time is split as Holistic Trace Analysis does. An xfertop
// export carries the description of the run it came from (recordings.MetaPairs, as a recording's
// Meta chunk holds it), and that description is read back whole: the source, scenario, knobs, seed,
// GPUs per host and link peaks of the run, so that its report is the recording's. Only the writer
// is the importing program's, when it is given.
func ImportedMeta(im *kineto.Imported, writer string) timeline.Meta {
	if im.Exported != nil {
		return exportedMeta(im, writer)
	}
	return timeline.Meta{Source: im.Source, Backend: im.Format, Topology: "unknown", Devices: im.Devices, IdleMode: timeline.IdleHTA,
		KernelWaitNs: analysis.DefaultKernelWaitNs, EpochUnixNs: im.EpochUnixNs, Writer: writer, Extra: im.Extra}
}

// exportedMeta is the description an xfertop export carries, with what the import knows where the
// export says nothing (an export written by hand, or by an older xfertop, may lack keys).
func exportedMeta(im *kineto.Imported, writer string) timeline.Meta {
	keys := make([]string, 0, len(im.Exported))
	for k := range im.Exported {
		keys = append(keys, k)
	}
	sort.Strings(keys) // knob and extra maps are filled the same way whatever the map's order
	kv := make([][2]string, 0, len(keys))
	for _, k := range keys {
		kv = append(kv, [2]string{k, im.Exported[k]})
	}
	m := recordings.MetaFromPairs(kv)
	if m.Source == "" {
		m.Source = im.Source
	}
	if m.Backend == "" {
		m.Backend = im.Format
	}
	if m.Topology == "" {
		m.Topology = "unknown"
	}
	if m.Devices <= 0 {
		m.Devices = im.Devices
	}
	if m.KernelWaitNs <= 0 {
		m.KernelWaitNs = analysis.DefaultKernelWaitNs
	}
	if m.EpochUnixNs == 0 {
		m.EpochUnixNs = im.EpochUnixNs
	}
	if writer != "" {
		m.Writer = writer
	}
	for k, v := range im.Extra {
		if m.Extra == nil {
			m.Extra = map[string]string{}
		}
		m.Extra[k] = v
	}
	return m
}

// Collect is a Sink that keeps every event in memory, for the writers that need them all (the
// Chrome exporter sorts them by start).
type Collect struct {
	Header *Header
	All    []timeline.Event
}

// Begin keeps the header.
func (c *Collect) Begin(h *Header) error { c.Header = h; return nil }

// Events keeps a copy of the batch.
func (c *Collect) Events(batch []timeline.Event) error {
	c.All = append(c.All, batch...)
	return nil
}

// detectAll tells the one format of paths, refusing a mix (several recordings are a job's ranks).
func detectAll(paths []string) (Format, error) {
	if len(paths) == 0 {
		return FormatUnknown, errors.New("no file to import")
	}
	formats, errs := detectEach(paths)
	format := FormatUnknown
	for i, p := range paths {
		if errs[i] != nil {
			return FormatUnknown, errs[i]
		}
		if format != FormatUnknown && formats[i] != format {
			if joinable(formats) && !slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
				return FormatJoined, nil
			}
			return FormatUnknown, mixedFormats(paths[0], format, p, formats[i])
		}
		format = formats[i]
	}
	return format, nil
}

// detectEach tells each path's format. A file named like a Flight Recorder dump of the same
// prefix as one that is a dump (nccl_trace_rank_3 beside nccl_trace_rank_0) is taken as a dump
// whatever it holds: empty, cut short or garbled, it is one rank's dump that cannot be read, which
// the importer warns about and leaves out, rather than a file of another format.
func detectEach(paths []string) ([]Format, []error) {
	formats, errs := make([]Format, len(paths)), make([]error, len(paths))
	var dump string // a path that is a dump
	for i, p := range paths {
		formats[i], errs[i] = Detect(p)
		if errs[i] == nil && formats[i] == FormatFlightRecorder && dump == "" {
			dump = p
		}
	}
	if dump != "" {
		for i, p := range paths {
			if (errs[i] != nil || formats[i] != FormatFlightRecorder) && flightrecorder.SamePrefix(dump, p) {
				formats[i], errs[i] = FormatFlightRecorder, nil
			}
		}
	}
	tracesBeside(paths, formats, errs)
	return formats, errs
}

// tracesBeside takes a file named like a trace (.json, .json.gz) that is empty or holds no format
// xfertop knows as a trace, when another of the paths is one: it is one rank's trace that cannot
// be read (garbled, or its writer killed before the first byte), which the trace importer warns
// about and leaves out, as it does a trace cut short, rather than a reason to refuse every file.
func tracesBeside(paths []string, formats []Format, errs []error) {
	if !slices.ContainsFunc(formats, func(f Format) bool { return f == FormatTrace }) {
		return
	}
	for i, p := range paths {
		if errs[i] != nil && traceName(p) && (errors.Is(errs[i], ErrUnknownFormat) || errors.Is(errs[i], ErrEmpty)) {
			formats[i], errs[i] = FormatTrace, nil
		}
	}
}

// traceName reports whether a file is named like a Chrome or PyTorch profiler trace.
func traceName(p string) bool {
	lower := strings.ToLower(p)
	return strings.HasSuffix(lower, ".json") || strings.HasSuffix(lower, ".json.gz")
}

// CheckSizes refuses an Nsight Systems export or an xfertop recording larger than max
// (--max-input-bytes, when given): their readers seek through the file rather than stream it,
// so its size on disk is what the bound holds them to. Other formats count the bytes they read.
func CheckSizes(paths []string, format Format, max int64) error {
	if max <= 0 || (format != FormatNsys && format != FormatRecording) {
		return nil
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if fi.Mode().IsRegular() && fi.Size() > max {
			return fmt.Errorf("%s: %d bytes, more than --max-input-bytes (%d): %s refused", p, fi.Size(), max, format.withArticle())
		}
	}
	return nil
}

// rasPlaced hands the hosts a RAS report names its ranks on to the one host map (join.PlaceHosts),
// as a join of it with other sources does.
func rasPlaced(im *kineto.Imported, err error) (*kineto.Imported, error) {
	if err != nil || im == nil {
		return im, err
	}
	if im.Extra == nil {
		im.Extra = map[string]string{}
	}
	if w := join.PlaceHosts(im.Events, im.RankHosts, im.Extra); w != "" {
		im.Warnings = append(im.Warnings, w)
	}
	return im, nil
}
