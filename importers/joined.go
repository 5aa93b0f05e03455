package importers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/importers/flightrecorder"
	"github.com/xfertop/xfertop/importers/inspector"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/ras"
	"github.com/xfertop/xfertop/join"
)

// JoinedFormat names a join of a job's Flight Recorder dumps and NCCL Inspector logs in a report
// (timeline.Meta.Backend); a join with NCCL RAS reports adds "+nccl-ras" (joinedName).
const JoinedFormat = flightrecorder.Format + "+" + inspector.Format

// joinedFormats are the formats whose sources of one job are joined by rank (join.Parts), in the
// order their parts are joined: Flight Recorder's dumps (the sequence numbers behind the hang
// verdict), NCCL Inspector's logs (the measurements and host names), NCCL RAS's reports (which
// ranks are dead or missing, and their hosts).
var joinedFormats = [...]Format{FormatFlightRecorder, FormatInspector, FormatRAS}

// joinable reports whether formats, one per input, are the sources of one job that are joined by
// rank: at least two of joinedFormats, and nothing else.
func joinable(formats []Format) bool {
	kinds := 0
	for _, f := range joinedFormats {
		if slices.Contains(formats, f) {
			kinds++
		}
	}
	return kinds >= 2 && !slices.ContainsFunc(formats, func(f Format) bool { return !slices.Contains(joinedFormats[:], f) })
}

// joinedName is the backend name of a join of formats ("flight-recorder+nccl-ras").
func joinedName(formats []Format) string {
	var names []string
	for _, f := range joinedFormats {
		if slices.Contains(formats, f) {
			names = append(names, importerName(f))
		}
	}
	return strings.Join(names, "+")
}

// importerName is the importer's name of one of joinedFormats.
func importerName(f Format) string {
	switch f {
	case FormatFlightRecorder:
		return flightrecorder.Format
	case FormatInspector:
		return inspector.Format
	}
	return ras.Format
}

// readJoined imports a job's Flight Recorder dumps, NCCL Inspector logs and NCCL RAS reports (two
// or three of them), each by its own importer (each with its policy for damaged and foreign
// files), and joins them by rank (join.Parts): Flight Recorder's sequence numbers give the
// diagnosis its hang verdict, Inspector's kernel times and host names the measurements of the
// ranks it has, RAS the ranks it found dead, missing or in error and every rank's host, so that
// the verdict names the rank, its host, and why it never entered the collective.
func readJoined(paths []string, formats []Format, opts Options) (*kineto.Imported, error) {
	byFormat := map[Format][]string{}
	for i, p := range paths {
		byFormat[formats[i]] = append(byFormat[formats[i]], p)
	}
	frPaths, inPaths, rasPaths := byFormat[FormatFlightRecorder], byFormat[FormatInspector], byFormat[FormatRAS]
	// Progress counts the files of all: the dumps, then the logs, then the reports.
	var frProgress, inProgress func(done, total int64)
	var all, before int64
	if opts.Progress != nil {
		frFiles, err := flightrecorder.Expand(frPaths)
		if err != nil {
			return nil, err
		}
		inFiles, err := inspector.Expand(inPaths)
		if err != nil {
			return nil, err
		}
		all, before = int64(len(frFiles)+len(inFiles)+len(rasPaths)), int64(len(frFiles))
		frProgress = func(done, _ int64) { opts.Progress(done, all) }
		inProgress = func(done, _ int64) { opts.Progress(before+done, all) }
	}
	var parts []join.Part
	var ims []*kineto.Imported
	if len(frPaths) > 0 {
		fr, err := flightrecorder.ReadFiles(frPaths, flightrecorder.Options{Context: opts.Context, Progress: frProgress,
			MaxFileBytes: opts.MaxWholeFileBytes, MaxTokenBytes: opts.Trace.MaxTokenBytes})
		if err != nil {
			return nil, err
		}
		parts, ims = append(parts, part("Flight Recorder", frPaths, fr, true, false)), append(ims, fr)
	}
	if len(inPaths) > 0 {
		in, err := inspector.ReadFiles(inPaths, inspectorOptions(Options{Context: opts.Context, Progress: inProgress, MaxWholeFileBytes: opts.MaxWholeFileBytes}))
		if err != nil {
			return nil, err
		}
		parts = append(parts, part("NCCL Inspector", inPaths, in, strings.HasPrefix(in.Extra["inspector.devices"], "ranks"), true))
		ims = append(ims, in)
	}
	if len(rasPaths) > 0 {
		rs, err := ras.ReadFiles(rasPaths)
		if err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress(all, all)
		}
		p := part("NCCL RAS", rasPaths, rs, true, false)
		p.EpochUnixNs = snapshotTime(parts, rs.EpochUnixNs)
		parts, ims = append(parts, p), append(ims, rs)
	}
	j, err := join.Parts(parts)
	if err != nil {
		return nil, err
	}
	im := &kineto.Imported{Events: j.Events, Strings: j.Strings, Source: strings.Join(paths, ", "), Format: joinedName(formats),
		Devices: j.Devices, EpochUnixNs: j.EpochUnixNs, Extra: j.Extra, Warnings: j.Warnings}
	for _, p := range ims {
		im.Devices, im.World = max(im.Devices, p.Devices), max(im.World, p.World)
	}
	if len(rasPaths) > 0 && len(parts) > 1 {
		im.Warnings = append(im.Warnings, fmt.Sprintf("%s: NCCL RAS's states are a snapshot whose timestamp is the local time of the host ncclras ran on, "+
			"with no time zone: they are placed at the end of the other sources' span, as the state the job was left in", filesText(rasPaths)))
	}
	return im, nil
}

// snapshotTime is where a join places NCCL RAS's snapshots (Unix ns): at the end of the other
// parts' span, the state the job was left in. Its own timestamp is the local time of the host
// ncclras ran on with no zone, hours off the dumps' and logs' clocks at worst. With no other part's events, its own.
func snapshotTime(others []join.Part, own int64) int64 {
	end := int64(0)
	for _, p := range others {
		for i := range p.Events {
			end = max(end, p.EpochUnixNs+p.Events[i].End)
		}
	}
	if end == 0 {
		return own
	}
	return end
}

func part(format string, paths []string, im *kineto.Imported, ranked, measures bool) join.Part {
	return join.Part{Format: format, Files: filesText(paths), Strings: im.Strings, Events: im.Events, EpochUnixNs: im.EpochUnixNs,
		World: im.World, Ranked: ranked, Measures: measures, Hosts: im.RankHosts, Extra: im.Extra, Warnings: im.Warnings}
}

// streamJoined is readJoined into sink.
func streamJoined(paths []string, opts Options, sink Sink) (*Result, error) {
	formats, _ := detectEach(paths) // detectAll has told each one's format without an error
	res := &Result{Format: FormatJoined, Importer: joinedName(formats)}
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
