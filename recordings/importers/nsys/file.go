package nsys

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/recordings/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// procKey names a process: a globalPid or globalTid with the thread bits dropped (Nsight's
// serialized ids hold the host's vm id, the pid and the tid, 24 bits each from the bottom).
type procKey int64

func proc(globalID int64) procKey { return procKey(globalID >> 24) }

// pid is the process id a serialized id holds.
func (p procKey) pid() uint32 { return uint32(p & 0xFFFFFF) }

type corrKey struct {
	proc procKey
	corr int64
}

type devKey struct {
	pid  uint32
	cuda int64
}

type nameKey struct{ short, full int64 }

// kernelName is what a kernel's names tell, worked out once per name.
type kernelName struct {
	label uint32
	op    timeline.CollOp
	nccl  bool
}

// fileReader holds what one export's rows are resolved against.
type fileReader struct {
	m        *importer
	d        *db
	host     uint16
	offset   int64            // adds to a capture time to make it Unix ns
	strs     map[int64]string // StringIds
	ids      map[int64]uint32 // StringIds id → label
	kernels  map[nameKey]kernelName
	launches map[corrKey]int64 // runtime call start by correlation
	gpus     map[devKey]int64  // (pid, CUDA device) → GPU id, from TARGET_INFO_CUDA_DEVICE
	maxLocal int64             // largest device id of the file
	step     uint32
}

// readFile imports the export d, the i-th file.
func (m *importer) readFile(i int, d *db) error {
	f := &fileReader{m: m, d: d, host: uint16(min(i, math.MaxUint16)), strs: map[int64]string{}, ids: map[int64]uint32{},
		kernels: map[nameKey]kernelName{}, launches: map[corrKey]int64{}, gpus: map[devKey]int64{}, maxLocal: -1}
	lo := len(m.im.Events)
	steps := []func() error{f.readClock, f.readStrings, f.readDevices, f.readRuntime, f.readKernels, f.readMemcpys,
		f.readMemsets, f.readSyncs, f.readNVTX, f.readGPUNames}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
	}
	for j := lo; j < len(m.im.Events); j++ {
		if ev := &m.im.Events[j]; ev.Device >= 0 {
			ev.Device += m.devBase
		}
		if ev := &m.im.Events[j]; ev.Peer >= 0 {
			ev.Peer += m.devBase
		}
	}
	m.devBase += int32(f.maxLocal + 1)
	return nil
}

// readClock reads when the capture started, in Unix ns and on the clock of its timestamps.
func (f *fileReader) readClock() error {
	if !f.d.has(tableStart) {
		f.m.anyClock = true
		return nil
	}
	found := false
	err := f.d.each(f.d.selectCols(tableStart, []string{"utcEpochNs", "systemClockNs"}, ""), func(s *sqlite3.Stmt) error {
		utc, ok1 := nullInt(s, 0)
		clock, ok2 := nullInt(s, 1)
		if ok1 && ok2 && inTime(utc) && inTime(clock) {
			f.offset, found = utc-clock, true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", tableStart, err)
	}
	if !found {
		f.m.warn("%s: %s holds no usable start time: times are those of the capture's clock", f.d.name, tableStart)
		f.m.anyClock = true
	}
	return nil
}

func (f *fileReader) readStrings() error {
	return f.d.each("SELECT id, value FROM "+tableStrings, func(s *sqlite3.Stmt) error {
		f.strs[s.ColumnInt64(0)] = s.ColumnText(1)
		return nil
	})
}

// str returns the label of a StringIds id.
func (f *fileReader) str(id int64) uint32 {
	if l, ok := f.ids[id]; ok {
		return l
	}
	l := f.m.label(f.strs[id])
	f.ids[id] = l
	return l
}

// readDevices maps each process's CUDA device ids to GPUs: processes that see their GPUs through
// CUDA_VISIBLE_DEVICES all call theirs device 0.
func (f *fileReader) readDevices() error {
	if !f.d.has(tableCUDADev) || f.d.need(tableCUDADev, "cudaId", "pid") != nil {
		return nil
	}
	return f.d.each(f.d.selectCols(tableCUDADev, []string{"pid", "cudaId", "gpuId"}, ""), func(s *sqlite3.Stmt) error {
		if gpu, ok := nullInt(s, 2); ok && gpu >= 0 && gpu <= math.MaxInt16 {
			f.gpus[devKey{uint32(s.ColumnInt64(0)), s.ColumnInt64(1)}] = gpu
		}
		return nil
	})
}

// readGPUNames keeps each GPU's name for the report's description.
func (f *fileReader) readGPUNames() error {
	if !f.d.has(tableGPU) || f.d.need(tableGPU, "id", "name") != nil {
		return nil
	}
	return f.d.each(f.d.selectCols(tableGPU, []string{"id", "name"}, ""), func(s *sqlite3.Stmt) error {
		id := s.ColumnInt64(0)
		if name := s.ColumnText(1); name != "" && id >= 0 && id <= f.maxLocal {
			f.m.extra["gpu."+strconv.FormatInt(id+int64(f.m.devBase), 10)] = name
		}
		return nil
	})
}

// device resolves the device of a GPU row: its GPU, or its CUDA id when the export does not map it.
func (f *fileReader) device(table string, rowid int64, p procKey, cuda int64) (int32, bool) {
	local := cuda
	if g, ok := f.gpus[devKey{p.pid(), cuda}]; ok {
		local = g
	}
	if local < 0 || local > math.MaxInt16 {
		f.m.warn("%s: %s row %d: deviceId %d is not a device id: row left out", f.d.name, table, rowid, cuda)
		return 0, false
	}
	f.maxLocal = max(f.maxLocal, local)
	return int32(local), true
}

func inTime(t int64) bool { return t > -maxTime && t < maxTime }

// times checks a row's interval and puts it on the Unix clock.
func (f *fileReader) times(table string, rowid, start, end int64) (int64, int64, bool) {
	switch {
	case !inTime(start) || !inTime(end):
		f.m.warn("%s: %s row %d: start or end is not a time within 146 years: row left out", f.d.name, table, rowid)
		return 0, 0, false
	case end < start:
		f.m.warn("%s: %s row %d: ends %s before it starts: taken as an instant", f.d.name, table, rowid, time.Duration(start-end))
		end = start
	case end-start > maxSpan:
		f.m.warn("%s: %s row %d: lasts %s, more than 24 h: row left out", f.d.name, table, rowid, time.Duration(end-start))
		return 0, 0, false
	}
	return start + f.offset, end + f.offset, true
}

// gpuRow is the part every GPU activity table shares: rowid, start, end, deviceId, streamId,
// correlationId, globalPid, in that order.
var gpuCols = []string{"rowid", "start", "end", "deviceId", "streamId", "correlationId", "globalPid"}

// gpuEvent makes the event of a GPU row (columns as gpuCols), with its launch time.
func (f *fileReader) gpuEvent(table string, s *sqlite3.Stmt, kind timeline.Kind) (timeline.Event, bool) {
	rowid := s.ColumnInt64(0)
	start, end, ok := f.times(table, rowid, s.ColumnInt64(1), s.ColumnInt64(2))
	if !ok {
		return timeline.Event{}, false
	}
	gp, _ := nullInt(s, 6)
	p := proc(gp)
	dev, ok := f.device(table, rowid, p, s.ColumnInt64(3))
	if !ok {
		return timeline.Event{}, false
	}
	ev := timeline.Event{Kind: kind, Start: start, End: end, Queued: queuedUnknown, Device: dev, Peer: timeline.NoDevice,
		Host: f.host, Stream: defaultStream}
	if st := s.ColumnInt64(4); st > 0 && st < math.MaxUint32 {
		ev.Stream = uint32(st)
	}
	if corr, ok := nullInt(s, 5); ok && corr > 0 {
		ev.Op = uint64(corr)
		if q, ok := f.launches[corrKey{p, corr}]; ok {
			ev.Queued = q
		}
	}
	return ev, true
}

// bytes checks a row's byte count: 0 (unknown) with a warning when out of range.
func (f *fileReader) bytes(table string, rowid, b int64) int64 {
	if b < 0 || b > maxEventBytes {
		f.m.warn("%s: %s row %d: bytes %d is out of range (0 to 1 TiB): taken as unknown", f.d.name, table, rowid, b)
		return 0
	}
	return b
}

// readRuntime reads the CUDA API calls: each is a runtime event, and its start is the launch time
// of the GPU ops that carry its correlation id (Holistic Trace Analysis's host-wait test).
func (f *fileReader) readRuntime() error {
	if !f.d.has(tableRuntime) {
		return nil
	}
	q := f.d.selectCols(tableRuntime, []string{"rowid", "start", "end", "globalTid", "correlationId", "nameId"}, "")
	err := f.d.each(q, func(s *sqlite3.Stmt) error {
		f.m.row()
		start, end, ok := f.times(tableRuntime, s.ColumnInt64(0), s.ColumnInt64(1), s.ColumnInt64(2))
		if !ok {
			return nil
		}
		gt, _ := nullInt(s, 3)
		p := proc(gt)
		ev := timeline.Event{Kind: timeline.KindRuntime, Start: start, End: end, Queued: start, Device: timeline.NoDevice,
			Peer: timeline.NoDevice, Host: f.host, Aux: p.pid(), Label: f.str(s.ColumnInt64(5))}
		if corr, ok := nullInt(s, 4); ok && corr > 0 {
			ev.Op = uint64(corr)
			k := corrKey{p, corr}
			if t, seen := f.launches[k]; !seen || start < t {
				f.launches[k] = start
			}
		}
		f.m.im.Events = append(f.m.im.Events, ev)
		return nil
	})
	f.m.tableDone()
	return wrap(tableRuntime, err)
}

func wrap(table string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	return nil
}

// readKernels reads kernels; NCCL's (ncclDevKernel_*, ncclKernel_*) are collectives, as in the
// PyTorch profiler importer. Nsight does not record their message sizes, so those stay unknown.
func (f *fileReader) readKernels() error {
	if !f.d.has(tableKernel) {
		return nil
	}
	q := f.d.selectCols(tableKernel, append(gpuCols[:len(gpuCols):len(gpuCols)], "shortName", "demangledName"), "")
	err := f.d.each(q, func(s *sqlite3.Stmt) error {
		f.m.row()
		ev, ok := f.gpuEvent(tableKernel, s, timeline.KindKernel)
		if !ok {
			return nil
		}
		full, _ := nullInt(s, 8)
		k := f.kernelName(nameKey{s.ColumnInt64(7), full})
		ev.Label = k.label
		if k.nccl {
			ev.Kind, ev.Sub = timeline.KindCollective, uint8(k.op)
		}
		f.m.im.Events = append(f.m.im.Events, ev)
		return nil
	})
	f.m.tableDone()
	return wrap(tableKernel, err)
}

// kernelName works out a kernel's label (its demangled name, as the PyTorch profiler writes it)
// and whether it is NCCL's.
func (f *fileReader) kernelName(k nameKey) kernelName {
	if n, ok := f.kernels[k]; ok {
		return n
	}
	short, full := f.strs[k.short], f.strs[k.full]
	if full == "" {
		full = short
	}
	n := kernelName{label: f.m.label(full)}
	if op, ok := kineto.NCCLOp(short); ok {
		n.op, n.nccl = op, true
	} else if op, ok := kineto.NCCLOp(full); ok {
		n.op, n.nccl = op, true
	}
	f.kernels[k] = n
	return n
}

// CUPTI's copy kinds (CUpti_ActivityMemcpyKind; ENUM_CUDA_MEMCPY_OPER in the export).
const (
	copyHtoD    = 1
	copyDtoH    = 2
	copyHtoA    = 3
	copyAtoH    = 4
	copyAtoD    = 6
	copyDtoA    = 7
	copyPtoP    = 10
	copyUVMHtoD = 11
	copyUVMDtoH = 12
)

// copyDir maps a copy kind to xfertop's direction. Array copies count as device memory; a kind
// xfertop does not name (host to host, unknown) is d2d, as the PyTorch profiler importer takes a
// name it does not know.
func copyDir(kind int64) timeline.CopyDir {
	switch kind {
	case copyHtoD, copyHtoA, copyUVMHtoD:
		return timeline.CopyH2D
	case copyDtoH, copyAtoH, copyUVMDtoH:
		return timeline.CopyD2H
	case copyPtoP:
		return timeline.CopyP2P
	case copyAtoD, copyDtoA:
		return timeline.CopyD2D
	}
	return timeline.CopyD2D
}

// readMemcpys reads copies: direction from copyKind; a copy between two devices is a peer copy
// whose Peer is the other device.
func (f *fileReader) readMemcpys() error {
	if !f.d.has(tableMemcpy) {
		return nil
	}
	q := f.d.selectCols(tableMemcpy, append(gpuCols[:len(gpuCols):len(gpuCols)], "bytes", "copyKind", "srcDeviceId", "dstDeviceId"), "")
	err := f.d.each(q, func(s *sqlite3.Stmt) error {
		f.m.row()
		ev, ok := f.gpuEvent(tableMemcpy, s, timeline.KindMemcpy)
		if !ok {
			return nil
		}
		rowid := s.ColumnInt64(0)
		ev.Bytes = f.bytes(tableMemcpy, rowid, s.ColumnInt64(7))
		dir := copyDir(s.ColumnInt64(8))
		src, okS := nullInt(s, 9)
		dst, okD := nullInt(s, 10)
		if okS && okD && src != dst && (dir == timeline.CopyD2D || dir == timeline.CopyP2P) {
			dir = timeline.CopyP2P
			other := dst
			if g, ok := f.gpus[devKey{proc(s.ColumnInt64(6)).pid(), dst}]; ok {
				other = g
			}
			if other == int64(ev.Device) {
				other = src
				if g, ok := f.gpus[devKey{proc(s.ColumnInt64(6)).pid(), src}]; ok {
					other = g
				}
			}
			if other >= 0 && other <= math.MaxInt16 {
				ev.Peer = int32(other)
				f.maxLocal = max(f.maxLocal, other)
			}
		}
		ev.Sub = uint8(dir)
		f.m.im.Events = append(f.m.im.Events, ev)
		return nil
	})
	f.m.tableDone()
	return wrap(tableMemcpy, err)
}

func (f *fileReader) readMemsets() error {
	if !f.d.has(tableMemset) {
		return nil
	}
	q := f.d.selectCols(tableMemset, append(gpuCols[:len(gpuCols):len(gpuCols)], "bytes"), "")
	err := f.d.each(q, func(s *sqlite3.Stmt) error {
		f.m.row()
		ev, ok := f.gpuEvent(tableMemset, s, timeline.KindMemcpy)
		if !ok {
			return nil
		}
		ev.Sub, ev.Bytes = uint8(timeline.CopySet), f.bytes(tableMemset, s.ColumnInt64(0), s.ColumnInt64(7))
		f.m.im.Events = append(f.m.im.Events, ev)
		return nil
	})
	f.m.tableDone()
	return wrap(tableMemset, err)
}

// CUPTI's synchronization types (ENUM_CUPTI_SYNC_TYPE).
const (
	syncEvent      = 1 // cudaEventSynchronize
	syncStreamWait = 2 // cudaStreamWaitEvent
)

// readSyncs reads waits on events: a stream waiting for an event (cudaStreamWaitEvent) and the
// host waiting for one (cudaEventSynchronize) become event waits on that stream; stream and
// context synchronisations are host calls, already among the runtime calls. Recent exports have a
// syncType column and a deprecatedSyncType one (documented as the type of older reports): the
// first that holds a value is read.
func (f *fileReader) readSyncs() error {
	if !f.d.has(tableSync) {
		return nil
	}
	q := f.d.selectCols(tableSync, append(gpuCols[:len(gpuCols):len(gpuCols)], "syncType", "deprecatedSyncType", "eventId"), "")
	err := f.d.each(q, func(s *sqlite3.Stmt) error {
		f.m.row()
		typ, ok := nullInt(s, 7)
		if !ok {
			typ, _ = nullInt(s, 8)
		}
		if typ != syncEvent && typ != syncStreamWait {
			return nil
		}
		ev, ok := f.gpuEvent(tableSync, s, timeline.KindEventWait)
		if !ok {
			return nil
		}
		ev.Queued = queuedUnknown
		if id, ok := nullInt(s, 9); ok && id >= 0 && id <= math.MaxUint32 {
			ev.Aux = uint32(id)
		}
		f.m.im.Events = append(f.m.im.Events, ev)
		return nil
	})
	f.m.tableDone()
	return wrap(tableSync, err)
}

// NVTX event types (ENUM_NSYS_EVENT_TYPE).
const (
	nvtxMark      = 34
	nvtxPushPop   = 59
	nvtxStartEnd  = 60
	nvtxtMark     = 65
	nvtxtPushPop  = 70
	nvtxtStartEnd = 71
)

// nvtxTypes lists the NVTX event types read, for the query.
var nvtxTypes = fmt.Sprintf("%d, %d, %d, %d, %d, %d", nvtxMark, nvtxPushPop, nvtxStartEnd, nvtxtMark, nvtxtPushPop, nvtxtStartEnd)

// readNVTX reads NVTX ranges and marks: a range named like the step range is a step, the others are
// marks (intervals), and NVTX marks are instant marks. A name is the range's text, or the
// registered string it names.
func (f *fileReader) readNVTX() error {
	if !f.d.has(tableNVTX) {
		return nil
	}
	q := f.d.selectCols(tableNVTX, []string{"rowid", "start", "end", "eventType", "text", "textId", "globalTid"},
		`"eventType" IN (`+nvtxTypes+")")
	err := f.d.each(q, func(s *sqlite3.Stmt) error {
		f.m.row()
		rowid, typ := s.ColumnInt64(0), s.ColumnInt64(3)
		end, hasEnd := nullInt(s, 2)
		instant := typ == nvtxMark || typ == nvtxtMark
		if instant || !hasEnd {
			end = s.ColumnInt64(1)
		}
		start, end, ok := f.times(tableNVTX, rowid, s.ColumnInt64(1), end)
		if !ok {
			return nil
		}
		name := s.ColumnText(4)
		if s.ColumnType(4) == sqlite3.NULL {
			if id, ok := nullInt(s, 5); ok {
				name = f.strs[id]
			}
		}
		gt, _ := nullInt(s, 6)
		ev := timeline.Event{Kind: timeline.KindMark, Start: start, End: end, Queued: queuedUnknown, Device: timeline.NoDevice,
			Peer: timeline.NoDevice, Host: f.host, Aux: proc(gt).pid()}
		if n, ok := f.stepNumber(name); ok && !instant {
			ev.Kind, ev.Aux = timeline.KindStep, n
		}
		ev.Label = f.m.label(name)
		f.m.im.Events = append(f.m.im.Events, ev)
		return nil
	})
	f.m.tableDone()
	return wrap(tableNVTX, err)
}

// stepNumber reports whether an NVTX range is a step, and its number: the N of NAME#N, or else the
// steps counted so far in the file.
func (f *fileReader) stepNumber(name string) (uint32, bool) {
	step := f.m.opts.StepRange
	rest, ok := strings.CutPrefix(name, step)
	if !ok {
		return 0, false
	}
	if num, ok := strings.CutPrefix(rest, "#"); ok {
		digits := num
		if i := strings.IndexFunc(num, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
			digits = num[:i]
		}
		if n, err := strconv.ParseUint(digits, 10, 32); err == nil && (digits == num || strings.HasPrefix(num[len(digits):], ", ")) {
			return uint32(n), true
		}
		return 0, false
	}
	if rest == "" || strings.HasPrefix(rest, ", ") {
		f.step++
		return f.step, true
	}
	return 0, false
}
