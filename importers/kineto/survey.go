package kineto

import (
	"slices"
	"strconv"

	"github.com/xfertop/xfertop/importers/reorder"
	"github.com/xfertop/xfertop/timeline"
)

// The survey learns, as each file is read, what must be known before any event goes out: the
// file's class (a PyTorch profiler trace, another tool's Chrome trace, xfertop's own export: told
// only by what the file holds, anywhere in it), its rank (distributedInfo may follow the events),
// where --like-hta's selection cuts, the devices (for the description), and a bounded sample of
// starts (the median, to leave out events with a damaged timestamp). The events wait for it in the
// sorter, as they were read (raw devices, every class's items, provisional names for a generic
// trace's slices); admit applies what it learnt as they go out. What it holds per file is bounded:
// a sample, the devices (up to maxTracks), and a generic trace's names (up to maxLabels).

// htaFile is what --like-hta's selection needs of one file.
type htaFile struct {
	hasCPU, hasStep  bool
	minCPU, lastStep int64 // earliest CPU op; start of the last ProfilerStep (ns)
}

// classStats is what the survey learnt of the items a file makes as one class.
type classStats struct {
	n        int64
	lo, hi   int64
	cpu, gpu reorder.Sample // starts of the items HTA counts as CPU ops and as GPU ops
	devices  map[int32]bool
	lastDev  int32 // the device last put in devices (-1: none): most ops are on the last one's
	pending  bool  // some GPU op's device is the file's rank
}

// fileInfo is what the survey learnt of one file.
type fileInfo struct {
	name  string
	index int
	h     header
	class int
	rank  int32
	gpu   bool // it holds a GPU op: a Kineto trace, not a generic Chrome one
	hta   htaFile
	cls   [classes + 1]classStats // classLeftOut's stay empty
	// genIDs are the import's ids of the names of a generic trace's slices, by provisional id.
	genIDs []uint32
}

func newFileInfo(name string, index int) *fileInfo {
	fi := &fileInfo{name: name, index: index}
	for i := range fi.cls {
		fi.cls[i].devices, fi.cls[i].lastDev = map[int32]bool{}, -1
	}
	return fi
}

// note counts an item the file makes as class c.
func (fi *fileInfo) note(it *item, c int, htaGPU bool) {
	s := &fi.cls[c]
	t := it.ev.Start
	if s.n == 0 || t < s.lo {
		s.lo = t
	}
	if s.n == 0 || t > s.hi {
		s.hi = t
	}
	s.n++
	if htaGPU {
		s.gpu.Add(t)
	} else {
		s.cpu.Add(t)
	}
	ev := &it.ev
	switch {
	case ev.Kind == timeline.KindRuntime || ev.Kind == timeline.KindGraphLaunch || ev.Kind == timeline.KindStep:
	case ev.Device == devicePending:
		s.pending = true
	case ev.Device >= 0 && ev.Device != s.lastDev && len(s.devices) < maxTracks:
		s.devices[ev.Device], s.lastDev = true, ev.Device
	}
}

// cut is where --like-hta's selection cuts the file: its CPU ops that start before it are kept.
func (fi *fileInfo) cut() int64 {
	if fi.hta.hasStep {
		return fi.hta.lastStep
	}
	return fi.hta.minCPU
}

// endFile settles what the file's end tells: its class and rank, the import's format, and, for a
// generic Chrome trace, its slices (to the sorter), their names and tracks.
func (m *importer) endFile(info *fileInfo, h *header) error {
	m.warnPhases()
	info.h, info.gpu = *h, m.f.gpu
	info.settle()
	switch info.class {
	case classGeneric:
		m.im.Format = "chrome"
		info.genIDs = m.f.genLabels.commit(m.labels)
		m.lostTracks += m.f.lostTracks
		if err := m.release(); err != nil {
			return err
		}
	case classExported:
		m.im.Format, m.im.Exported = "xfertop-chrome", h.Metadata
		if v, ok := h.Metadata["epoch_unix_ns"]; ok {
			m.im.EpochUnixNs, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if h.Unclosed {
		m.warn("%s: the trace's array ends without its closing ']' (the Trace Event Format allows it: a tracer stopped while writing): the events before the end are read", info.name)
	}
	if h.Metadata == nil && !(h.HasRank && inRange(h.Rank, 0, maxInt32)) && (h.HasRank || h.BadRank) {
		m.warn("%s: distributedInfo.rank is not a rank: the file's position (%d) is used", info.name, info.index)
	}
	m.f = fileState{}
	return nil
}

// settle decides the file's class and rank once it is read to its end.
func (fi *fileInfo) settle() {
	fi.rank = int32(fi.index)
	switch {
	case fi.h.Metadata != nil:
		fi.class = classExported
		return
	case fi.h.HasRank && inRange(fi.h.Rank, 0, maxInt32):
		fi.rank = int32(fi.h.Rank)
	}
	fi.class = classKineto
	if !fi.gpu {
		fi.class = classGeneric
	}
}

// weighted is a sampled start standing for weight items.
type weighted struct{ t, w int64 }

// median returns the weighted median of samples (the upper one of an even count): exact while no
// sample has thinned out.
func median(samples []weighted) int64 {
	slices.SortFunc(samples, func(a, b weighted) int { return cmpInt(a.t, b.t) })
	var total int64
	for _, s := range samples {
		total += s.w
	}
	var cum int64
	for _, s := range samples {
		if cum += s.w; cum > total/2 {
			return s.t
		}
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
