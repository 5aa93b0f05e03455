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
	// copy its kind and devices; for the runtime calls, the thread and the correlation id.
	survey []string
	// text is the column of cols read as text (NVTX's text); 0: none (column 0 is the rowid).
	text int
	conv func(f *fileReader, r *rowVals, it *item) bool
	// runs: when the table's rows are kept by the survey and are a few runs in start order, they
	// are read by merging the runs rather than through a reorder buffer (runMerge). Its conv must
	// have no effect but on the item, the warnings and the names interned, so that a row converted
	// a second time, warnings muted, makes the same item and changes nothing.
	runs bool
}

// maxCols bounds the columns of a table's events.
const maxCols = 12

// rowVals is one row as a table's conversion reads it, from SQL or from the pages: the values of
// the table's cols in order (a NULL is 0 with null set), and the value of its text column (nil
// when NULL), valid until the next row is read.
type rowVals struct {
	v    [maxCols]int64
	null [maxCols]bool
	text []byte
}

// int reads a column that may be NULL.
func (r *rowVals) int(col int) (int64, bool) { return r.v[col], !r.null[col] }

// fromStmt fills the row from a statement reading the table's cols.
func (r *rowVals) fromStmt(t *table, s *sqlite3.Stmt) {
	for i := range t.cols {
		if i == t.text && i > 0 {
			r.v[i], r.null[i], r.text = 0, s.ColumnType(i) == sqlite3.NULL, nil
			if !r.null[i] {
				r.text = s.ColumnRawText(i)
			}
			continue
		}
		r.v[i], r.null[i] = s.ColumnInt64(i), s.ColumnType(i) == sqlite3.NULL
		if (i == 1 || i == 2) && notInteger(s, i) { // start, end: every table's columns 1 and 2
			r.v[i] = notATime
		}
	}
}

// notATime stands for a start or end that is not an integer (text, a real, a blob): SQLite does not
// enforce a column's type, and reads such a value as 0, the capture's epoch. It is outside every
// bound on times, so that the row is left out (times says why), never read at time 0.
const notATime = math.MinInt64

// notInteger reports whether column i of the row holds a value that is neither an integer nor NULL.
func notInteger(s *sqlite3.Stmt, i int) bool {
	t := s.ColumnType(i)
	return t != sqlite3.INTEGER && t != sqlite3.NULL
}

// gpuCols are the columns every GPU activity table shares, in this order.
var gpuCols = []string{"rowid", "start", "end", "deviceId", "streamId", "correlationId", "globalPid"}

func gpu(more ...string) []string { return append(gpuCols[:len(gpuCols):len(gpuCols)], more...) }

// tables are the activity tables in the order that breaks ties in start: runtime calls first, so
// that a GPU op starting with its launch finds its launch time.
var tables = []*table{
	{name: tableRuntime, cols: []string{"rowid", "start", "end", "globalTid", "correlationId", "nameId"}, survey: []string{"globalTid", "correlationId"},
		conv: (*fileReader).runtimeRow, runs: true}, // stored thread by thread
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
	{name: tableNVTX, cols: []string{"rowid", "start", "end", "eventType", "text", "textId", "globalTid"}, text: 4, conv: (*fileReader).nvtxRow,
		where: func(f *fileReader) string {
			return oneOf(`"eventType"`, append(f.enums.nvtxMarks[:len(f.enums.nvtxMarks):len(f.enums.nvtxMarks)], f.enums.nvtxRanges...))
		}},
}

// instantEnd is the end the survey reads for an NVTX row: its start for a mark or an open range.
func (f *fileReader) instantEnd() string {
	return `CASE WHEN ` + oneOf(`"eventType"`, f.enums.nvtxMarks) + ` OR "end" IS NULL THEN "start" ELSE "end" END`
}

// gpuEvent makes the event of a GPU row (columns as gpuCols).
func (f *fileReader) gpuEvent(table string, r *rowVals, kind timeline.Kind, it *item) bool {
	rowid := r.v[0]
	start, end, ok := f.times(table, rowid, r.v[1], r.v[2])
	if !ok {
		return false
	}
	gp, _ := r.int(6)
	p := proc(gp)
	dev, ok := f.device(table, rowid, p, r.v[3])
	if !ok {
		return false
	}
	it.ev = timeline.Event{Kind: kind, Start: start, End: end, Queued: queuedUnknown, Device: dev + f.devBase, Peer: timeline.NoDevice,
		Host: f.host, Stream: defaultStream}
	if st := r.v[4]; st > 0 && st < math.MaxUint32 {
		it.ev.Stream = uint32(st)
	}
	if corr, ok := r.int(5); ok && corr > 0 {
		it.ev.Op = uint64(corr)
		it.proc, it.role = p, roleLaunched
	}
	return true
}

// markGraph marks the event of a GPU row whose graphNodeId (column col; NULL where the export has
// no such column or the op was launched on its own) names a CUDA graph node: an op a graph
// replayed, marked as the engine marks one.
func markGraph(r *rowVals, col int, it *item) {
	if n, ok := r.int(col); ok && n != 0 {
		it.ev.Aux |= timeline.AuxCaptured
	}
}

// runtimeRow reads a CUDA API call: a runtime event, whose start is the launch time of the GPU ops
// that carry its correlation id (Holistic Trace Analysis's host-wait test).
func (f *fileReader) runtimeRow(r *rowVals, it *item) bool {
	start, end, ok := f.times(tableRuntime, r.v[0], r.v[1], r.v[2])
	if !ok {
		return false
	}
	gt, _ := r.int(3)
	p := proc(gt)
	it.ev = timeline.Event{Kind: timeline.KindRuntime, Start: start, End: end, Queued: start, Device: timeline.NoDevice,
		Peer: timeline.NoDevice, Host: f.host, Aux: p.pid(), Label: f.str(r.v[5])}
	if corr, ok := r.int(4); ok && corr > 0 {
		it.ev.Op = uint64(corr)
		it.proc, it.role = p, roleLaunch
	}
	return true
}

// kernelRow reads a kernel; NCCL's (ncclDevKernel_*, ncclKernel_*) are collectives, as in the
// PyTorch profiler importer. Nsight does not record their message sizes, so those stay unknown.
func (f *fileReader) kernelRow(r *rowVals, it *item) bool {
	if !f.gpuEvent(tableKernel, r, timeline.KindKernel, it) {
		return false
	}
	full, _ := r.int(8)
	k := f.kernelName(nameKey{r.v[7], full})
	it.ev.Label = k.label
	if k.nccl {
		it.ev.Kind, it.ev.Sub = timeline.KindCollective, uint8(k.op)
	}
	markGraph(r, 9, it)
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
func (f *fileReader) memcpyRow(r *rowVals, it *item) bool {
	if !f.gpuEvent(tableMemcpy, r, timeline.KindMemcpy, it) {
		return false
	}
	it.ev.Bytes = f.bytes(tableMemcpy, r.v[0], r.v[7])
	dir := f.copyDir(r.v[8])
	src, okS := r.int(9)
	dst, okD := r.int(10)
	if other, ok := f.peer(it.proc, int64(it.ev.Device-f.devBase), dir, src, dst, okS, okD); ok {
		dir, it.ev.Peer = timeline.CopyP2P, int32(other)+f.devBase
	}
	it.ev.Sub = uint8(dir)
	markGraph(r, 11, it)
	return true
}

func (f *fileReader) memsetRow(r *rowVals, it *item) bool {
	if !f.gpuEvent(tableMemset, r, timeline.KindMemcpy, it) {
		return false
	}
	it.ev.Sub, it.ev.Bytes = uint8(timeline.CopySet), f.bytes(tableMemset, r.v[0], r.v[7])
	markGraph(r, 8, it)
	return true
}

// syncRow reads a wait on an event (the query keeps only those): an event wait on its stream.
// Stream and context synchronisations are host calls, already among the runtime calls.
func (f *fileReader) syncRow(r *rowVals, it *item) bool {
	if !f.gpuEvent(tableSync, r, timeline.KindEventWait, it) {
		return false
	}
	it.ev.Queued, it.role = queuedUnknown, roleNone
	if id, ok := r.int(7); ok && id >= 0 && id <= math.MaxUint32 {
		it.ev.Aux = uint32(id)
	}
	return true
}

// nvtxRow reads an NVTX range or mark: a range named like the step range is a step, the others are
// marks (intervals), and NVTX marks are instant marks. A name is the range's text, or the
// registered string it names.
func (f *fileReader) nvtxRow(r *rowVals, it *item) bool {
	rowid, typ := r.v[0], r.v[3]
	end, hasEnd := r.int(2)
	instant := f.isMark(typ)
	if instant || !hasEnd {
		end = r.v[1]
	}
	start, end, ok := f.times(tableNVTX, rowid, r.v[1], end)
	if !ok {
		return false
	}
	var label uint32
	if !r.null[4] {
		name := nvtxName(r.text)
		if len(name) > maxName {
			f.m.warn("%s: %s row %d: a name of %d bytes, longer than the %s limit of one name: cut to its first %s",
				f.d.name, tableNVTX, rowid, len(name), sizeText(maxName), sizeText(maxName))
			name = []byte(cutName(string(name)))
		}
		label = f.m.labelBytes(name)
	} else if id, ok := r.int(5); ok {
		label = f.str(id)
	}
	gt, _ := r.int(6)
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
