package nsys

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/xfertop/xfertop/recordings/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// Bounds on what a row may carry, as for traces: a field outside them is named in a warning and
// never reaches a total.
const (
	maxEventBytes = 1 << 40
	maxSpan       = kineto.MaxSpan
	maxTime       = 1 << 62
	maxWarnings   = 20
	queuedUnknown = kineto.QueuedUnknown
	defaultStream = 1 << 31 // stream id 0 means "no stream" in events
)

// Options select what is imported and how progress is told.
type Options struct {
	// StepRange names the NVTX range that marks a step: a range named so, or so followed by #N (the
	// step number) or by ", " (PyTorch's emit_nvtx suffix). Empty: ProfilerStep (ProfilerStep#N).
	StepRange string
	// Progress, when set, is called every 65,536 rows and at the end of each table with the rows
	// read so far and the rows the files hold (an estimate from the tables' largest rowids).
	Progress func(done, total int64)
	// Context, when set, interrupts a long read when it is done.
	Context context.Context
}

// Format is the name of the format in Imported.Format and in reports.
const Format = "nsys"

// importer turns the rows of one or more exports into timeline events.
type importer struct {
	opts     Options
	im       *kineto.Imported
	labels   map[string]uint32
	warnings []string
	moreWarn int
	done     int64
	total    int64
	anyClock bool // some file had no session start: its times are not wall-clock times
	extra    map[string]string
	devBase  int32 // global id of the current file's device 0
}

// ReadFiles imports Nsight Systems SQLite exports; several files are several ranks or hosts, each
// a host index (its position) and its own devices, on one time axis.
func ReadFiles(paths []string, opts Options) (*kineto.Imported, error) {
	if opts.StepRange == "" {
		opts.StepRange = "ProfilerStep"
	}
	m := &importer{opts: opts, im: &kineto.Imported{Strings: timeline.NewStrings(), Format: Format},
		labels: map[string]uint32{"": 0}, extra: map[string]string{}}
	dbs := make([]*db, 0, len(paths))
	defer func() {
		for _, d := range dbs {
			d.close()
		}
	}()
	for _, p := range paths {
		d, err := open(opts.Context, p)
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, d)
		if err := checkExport(d); err != nil {
			return nil, err
		}
		for _, t := range []string{tableKernel, tableMemcpy, tableMemset, tableRuntime, tableSync, tableNVTX} {
			m.total += d.rows(t)
		}
	}
	for i, d := range dbs {
		if err := m.readFile(i, d); err != nil {
			return nil, err
		}
	}
	im := m.finish(len(paths) > 1)
	im.Source = strings.Join(paths, ",")
	return im, nil
}

// checkExport refuses a file that is SQLite but not an Nsight Systems export with CUDA activity.
func checkExport(d *db) error {
	if err := d.need(tableStrings, "id", "value"); err != nil {
		return err
	}
	if !d.has(tableKernel) && !d.has(tableMemcpy) && !d.has(tableMemset) {
		return fmt.Errorf("%s: no table %s, %s or %s: the capture holds no CUDA activity (record it with `nsys profile --trace=cuda`)",
			d.name, tableKernel, tableMemcpy, tableMemset)
	}
	gpuCols := []string{"start", "end", "deviceId", "streamId"}
	for _, t := range []string{tableKernel, tableMemcpy, tableMemset} {
		if d.has(t) {
			if err := d.need(t, gpuCols...); err != nil {
				return err
			}
		}
	}
	checks := map[string][]string{
		tableKernel:  {"shortName"},
		tableMemcpy:  {"bytes", "copyKind"},
		tableMemset:  {"bytes"},
		tableRuntime: {"start", "end", "nameId"},
		tableSync:    {"start", "end", "deviceId", "streamId"},
		tableNVTX:    {"start", "end", "eventType"},
	}
	for t, cols := range checks {
		if d.has(t) {
			if err := d.need(t, cols...); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *importer) warn(format string, args ...any) {
	if len(m.warnings) < maxWarnings {
		m.warnings = append(m.warnings, fmt.Sprintf(format, args...))
		return
	}
	m.moreWarn++
}

// label interns a name.
func (m *importer) label(s string) uint32 {
	if id, ok := m.labels[s]; ok {
		return id
	}
	id := m.im.Strings.ID(s)
	m.labels[s] = id
	return id
}

// row counts one row read, telling progress now and then.
func (m *importer) row() {
	m.done++
	if m.opts.Progress != nil && m.done%progressEvery == 0 {
		m.opts.Progress(m.done, max(m.total, m.done))
	}
}

func (m *importer) tableDone() {
	if m.opts.Progress != nil {
		m.opts.Progress(m.done, max(m.total, m.done))
	}
}

// finish applies what needs every file: outliers, time 0, start order, and the device count.
func (m *importer) finish(multi bool) *kineto.Imported {
	im := m.im
	m.dropOutliers()
	base, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, ev := range im.Events {
		base, last = min(base, ev.Start), max(last, ev.End)
	}
	if len(im.Events) == 0 {
		base = 0
	}
	if !m.anyClock {
		im.EpochUnixNs = base
	} else if multi {
		m.warn("some files have no %s: their times are those of their own clock, not aligned with the other files", tableStart)
	}
	kineto.Rebase(im.Events, base, last)
	devices := map[int32]bool{}
	for _, ev := range im.Events {
		if ev.Device >= 0 {
			devices[ev.Device] = true
		}
	}
	im.Devices = len(devices)
	im.Warnings = m.warnings
	if m.moreWarn > 0 {
		im.Warnings = append(im.Warnings, fmt.Sprintf("%d more warnings like these", m.moreWarn))
	}
	im.Extra = m.extra
	return im
}

// dropOutliers leaves out events more than 24 h from the median start: one damaged timestamp would
// otherwise make time 0, the span and every idle total meaningless.
func (m *importer) dropOutliers() {
	evs := m.im.Events
	median, spread := kineto.MedianStart(evs)
	if !spread {
		return
	}
	n := 0
	for _, ev := range evs {
		if d := ev.Start - median; d >= -maxSpan && d <= maxSpan {
			evs[n] = ev
			n++
			continue
		}
		m.warn("%s %q starts %s from the capture's other events (more than 24 h): left out",
			ev.Kind, m.im.Strings.Lookup(ev.Label), time.Duration(ev.Start-median))
	}
	m.im.Events = evs[:n]
}
