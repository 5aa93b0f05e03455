package importers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/xfertop/xfertop/importers/flightrecorder"
	"github.com/xfertop/xfertop/importers/inspector"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/ras"
	"github.com/xfertop/xfertop/recordings"
)

// Format is the format of an input file.
type Format uint8

// Formats xfertop reads.
const (
	FormatUnknown        Format = iota
	FormatRecording             // xfertop's own .xfr
	FormatTrace                 // Chrome trace JSON: the PyTorch profiler's (Kineto), xfertop's export, any tool's
	FormatNsys                  // the SQLite export of an Nsight Systems capture
	FormatInspector             // NCCL Inspector's JSON-lines logs or Prometheus dumps (a file or their directory)
	FormatRAS                   // ncclras's status (text, or `-f json`): a job's communicators and their missing, dead or mismatched ranks
	FormatFlightRecorder        // PyTorch's Flight Recorder dumps (pickle or JSON; a file per rank, or their directory)
	// FormatJoined is two or three of a job's Flight Recorder dumps, NCCL Inspector logs and NCCL
	// RAS reports given together, joined by rank (join.Parts).
	FormatJoined
)

// String names the format for messages.
func (f Format) String() string {
	switch f {
	case FormatRecording:
		return "xfertop recording"
	case FormatTrace:
		return "trace (JSON)"
	case FormatNsys:
		return "Nsight Systems SQLite export"
	case FormatInspector:
		return "NCCL Inspector log"
	case FormatRAS:
		return "NCCL RAS report (ncclras)"
	case FormatFlightRecorder:
		return "PyTorch Flight Recorder dump"
	case FormatJoined:
		return "sources of one job joined by rank (PyTorch Flight Recorder dumps, NCCL Inspector logs, NCCL RAS reports)"
	}
	return "unknown"
}

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// ErrNsysReport is the error for an Nsight Systems report, which xfertop cannot read directly.
var ErrNsysReport = errors.New("this is an Nsight Systems report; run `nsys export --type sqlite FILE` and open the .sqlite")

// ErrUnknownFormat is the error for a binary file that is none of the formats xfertop reads.
var ErrUnknownFormat = errors.New("none of the formats xfertop reads: an xfertop recording (.xfr), a Kineto or Chrome " +
	"JSON trace (.json, .json.gz), an Nsight Systems SQLite export (a report is opened after `nsys export --type sqlite FILE`), " +
	"a PyTorch Flight Recorder dump (nccl_trace_rank_N, pickle or JSON), an NCCL Inspector log, an ncclras report " +
	"or an nccl-tests log")

// ErrEmpty is the error for an empty file that is not named as a recording: no format xfertop
// reads is empty.
var ErrEmpty = errors.New("the file is empty (0 bytes)")

// Detect tells the format of the file at path from its first bytes and its name (DetectBytes).
func Detect(path string) (Format, error) {
	if flightrecorder.IsDir(path) {
		return FormatFlightRecorder, nil
	}
	if inspector.IsDir(path) {
		return FormatInspector, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return FormatUnknown, err
	}
	defer f.Close()
	head := make([]byte, DetectBytesNeeded)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return FormatUnknown, fmt.Errorf("%s: %w", path, err)
	}
	return DetectBytes(path, head[:n])
}

// DetectBytesNeeded is how many of a file's first bytes DetectBytes looks at.
const DetectBytesNeeded = 512

// DetectBytes tells the format from a file's first bytes (DetectBytesNeeded of them, or the whole
// file when it is shorter) and its name. Content that identifies a format decides: a recording's
// magic, or the beginning of it when that is all the file holds (a recording cut inside its
// header); SQLite's; gzip's; a JSON object or array. Otherwise the name decides: a file named .xfr
// is a recording, so that the recording reader says what is wrong with it (empty, cut in its
// header, not a recording) rather than the JSON reader. Any other text is a trace, for the JSON
// reader to name its first bad byte; any other empty file is ErrEmpty. The name also recognises an
// Nsight Systems report, whose format is not public, text or binary.
func DetectBytes(name string, head []byte) (Format, error) {
	lower := strings.ToLower(name)
	text := bytes.TrimLeft(head, " \t\r\n\ufeff")
	switch {
	case recordings.IsMagicPrefix(head):
		return FormatRecording, nil
	case bytes.HasPrefix(head, []byte(sqliteMagic)):
		return FormatNsys, nil
	case ras.Sniff(head):
		return FormatRAS, nil
	case flightrecorder.Sniff(head): // a pickle, or JSON naming a dump's fields
		return FormatFlightRecorder, nil
	case inspector.Sniff(head) != inspector.NotInspector: // before JSON and gzip: its logs are both
		return FormatInspector, nil
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b: // gzip: a compressed trace
		return FormatTrace, nil
	case len(text) > 0 && (text[0] == '{' || text[0] == '['):
		return FormatTrace, nil
	case strings.HasSuffix(lower, ".xfr"):
		return FormatRecording, nil
	case len(head) == 0:
		return FormatUnknown, fmt.Errorf("%s: %w", name, ErrEmpty)
	case strings.HasSuffix(lower, ".nsys-rep") || strings.HasSuffix(lower, ".qdrep"):
		// Before the text test: what is named a report is more likely one, or a mistake about
		// one, than a trace, and the export command is what helps.
		return FormatUnknown, fmt.Errorf("%s: %w", name, ErrNsysReport)
	case !binary(head):
		return FormatTrace, nil // the JSON reader says precisely what is wrong with a text file
	}
	return FormatUnknown, fmt.Errorf("%s: %w", name, ErrUnknownFormat)
}

// binary reports whether b holds a NUL or is not UTF-8 (a cut last rune allowed).
func binary(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			return len(b) >= utf8.UTFMax
		}
		b = b[size:]
	}
	return false
}

// Options are the options of every importer.
type Options struct {
	Trace kineto.Options // PyTorch profiler and Chrome traces
	// StepRange names the NVTX range that marks a step in an Nsight Systems export (default
	// ProfilerStep, as in ProfilerStep#N).
	StepRange string
	// Progress, when set, is told how far the import has got: done of total, in the unit of the
	// format (rows of an export; bytes of traces, each read twice; events of an indexed recording).
	Progress func(done, total int64)
	Context  context.Context
	// Salvage skips a recording's damaged chunks instead of stopping at the first.
	Salvage bool
	// Writer names the program that describes an import (timeline.Meta.Writer).
	Writer string
	// Source, when set, names the input in the report's title and the recording's meta
	// (timeline.Meta.Source) instead of the files read: the directory the user gave, which the
	// paths were expanded from, rather than the dumps found in it.
	Source string
	// MaxWholeFileBytes, when positive, is --max-input-bytes as given: it bounds a Flight
	// Recorder dump (decoded whole) instead of its own 256 MiB default, an NCCL Inspector log's
	// bytes after decompression, and the size of an Nsight Systems export or an xfertop recording.
	// Unset, they keep their own defaults (the flag's, sized for streamed traces, is far more than
	// a whole file should cost).
	MaxWholeFileBytes int64
	// Verbose lists each event an Nsight Systems export leaves out in a warning of its own
	// instead of one line per file.
	Verbose bool
}

// Read imports one or more traces or exports of one format (several files are the ranks or hosts
// of one job). A recording is refused: it is replayed, not imported.
func Read(paths []string, opts Options) (*kineto.Imported, error) {
	if len(paths) == 0 {
		return nil, errors.New("no file to import")
	}
	if err := checkDuplicates(paths); err != nil {
		return nil, err
	}
	format := FormatUnknown
	formats, errs := detectEach(paths)
	for i, p := range paths {
		f, err := formats[i], errs[i]
		if err != nil {
			return nil, err
		}
		switch {
		case f == FormatRecording:
			return nil, fmt.Errorf("%s is an xfertop recording: replay it instead of importing it", p)
		case format != FormatUnknown && f != format && joinable(formats):
			return readJoined(paths, formats, opts)
		case format != FormatUnknown && f != format:
			return nil, mixedFormats(paths[0], format, p, f)
		}
		format = f
	}
	return read(paths, format, opts)
}

// mixedFormats is the error for inputs of two formats that are not joined: one analysis reads
// one format, or two or more of Flight Recorder dumps, NCCL Inspector logs and NCCL RAS reports
// (joined by rank); the sources of one job in other formats (Kineto traces or Nsight Systems
// exports beside them) are not joined, so the message says what to do instead.
func mixedFormats(first string, a Format, p string, b Format) error {
	return fmt.Errorf("%s is %s and %s %s: give files of one format (or Flight Recorder dumps, NCCL Inspector logs and NCCL RAS reports, two or all three, which are joined by rank); "+
		"sources of one job in these formats are not joined by rank: "+
		"analyse each format on its own (the %s, then the %s) and compare their findings by rank (docs/importers.md, \"Several formats of one job\")",
		first, a.withArticle(), p, b.withArticle(), a.plural(), b.plural())
}

// withArticle is the format's name after "a" or "an", as it is said: "an xfertop recording", "an
// NCCL Inspector log", "an Nsight Systems SQLite export".
func (f Format) withArticle() string {
	switch f {
	case FormatRecording, FormatNsys, FormatInspector, FormatRAS, FormatUnknown:
		return "an " + f.String()
	}
	return "a " + f.String()
}

// plural is the format's name for several files of it.
func (f Format) plural() string {
	switch f {
	case FormatTrace:
		return "traces (JSON)"
	case FormatRAS:
		return "NCCL RAS reports"
	}
	return f.String() + "s"
}

// read imports traces or exports of format.
func read(paths []string, format Format, opts Options) (*kineto.Imported, error) {
	if err := CheckSizes(paths, format, opts.MaxWholeFileBytes); err != nil {
		return nil, err
	}
	if format == FormatRAS {
		return rasPlaced(ras.ReadFiles(paths))
	}
	if format == FormatFlightRecorder {
		return flightrecorder.ReadFiles(paths, flightRecorderOptions(opts))
	}
	if format == FormatInspector {
		return inspector.ReadFiles(paths, inspectorOptions(opts))
	}
	if format == FormatNsys {
		return nsys.ReadFiles(paths, nsys.Options{StepRange: opts.StepRange, Progress: opts.Progress, Context: opts.Context, Verbose: opts.Verbose})
	}
	return kineto.ReadFiles(paths, traceOptions(opts))
}

// traceOptions are the options of the trace importer: opts.Trace, told progress and the context.
func traceOptions(opts Options) kineto.Options {
	t := opts.Trace
	if opts.Progress != nil {
		t.Progress = opts.Progress
	}
	if opts.Context != nil {
		t.Context = opts.Context
	}
	return t
}

// flightRecorderOptions are the options of the Flight Recorder importer: a dump is decoded whole,
// so its bound is MaxWholeFileBytes (its own default unless given), and a JSON dump's strings are
// bounded as a trace's are.
func flightRecorderOptions(opts Options) flightrecorder.Options {
	return flightrecorder.Options{Context: opts.Context, Progress: opts.Progress,
		MaxFileBytes: opts.MaxWholeFileBytes, MaxTokenBytes: opts.Trace.MaxTokenBytes}
}

// inspectorOptions are the options of the NCCL Inspector importer.
func inspectorOptions(opts Options) inspector.Options {
	return inspector.Options{Context: opts.Context, Progress: opts.Progress, MaxFileBytes: opts.MaxWholeFileBytes}
}
