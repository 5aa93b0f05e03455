package kineto

import (
	"bytes"
	"math"
	"strconv"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// emit notes an item the file would make as class for the survey and passes it to the sorter.
// htaGPU says whether HTA counts it as a GPU op (those are selected by the CPU op of their
// correlation, as they go out).
func (m *importer) emit(it *item, class int, htaGPU bool) error {
	m.f.info.note(it, class, htaGPU)
	it.flags |= uint8(class) << classShift
	if htaGPU {
		it.flags |= flagSelect
	}
	m.seq++
	it.seq = m.seq
	if class == classGeneric {
		return m.hold(it)
	}
	return m.put(it)
}

// item returns the importer's item, reused from one event to the next (the sorter copies it), for
// the event of traceEvents[index].
func (m *importer) item(ev timeline.Event, index int64) *item {
	m.scratch = item{ev: ev, org: makeOrigin(m.f.index, index)}
	return &m.scratch
}

// addExported keeps an event written by chrome.Write, rebuilt from its args.
func (m *importer) addExported(e *rawEvent) error {
	x := &e.Args.Xfertop
	ev := x.Event(m.label(x.L))
	switch {
	case ev.Start >= maxTime || ev.Start <= -maxTime || ev.End >= maxTime || ev.End <= -maxTime:
		m.warnEvent(e, "xfertop times out of range: event left out")
		return nil
	case ev.End < ev.Start:
		m.warnEvent(e, "xfertop end before start: taken as an instant")
		ev.End = ev.Start
	case ev.End-ev.Start > maxSpan:
		m.warnEvent(e, "xfertop duration longer than 24 h: event left out")
		return nil
	}
	ev.Bytes = m.checkBytes(e, "xfertop.b", ev.Bytes)
	return m.emit(m.item(ev, e.Index), classExported, false)
}

// addGeneric keeps a slice of a Chrome trace from a tool xfertop does not know: a kernel on a
// track, one device per process and one stream per thread, so the timeline and the idle analyses
// still apply.
func (m *importer) addGeneric(e *rawEvent, start, end int64) error {
	f := &m.f
	dev, ok := f.pids[string(e.Pid)]
	if !ok {
		dev = int32(len(f.pids))
		if len(f.pids) < maxTracks {
			f.pids[string(e.Pid)] = dev
		} else {
			dev--
			f.lostTracks++
		}
	}
	f.track = append(append(append(f.track[:0], e.Pid...), '/'), e.Tid...)
	st, ok := f.tids[string(f.track)] // no allocation: a lookup by converted bytes
	if !ok {
		st = uint32(len(f.tids) + 1)
		if len(f.tids) < maxTracks {
			f.tids[string(f.track)] = st
		} else {
			st--
			f.lostTracks++
		}
	}
	ev := timeline.Event{Kind: timeline.KindKernel, Start: start, End: end, Queued: queuedUnknown,
		Device: dev, Peer: timeline.NoDevice, Stream: st, Label: f.genLabels.id(e.Name)}
	return m.emit(m.item(ev, e.Index), classGeneric, false)
}

// addStep keeps a ProfilerStep#N annotation as a step: of the file's rank when several are merged.
func (m *importer) addStep(e *rawEvent, start, end int64) error {
	sm := stepName.FindSubmatch(e.Name)
	if sm == nil {
		return nil
	}
	n, err := strconv.ParseUint(string(sm[1]), 10, 32)
	if err != nil {
		m.warnEvent(e, "step number out of range: not taken as a step")
		return nil
	}
	ev := timeline.Event{Kind: timeline.KindStep, Start: start, End: end, Queued: queuedUnknown,
		Device: timeline.NoDevice, Peer: timeline.NoDevice, Aux: uint32(n), Label: m.label(e.Name)}
	if m.multi {
		// Each rank marks the job's steps: the step says whose it is, so that the ranks' marks
		// of one step number are taken as one step of the job, and each rank's ops as in its own.
		ev.Device = devicePending
	}
	return m.emit(m.item(ev, e.Index), classKineto, false)
}

// addKineto converts a GPU op or a runtime call of a PyTorch profiler trace. The event is made in
// the importer's item itself: made apart and copied in, its copies cost more than the rest.
func (m *importer) addKineto(e *rawEvent, kind timeline.Kind, gpu bool, start, end int64, htaGPU bool) error {
	a := &e.Args
	it := m.item(timeline.Event{}, e.Index)
	ev := &it.ev
	ev.Kind, ev.Start, ev.End, ev.Queued, ev.Peer, ev.Label = kind, start, end, queuedUnknown, timeline.NoDevice, m.label(e.Name)
	if a.Has&hasCorrelation != 0 {
		ev.Op = uint64(a.Correlation)
	}
	if !gpu {
		return m.addRuntime(e, it, htaGPU)
	}
	dev, ok := m.gpuDevice(e)
	if !ok {
		return nil
	}
	ev.Device = dev
	if a.Has&hasCorrelation != 0 {
		ev.Queued = queuedPending
		it.flags |= flagPending
	}
	ev.Stream = m.gpuStream(e)
	switch kind {
	case timeline.KindMemcpy:
		ev.Sub = uint8(copyDir(string(e.Name), e.Cat))
		if a.Bad&hasBytes != 0 {
			m.warnEvent(e, "args.bytes is not an integer within ±2^62: taken as unknown")
		} else if a.Has&hasBytes != 0 {
			ev.Bytes = m.checkBytes(e, "args.bytes", a.Bytes)
			m.checkRate(e, ev)
		}
	case timeline.KindKernel:
		m.collective(e, ev)
	}
	return m.emit(it, classKineto, htaGPU)
}

// addRuntime keeps a runtime call (a launch, a copy call, a synchronisation) of the host thread
// whose process id it stores; its start is the launch time of its correlated GPU op. it holds
// the call as addKineto made it.
func (m *importer) addRuntime(e *rawEvent, it *item, htaGPU bool) error {
	ev := &it.ev
	pid, _ := parseInt(e.Pid)
	ev.Kind, ev.Queued, ev.Aux = timeline.KindRuntime, ev.Start, uint32(pid)
	graph := isGraphLaunch(e.Name)
	if graph {
		ev.Aux = 0 // a graph launch's Aux is its node count, which the trace does not give
		ev.Kind = timeline.KindGraphLaunch
	}
	ev.Device = timeline.NoDevice
	if m.multi {
		ev.Device = devicePending // the file's rank
	}
	if e.Args.Has&hasCorrelation != 0 {
		it.flags |= flagLaunch
		if graph {
			it.flags |= flagGraph
		}
		if m.opts.LikeHTA && !htaGPU && htaCPUOp(e) {
			it.flags |= flagCPUOp
		}
	}
	return m.emit(it, classKineto, htaGPU)
}

// isGraphLaunch reports whether a runtime call launches a CUDA graph: cudaGraphLaunch (CUPTI may
// add a version suffix, cudaGraphLaunch_v10000) or the driver's cuGraphLaunch.
func isGraphLaunch(name []byte) bool {
	return bytes.HasPrefix(name, []byte("cudaGraphLaunch")) || bytes.HasPrefix(name, []byte("cuGraphLaunch"))
}

// gpuDevice returns the device of a GPU op from args.device; with several files, the device is
// the file's rank (devicePending: it is known at the file's end). It is false when the op is left
// out.
func (m *importer) gpuDevice(e *rawEvent) (int32, bool) {
	a := &e.Args
	switch {
	case m.multi:
	case a.Has&hasDevice != 0:
		if !inRange(a.Device, 0, maxInt32) {
			m.warnEvent(e, "args.device %d is not a device id: event left out", a.Device)
			return 0, false
		}
		return int32(a.Device), true
	case a.Bad&hasDevice != 0:
		m.warnEvent(e, "args.device is not a device id: event left out")
		return 0, false
	}
	return devicePending, true
}

// gpuStream returns the stream of a GPU op: args.stream, else its tid; stream 0, the default
// stream, becomes 1<<31, since 0 means "no stream" in events.
func (m *importer) gpuStream(e *rawEvent) uint32 {
	a := &e.Args
	var stream uint32
	switch {
	case a.Has&hasStream != 0 && inRange(a.Stream, 0, math.MaxUint32):
		stream = uint32(a.Stream)
	case a.Has&hasStream != 0 || a.Bad&hasStream != 0:
		m.warnEvent(e, "args.stream is not a stream id: taken as the default stream")
	default:
		if tid, ok := parseInt(e.Tid); ok && inRange(tid, 0, math.MaxUint32) {
			stream = uint32(tid)
		}
	}
	if stream == 0 {
		stream = 1 << 31
	}
	return stream
}

// collective makes an NCCL kernel a collective of its operation, with its size and group size
// where the trace gives them.
func (m *importer) collective(e *rawEvent, ev *timeline.Event) {
	if !bytes.HasPrefix(e.Name, []byte("nccl")) {
		return
	}
	op, ok := kernelOp(e.Name, &e.Args)
	if !ok {
		return
	}
	ev.Kind, ev.Sub = timeline.KindCollective, uint8(op)
	ev.Bytes = m.ncclBytes(e)
	if a := &e.Args; a.Has&hasGroupSize != 0 {
		if inRange(a.GroupSize, 0, math.MaxUint16) {
			ev.Ranks = uint16(a.GroupSize)
		} else {
			m.warnEvent(e, "args.Group size %d is out of range (0 to 65535): taken as unknown", a.GroupSize)
		}
	}
}

// checkRate checks a copy's bytes against its duration: moved faster than anything can, even
// given a tick (a µs) more than its dur (1 GB with dur 0), the record is broken, in its size or
// its times, and its size is taken as unknown, so that no rate or total is made of it.
func (m *importer) checkRate(e *rawEvent, ev *timeline.Event) {
	if dur := ev.End - ev.Start; ev.Bytes > 0 && float64(ev.Bytes)/float64(dur+1000) > timeline.MaxRateGBps {
		m.warnEvent(e, "args.bytes %d in dur %s is faster than anything moves data (%d GB/s): a broken record, its size taken as unknown",
			ev.Bytes, time.Duration(dur), timeline.MaxRateGBps)
		m.totalBytes -= ev.Bytes
		ev.Bytes = 0
	}
}

// checkBytes returns b when it is a byte count xfertop can add up, and 0 (unknown) otherwise.
func (m *importer) checkBytes(e *rawEvent, field string, b int64) int64 {
	if !inRange(b, 0, maxEventBytes) {
		m.warnEvent(e, "%s %d is out of range (0 to %s): taken as unknown", field, b, sizeText(maxEventBytes))
		return 0
	}
	if m.totalBytes+b > maxTotalBytes {
		m.warnEvent(e, "%s %d would take the trace's total past %s: taken as unknown", field, b, sizeText(maxTotalBytes))
		return 0
	}
	m.totalBytes += b
	return b
}

// ncclBytes is the message size newer PyTorch profilers attach to NCCL kernels, when present.
func (m *importer) ncclBytes(e *rawEvent) int64 {
	a := &e.Args
	if a.Bad&(hasInNelems|hasOutNelems) != 0 {
		m.warnEvent(e, "args.In/Out msg nelems is not an integer within ±2^62: size taken as unknown")
		return 0
	}
	n := max(a.InNelems, a.OutNelems)
	if n == 0 {
		return 0
	}
	size := dtypeSize[a.DType]
	if size == 0 {
		size = 1
	}
	if !inRange(n, 0, maxEventBytes) || !inRange(min(a.InNelems, a.OutNelems), 0, maxEventBytes) {
		m.warnEvent(e, "args.In/Out msg nelems %d is out of range (0 to 2^40): size taken as unknown", n)
		return 0
	}
	return m.checkBytes(e, "message size", n*size)
}
