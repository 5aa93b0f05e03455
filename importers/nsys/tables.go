package nsys

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// table is one activity table the importer reads: the columns of its events (rowid, start and end
// first) and of its survey, the rows it keeps, and how a row becomes an event.
type table struct {
	name string
	cols []string
	// where keeps the rows that may become events; a function of the export's columns and enums.
	where func(f *fileReader) string
	// survey lists what the survey reads after start and end: the device, the process, and for a
	// copy its kind and devices.
	survey []string
	conv   func(f *fileReader, s *sqlite3.Stmt, it *item) bool
}

// gpuCols are the columns every GPU activity table shares, in this order.
var gpuCols = []string{"rowid", "start", "end", "deviceId", "streamId", "correlationId", "globalPid"}

func gpu(more ...string) []string { return append(gpuCols[:len(gpuCols):len(gpuCols)], more...) }

// tables are the activity tables in the order that breaks ties in start: runtime calls first, so
// that a GPU op starting with its launch finds its launch time.
var tables = []*table{
	{name: tableRuntime, cols: []string{"rowid", "start", "end", "globalTid", "correlationId", "nameId"}, conv: (*fileReader).runtimeRow},
	{name: tableKernel, cols: gpu("shortName", "demangledName", "graphNodeId"), survey: []string{"deviceId", "globalPid"}, conv: (*fileReader).kernelRow},
	{name: tableMemcpy, cols: gpu("bytes", "copyKind", "srcDeviceId", "dstDeviceId", "graphNodeId"),
		survey: []string{"deviceId", "globalPid", "copyKind", "srcDeviceId", "dstDeviceId"}, conv: (*fileReader).memcpyRow},
	{name: tableMemset, cols: gpu("bytes", "graphNodeId"), survey: []string{"deviceId", "globalPid"}, conv: (*fileReader).memsetRow},
	{name: tableSync, cols: gpu("eventId"), survey: []string{"deviceId", "globalPid"}, conv: (*fileReader).syncRow,
		// Recent exports have a syncType column and a deprecatedSyncType one (documented as the
		// type of older reports): the first that holds a value is the type.
		where: func(f *fileReader) string {
			have := f.d.tables[tableSync]
			return oneOf(fmt.Sprintf("coalesce(%s, %s)", pick(have, "syncType"), pick(have, "deprecatedSyncType")), f.enums.syncWaits)
		}},
	{name: tableNVTX, cols: []string{"rowid", "start", "end", "eventType", "text", "textId", "globalTid"}, conv: (*fileReader).nvtxRow,
		where: func(f *fileReader) string {
			return oneOf(`"eventType"`, append(f.enums.nvtxMarks[:len(f.enums.nvtxMarks):len(f.enums.nvtxMarks)], f.enums.nvtxRanges...))
		}},
}

// instantEnd is the end the survey reads for an NVTX row: its start for a mark or an open range.
func (f *fileReader) instantEnd() string {
	return `CASE WHEN ` + oneOf(`"eventType"`, f.enums.nvtxMarks) + ` OR "end" IS NULL THEN "start" ELSE "end" END`
}

// gpuEvent makes the event of a GPU row (columns as gpuCols).
func (f *fileReader) gpuEvent(table string, s *sqlite3.Stmt, kind timeline.Kind, it *item) bool {
	rowid := s.ColumnInt64(0)
	start, end, ok := f.times(table, rowid, s.ColumnInt64(1), s.ColumnInt64(2))
	if !ok {
		return false
	}
	gp, _ := nullInt(s, 6)
	p := proc(gp)
	dev, ok := f.device(table, rowid, p, s.ColumnInt64(3))
	if !ok {
		return false
	}
	it.ev = timeline.Event{Kind: kind, Start: start, End: end, Queued: queuedUnknown, Device: dev + f.devBase, Peer: timeline.NoDevice,
		Host: f.host, Stream: defaultStream}
	if st := s.ColumnInt64(4); st > 0 && st < math.MaxUint32 {
		it.ev.Stream = uint32(st)
	}
	if corr, ok := nullInt(s, 5); ok && corr > 0 {
		it.ev.Op = uint64(corr)
		it.proc, it.role = p, roleLaunched
	}
	return true
}

// markGraph marks the event of a GPU row whose graphNodeId (column col; NULL where the export has
// no such column or the op was launched on its own) names a CUDA graph node: an op a graph
// replayed, marked as the engine marks one.
func markGraph(s *sqlite3.Stmt, col int, it *item) {
	if n, ok := nullInt(s, col); ok && n != 0 {
		it.ev.Aux |= timeline.AuxCaptured
	}
}

// runtimeRow reads a CUDA API call: a runtime event, whose start is the launch time of the GPU ops
// that carry its correlation id (Holistic Trace Analysis's host-wait test).
func (f *fileReader) runtimeRow(s *sqlite3.Stmt, it *item) bool {
	start, end, ok := f.times(tableRuntime, s.ColumnInt64(0), s.ColumnInt64(1), s.ColumnInt64(2))
	if !ok {
		return false
	}
	gt, _ := nullInt(s, 3)
	p := proc(gt)
	it.ev = timeline.Event{Kind: timeline.KindRuntime, Start: start, End: end, Queued: start, Device: timeline.NoDevice,
		Peer: timeline.NoDevice, Host: f.host, Aux: p.pid(), Label: f.str(s.ColumnInt64(5))}
	if corr, ok := nullInt(s, 4); ok && corr > 0 {
		it.ev.Op = uint64(corr)
		it.proc, it.role = p, roleLaunch
	}
	return true
}

// kernelRow reads a kernel; NCCL's (ncclDevKernel_*, ncclKernel_*) are collectives, as in the
// PyTorch profiler importer. Nsight does not record their message sizes, so those stay unknown.
func (f *fileReader) kernelRow(s *sqlite3.Stmt, it *item) bool {
	if !f.gpuEvent(tableKernel, s, timeline.KindKernel, it) {
		return false
	}
	full, _ := nullInt(s, 8)
	k := f.kernelName(nameKey{s.ColumnInt64(7), full})
	it.ev.Label = k.label
	if k.nccl {
		it.ev.Kind, it.ev.Sub = timeline.KindCollective, uint8(k.op)
	}
	markGraph(s, 9, it)
	return true
}

// kernelName works out a kernel's label (its demangled name, as the PyTorch profiler writes it)
// and whether it is NCCL's.
func (f *fileReader) kernelName(k nameKey) kernelName {
	if n, ok := f.kernels[k]; ok {
		return n
	}
	short, full := f.text(k.short), f.text(k.full)
	if full == "" {
		full = short
	}
	n := kernelName{label: f.m.label(full)}
	if op, ok := kineto.NCCLOp(short); ok {
		n.op, n.nccl = op, true
	} else if op, ok := kineto.NCCLOp(full); ok {
		n.op, n.nccl = op, true
	}
	if len(f.kernels) >= cacheEntries {
		clear(f.kernels) // a bound, not an eviction policy: names repeat, and are looked up again
	}
	f.kernels[k] = n
	return n
}

// peer returns the local device at the other end of a copy between two devices, if it is one.
func (f *fileReader) peer(p procKey, local int64, dir timeline.CopyDir, src, dst int64, okS, okD bool) (int64, bool) {
	if !okS || !okD || src == dst || (dir != timeline.CopyD2D && dir != timeline.CopyP2P) {
		return 0, false
	}
	other := f.localOf(p, dst)
	if other == local {
		other = f.localOf(p, src)
	}
	return other, other >= 0 && other <= math.MaxInt16
}

// memcpyRow reads a copy: direction from copyKind; a copy between two devices is a peer copy whose
// Peer is the other device.
func (f *fileReader) memcpyRow(s *sqlite3.Stmt, it *item) bool {
	if !f.gpuEvent(tableMemcpy, s, timeline.KindMemcpy, it) {
		return false
	}
	it.ev.Bytes = f.bytes(tableMemcpy, s.ColumnInt64(0), s.ColumnInt64(7))
	dir := f.copyDir(s.ColumnInt64(8))
	src, okS := nullInt(s, 9)
	dst, okD := nullInt(s, 10)
	if other, ok := f.peer(it.proc, int64(it.ev.Device-f.devBase), dir, src, dst, okS, okD); ok {
		dir, it.ev.Peer = timeline.CopyP2P, int32(other)+f.devBase
	}
	it.ev.Sub = uint8(dir)
	markGraph(s, 11, it)
	return true
}

func (f *fileReader) memsetRow(s *sqlite3.Stmt, it *item) bool {
	if !f.gpuEvent(tableMemset, s, timeline.KindMemcpy, it) {
		return false
	}
	it.ev.Sub, it.ev.Bytes = uint8(timeline.CopySet), f.bytes(tableMemset, s.ColumnInt64(0), s.ColumnInt64(7))
	markGraph(s, 8, it)
	return true
}

// syncRow reads a wait on an event (the query keeps only those): an event wait on its stream.
// Stream and context synchronisations are host calls, already among the runtime calls.
func (f *fileReader) syncRow(s *sqlite3.Stmt, it *item) bool {
	if !f.gpuEvent(tableSync, s, timeline.KindEventWait, it) {
		return false
	}
	it.ev.Queued, it.role = queuedUnknown, roleNone
	if id, ok := nullInt(s, 7); ok && id >= 0 && id <= math.MaxUint32 {
		it.ev.Aux = uint32(id)
	}
	return true
}

// nvtxRow reads an NVTX range or mark: a range named like the step range is a step, the others are
// marks (intervals), and NVTX marks are instant marks. A name is the range's text, or the
// registered string it names.
func (f *fileReader) nvtxRow(s *sqlite3.Stmt, it *item) bool {
	rowid, typ := s.ColumnInt64(0), s.ColumnInt64(3)
	end, hasEnd := nullInt(s, 2)
	instant := f.isMark(typ)
	if instant || !hasEnd {
		end = s.ColumnInt64(1)
	}
	start, end, ok := f.times(tableNVTX, rowid, s.ColumnInt64(1), end)
	if !ok {
		return false
	}
	var label uint32
	if s.ColumnType(4) != sqlite3.NULL {
		label = f.m.labelBytes(nvtxName(s.ColumnRawText(4)))
	} else if id, ok := nullInt(s, 5); ok {
		label = f.str(id)
	}
	gt, _ := nullInt(s, 6)
	it.ev = timeline.Event{Kind: timeline.KindMark, Start: start, End: end, Queued: queuedUnknown, Device: timeline.NoDevice,
		Peer: timeline.NoDevice, Host: f.host, Aux: proc(gt).pid(), Label: label}
	if n, ok := f.stepNumber(f.m.im.Strings.Lookup(label)); ok && !instant {
		it.ev.Kind, it.ev.Aux = timeline.KindStep, n
	}
	return true
}

// emitNVTXIDs start what PyTorch's emit_nvtx appends to an op's name, ids unique to each call.
var emitNVTXIDs = [][]byte{[]byte(", seq = "), []byte(", op_id = ")}

// nvtxName is an NVTX range's name without the ids emit_nvtx appends ("aten::mul, seq = 46174,
// op_id = 993406, sizes = ..." is aten::mul, as the PyTorch profiler names it): with them, every
// range would be a name of its own, and the names of an export would grow with its ranges.
func nvtxName(b []byte) []byte {
	for _, sep := range emitNVTXIDs {
		if i := bytes.Index(b, sep); i >= 0 {
			b = b[:i]
		}
	}
	return b
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
