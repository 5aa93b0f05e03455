package kineto

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// source is a trace that can be read from its start more than once.
type source struct {
	name string
	size int64 // bytes, for progress (0: not known)
	open func() (io.ReadCloser, error)
}

// fileSources reads traces from files.
func fileSources(paths []string) []source {
	srcs := make([]source, len(paths))
	for i, p := range paths {
		srcs[i] = source{name: p, open: func() (io.ReadCloser, error) {
			f, err := os.Open(p)
			if err != nil {
				return nil, fmt.Errorf("open trace: %w", err)
			}
			return f, nil
		}}
		if st, err := os.Stat(p); err == nil {
			srcs[i].size = st.Size()
		}
	}
	return srcs
}

// readerSource reads a trace from r, once.
func readerSource(name string, r io.Reader) source {
	return source{name: name, open: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}
}

// Stream imports trace files (.json or .json.gz), the ranks of one job when there are several
// (each file's distributedInfo.rank, or its position, gives its device), without holding their
// events: it calls begin once with the import's description (Events empty) before the first events,
// then emit with batches of events in start order (the slice is reused once emit returns). The
// description it returns is complete: its Warnings are known only at the end, and its Devices count
// the devices of the events handed on (begin's counts those of the events read, before --like-hta's
// selection and the check of timestamps left some out).
//
// Each file is read once, as a stream, into events that wait in a sorter while the survey learns
// what must be known before the first event goes out (what the file is, its rank, where
// --like-hta's selection cuts, the median start, the devices): in a reorder buffer while they
// fit, else through an external merge sort whose runs are spilled to temporary files
// (Options.TempDir), removed on every path. Once every file is read, they go out in start order,
// what the survey learnt applied to each. Memory is bounded by the reorder buffer, the window in
// which launch times are looked up, and the distinct names and tracks, not by the size of the
// files.
func Stream(paths []string, opts Options, begin func(*Imported) error, emit func([]timeline.Event) error) (*Imported, error) {
	return stream(fileSources(paths), opts, begin, emit)
}

// progressEvery is how many bytes are read between two calls of Options.Progress.
const progressEvery = 4 << 20

// counter counts the bytes read, telling progress and watching the context.
type counter struct {
	r    io.Reader
	m    *importer
	told int64
}

func (c *counter) Read(p []byte) (int, error) {
	if ctx := c.m.opts.Context; ctx != nil && ctx.Err() != nil {
		return 0, ctx.Err()
	}
	n, err := c.r.Read(p)
	c.m.done += int64(n)
	if c.m.opts.Progress != nil && c.m.done-c.told >= progressEvery {
		c.told = c.m.done
		c.m.opts.Progress(min(c.m.done, c.m.total), c.m.total)
	}
	return n, err
}

// readSource reads one source through the decoder into m.add.
func (m *importer) readSource(src source, info *fileInfo) (*header, error) {
	rc, err := src.open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	m.startFile(info)
	return decode(src.name, &counter{r: rc, m: m}, m.opts, m.add)
}

func stream(srcs []source, opts Options, begin func(*Imported) error, emit func([]timeline.Event) error) (*Imported, error) {
	m := newImporter(opts, len(srcs) > 1)
	names := make([]string, len(srcs))
	for i, s := range srcs {
		names[i] = s.name
		m.total += s.size
	}
	m.names = names
	sp := &spill{dir: m.opts.TempDir, fanIn: m.opts.fanIn, told: m.opts.spilled}
	defer sp.close()
	out := newOutput(m, begin, emit)
	srt := newSorter(m.opts.reorder, sp, func(it *item) error {
		if !out.admit(it) {
			return nil
		}
		return out.in(it)
	})
	m.put = srt.put
	var first error   // the first file left out
	var stopped error // the error of the one file read part way, its events kept (KeepRead)
	for i, s := range srcs {
		info := newFileInfo(s.name, i)
		m.files = append(m.files, info)
		h, err := m.readSource(s, info)
		if err != nil && m.keepRead(err, h) {
			stopped = err
			m.toldStopped(h)
		} else if err != nil {
			if !m.multi || fatalRead(err) {
				return nil, err
			}
			m.leaveOut(info, err)
			first = cmp.Or(first, err)
			continue
		}
		if err := m.endFile(info, h); err != nil {
			return nil, err
		}
	}
	if first != nil && !slices.ContainsFunc(m.files, func(fi *fileInfo) bool { return fi.class != classLeftOut }) {
		return nil, first
	}
	m.surveyed()
	out.rebase = m.im.Format != "xfertop-chrome"
	out.median, out.outliers = m.medianStart()
	if err := srt.finish(); err != nil {
		return nil, err
	}
	if err := out.finish(); err != nil {
		return nil, err
	}
	if stopped != nil {
		return m.finish(out, false), stopped // what was read went out; the error says where it stopped
	}
	return m.finish(out, true), nil
}

// keepRead reports whether the events a file read before err are kept (Options.KeepRead): an
// import of one file, stopped part way by what it read rather than by a bound or the context.
func (m *importer) keepRead(err error, h *header) bool {
	return m.opts.KeepRead && !m.multi && h != nil && !fatalRead(err)
}

// toldStopped tells progress where the read stopped, the offset its error names, so that the
// figure shown beside the error agrees with it.
func (m *importer) toldStopped(h *header) {
	if m.opts.Progress == nil || m.total <= 0 {
		return
	}
	at := h.Stopped
	if at < 0 {
		at = m.done // a gzipped file's offsets count its decompressed bytes: tell those read
	}
	m.opts.Progress(min(at, m.total), m.total)
}

// surveyed completes what the survey learnt once every file is read: whether --like-hta selects,
// and the devices of the description.
func (m *importer) surveyed() {
	m.htaActive = m.opts.LikeHTA && len(m.stepNames) >= 2
	devices := map[int32]bool{}
	for _, fi := range m.files {
		c := &fi.cls[fi.class]
		for d := range c.devices {
			devices[d] = true
		}
		if c.pending {
			devices[fi.rank] = true
		}
	}
	m.im.Devices = len(devices)
}

// medianStart is the median start of the events that go out, from the survey's samples, and
// whether any two of them start more than maxSpan apart (when not, none is left out).
func (m *importer) medianStart() (int64, bool) {
	var lo, hi int64
	var n int64
	var samples []weighted
	for _, fi := range m.files {
		c := &fi.cls[fi.class]
		if c.n == 0 {
			continue
		}
		if n == 0 || c.lo < lo {
			lo = c.lo
		}
		if n == 0 || c.hi > hi {
			hi = c.hi
		}
		n += c.n
		for _, t := range c.gpu.Kept() {
			samples = append(samples, weighted{t, c.gpu.Weight()})
		}
		selects := m.htaActive && fi.hta.hasCPU
		for _, t := range c.cpu.Kept() {
			if !selects || t < fi.cut() {
				samples = append(samples, weighted{t, c.cpu.Weight()})
			}
		}
	}
	if n == 0 || hi-lo <= maxSpan || len(samples) == 0 {
		return 0, false
	}
	return median(samples), true
}

// description is the import's description as known before its first event; base is the first
// event's start, time 0.
func (m *importer) description(base int64) *Imported {
	if m.im.Format != "xfertop-chrome" {
		m.im.EpochUnixNs = base // Kineto timestamps are µs since the Unix epoch
	}
	m.im.Source = strings.Join(m.names, ",")
	return m.im
}

// finish completes the description: the devices of the events handed on, and the warnings.
// complete says the files were read to their end: progress is told they were.
func (m *importer) finish(out *output, complete bool) *Imported {
	im := m.im
	im.Devices = len(out.devices)
	if n := m.labels.lost; n > 0 {
		m.warn("%d events' names were left out: the traces have more than %d distinct names", n, maxLabels)
	}
	if m.lostTracks > 0 {
		m.warn("%d slices were put on a shared track: the trace has more than %d processes or threads", m.lostTracks, maxTracks)
	}
	if n := out.corr.lost; n > 0 {
		m.warn("%d GPU ops started more than %d runtime calls after their launch: their launch time is unknown", n, m.opts.corrKeep)
	}
	im.Warnings = m.warnings
	if m.moreWarn > 0 {
		im.Warnings = append(im.Warnings, fmt.Sprintf("%d more warnings like these", m.moreWarn))
	}
	if m.opts.Progress != nil && complete {
		m.opts.Progress(max(m.total, m.done), max(m.total, m.done))
	}
	return im
}

// fatalRead reports whether a file's error stops an import of several: a bound passed, the import
// cancelled, a file that cannot be opened. Any other (a trace cut short, garbled) leaves that file
// out, as the importers of per-rank files do.
func fatalRead(err error) bool {
	var le *LimitError
	var pe *fs.PathError
	return errors.As(err, &le) || errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// leaveOut leaves a file of several out after an error reading it: one rank's trace cut short
// (its process killed while writing) leaves the other ranks' worth analysing. What it put in the
// sorter goes no further (admit keeps no item of classLeftOut), what it held is dropped, and a
// warning names the file, where and why.
func (m *importer) leaveOut(info *fileInfo, err error) {
	m.dropHeld()
	info.class = classLeftOut
	m.f = fileState{}
	m.warn("%v: left out (the other files are analysed; its rank counts as one not heard from)", err)
}
