package nsys

import (
	"fmt"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// ENUM tables of an export name the kinds its activity rows hold as numbers.
const (
	enumCopy = "ENUM_CUDA_MEMCPY_OPER"
	enumSync = "ENUM_CUPTI_SYNC_TYPE"
	enumNVTX = "ENUM_NSYS_EVENT_TYPE"
)

// enumValue is a kind the importer tells apart: its name in an ENUM table, and its number in CUPTI
// and Nsight Systems (2024 to 2026), taken when the export has no ENUM table or the table lacks it.
type enumValue struct {
	name string
	id   int64
}

// The copy kinds (CUpti_ActivityMemcpyKind) by direction. Array copies count as device memory; a
// kind named in none of these (host to host, unknown) is d2d, as the PyTorch profiler importer
// takes a name it does not know.
var copyKinds = map[timeline.CopyDir][]enumValue{
	timeline.CopyH2D: {{"CUDA_MEMCPY_KIND_HTOD", 1}, {"CUDA_MEMCPY_KIND_HTOA", 3}, {"CUDA_MEMCPY_KIND_UVM_HTOD", 11}},
	timeline.CopyD2H: {{"CUDA_MEMCPY_KIND_DTOH", 2}, {"CUDA_MEMCPY_KIND_ATOH", 4}, {"CUDA_MEMCPY_KIND_UVM_DTOH", 12}},
	timeline.CopyP2P: {{"CUDA_MEMCPY_KIND_PTOP", 10}},
}

// The synchronisations that are waits on an event: the host waiting for one
// (cudaEventSynchronize) and a stream waiting for one (cudaStreamWaitEvent).
var syncWaits = []enumValue{
	{"CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", 1},
	{"CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", 2},
}

// The NVTX event types read: marks (instants) and ranges.
var (
	nvtxMarks  = []enumValue{{"NvtxMark", 34}, {"NvtxtMark", 65}}
	nvtxRanges = []enumValue{{"NvtxPushPopRange", 59}, {"NvtxStartEndRange", 60}, {"NvtxtPushPopRange", 70}, {"NvtxtStartEndRange", 71}}
)

// enums are the numbers of one export's kinds.
type enums struct {
	copies     map[int64]timeline.CopyDir
	syncWaits  []int64
	nvtxMarks  []int64
	nvtxRanges []int64
}

// readEnums reads the numbers of the kinds the importer tells apart from the export's ENUM tables,
// by name, so that an export that numbered them otherwise is read alike.
func (f *fileReader) readEnums() error {
	names := map[string]map[string]int64{}
	for _, t := range []string{enumCopy, enumSync, enumNVTX} {
		if !f.d.has(t) || f.d.need(t, "id", "name") != nil {
			continue
		}
		ids := map[string]int64{}
		err := f.d.read(t, []string{"id", "name"}, map[string]bool{"name": true}, `SELECT "id", "name" FROM `+t, func(r metaRow) {
			id, _ := r.int(0)
			ids[r.text(1)] = id
		}, func() { clear(ids) })
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		names[t] = ids
	}
	lookup := func(table string, vs []enumValue) []int64 {
		out := make([]int64, len(vs))
		for i, v := range vs {
			out[i] = v.id
			if id, ok := names[table][v.name]; ok {
				out[i] = id
			}
		}
		return out
	}
	f.enums.copies = map[int64]timeline.CopyDir{}
	for dir, vs := range copyKinds {
		for _, id := range lookup(enumCopy, vs) {
			f.enums.copies[id] = dir
		}
	}
	f.enums.syncWaits = lookup(enumSync, syncWaits)
	f.enums.nvtxMarks = lookup(enumNVTX, nvtxMarks)
	f.enums.nvtxRanges = lookup(enumNVTX, nvtxRanges)
	return nil
}

// copyDir maps a copy kind to xfertop's direction.
func (f *fileReader) copyDir(kind int64) timeline.CopyDir {
	if dir, ok := f.enums.copies[kind]; ok {
		return dir
	}
	return timeline.CopyD2D
}

// isMark reports whether an NVTX event type is a mark (an instant).
func (f *fileReader) isMark(typ int64) bool {
	for _, id := range f.enums.nvtxMarks {
		if typ == id {
			return true
		}
	}
	return false
}

// oneOf writes an SQL test that expr is one of ids. Comparisons, not IN: SQLite looks a list of
// more than two values up in a temporary index, row by row.
func oneOf(expr string, ids []int64) string {
	terms := make([]string, len(ids))
	for i, id := range ids {
		terms[i] = fmt.Sprintf("%s = %d", expr, id)
	}
	return "(" + strings.Join(terms, " OR ") + ")"
}
