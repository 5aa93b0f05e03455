package importers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/importers/flightrecorder"
	"github.com/xfertop/xfertop/importers/inspector"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/join"
)

// JoinedFormat names a join of a job's Flight Recorder dumps and NCCL Inspector logs in a report
// (timeline.Meta.Backend).
const JoinedFormat = flightrecorder.Format + "+" + inspector.Format

// joinable reports whether formats, one per input, are the sources of one job that are joined by
// rank (join.Parts): Flight Recorder dumps and NCCL Inspector logs, both present.
func joinable(formats []Format) bool {
	return slices.Contains(formats, FormatFlightRecorder) && slices.Contains(formats, FormatInspector) &&
		!slices.ContainsFunc(formats, func(f Format) bool { return f != FormatFlightRecorder && f != FormatInspector })
}

// readJoined imports a job's Flight Recorder dumps and its NCCL Inspector logs, each by its own
// importer (each with its policy for damaged and foreign files), and joins them by rank: Flight
// Recorder's sequence numbers give the diagnosis its hang verdict, Inspector's kernel times and
// host names the measurements of the ranks it has (join.Parts).
func readJoined(paths []string, formats []Format, opts Options) (*kineto.Imported, error) {
	var frPaths, inPaths []string
	for i, p := range paths {
		if formats[i] == FormatFlightRecorder {
			frPaths = append(frPaths, p)
		} else {
			inPaths = append(inPaths, p)
		}
	}
	// Progress counts the files of both, the dumps first.
	var frProgress, inProgress func(done, total int64)
	if opts.Progress != nil {
		frFiles, err := flightrecorder.Expand(frPaths)
		if err != nil {
			return nil, err
		}
		inFiles, err := inspector.Expand(inPaths)
		if err != nil {
			return nil, err
		}
		all, n := int64(len(frFiles)+len(inFiles)), int64(len(frFiles))
		frProgress = func(done, _ int64) { opts.Progress(done, all) }
		inProgress = func(done, _ int64) { opts.Progress(n+done, all) }
	}
	fr, err := flightrecorder.ReadFiles(frPaths, flightrecorder.Options{Context: opts.Context, Progress: frProgress,
		MaxFileBytes: opts.MaxWholeFileBytes, MaxTokenBytes: opts.Trace.MaxTokenBytes})
	if err != nil {
		return nil, err
	}
	in, err := inspector.ReadFiles(inPaths, inspectorOptions(Options{Context: opts.Context, Progress: inProgress, MaxWholeFileBytes: opts.MaxWholeFileBytes}))
	if err != nil {
		return nil, err
	}
	j, err := join.Parts([]join.Part{part("Flight Recorder", frPaths, fr, true, false), part("NCCL Inspector", inPaths, in,
		strings.HasPrefix(in.Extra["inspector.devices"], "ranks"), true)})
	if err != nil {
		return nil, err
	}
	return &kineto.Imported{Events: j.Events, Strings: j.Strings, Source: strings.Join(paths, ", "), Format: JoinedFormat,
		Devices: max(j.Devices, fr.Devices, in.Devices), EpochUnixNs: j.EpochUnixNs, Extra: j.Extra, Warnings: j.Warnings,
		World: max(fr.World, in.World)}, nil
}

func part(format string, paths []string, im *kineto.Imported, ranked, measures bool) join.Part {
	return join.Part{Format: format, Files: filesText(paths), Strings: im.Strings, Events: im.Events, EpochUnixNs: im.EpochUnixNs,
		World: im.World, Ranked: ranked, Measures: measures, Hosts: im.RankHosts, Extra: im.Extra, Warnings: im.Warnings}
}

// streamJoined is readJoined into sink.
func streamJoined(paths []string, opts Options, sink Sink) (*Result, error) {
	res := &Result{Format: FormatJoined, Importer: JoinedFormat}
	formats, _ := detectEach(paths) // detectAll has told each one's format without an error
	im, err := readJoined(paths, formats, opts)
	if err != nil {
		return res, err
	}
	return streamImported(res, im, opts, sink)
}

// filesText names a part's files in a message: the first, and how many more.
func filesText(paths []string) string {
	if len(paths) == 1 {
		return paths[0]
	}
	return fmt.Sprintf("%s and %d more", paths[0], len(paths)-1)
}
