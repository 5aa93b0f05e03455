package nsys

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/timeline"
)

// procKey names a process: a globalPid or globalTid with the thread bits dropped (Nsight's
// serialized ids hold the host's vm id, the pid and the tid, 24 bits each from the bottom).
type procKey int64

func proc(globalID int64) procKey { return procKey(globalID >> 24) }

// pid is the process id a serialized id holds.
func (p procKey) pid() uint32 { return uint32(p & 0xFFFFFF) }

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

// cacheEntries bounds each cache of names: StringIds ids to labels, kernels' names to what they
// tell. A cache that fills is emptied, so memory follows the number of distinct names in use, not
// the size of the export.
const cacheEntries = 1 << 16

// fileReader holds what one export's rows are resolved against.
type fileReader struct {
	m        *importer
	d        *db
	index    int
	host     uint16
	offset   int64            // adds to a capture time to make it Unix ns
	ids      map[int64]uint32 // StringIds id → label, bounded by cacheEntries
	cut      map[int64]bool   // StringIds ids of names cut to maxName, warned of once each
	lookup   *sqlite3.Stmt    // SELECT value FROM StringIds WHERE id = ?
	noLookup bool             // it could not be prepared: names are left out
	kernels  map[nameKey]kernelName
	gpus     map[devKey]int64 // (pid, CUDA device) → GPU id, from TARGET_INFO_CUDA_DEVICE
	maxLocal int64            // largest device id of the file, from the survey
	devBase  int32            // global id of the file's device 0
	enums    enums
	step     uint32
	devs     devCache // for the cursors' rows (the survey's goroutines have their own)
}

func newFileReader(m *importer, i int, d *db) *fileReader {
	return &fileReader{m: m, d: d, index: i, host: uint16(min(i, math.MaxUint16)), ids: map[int64]uint32{},
		kernels: map[nameKey]kernelName{}, gpus: map[devKey]int64{}, maxLocal: -1}
}

func (f *fileReader) close() {
	if f.lookup != nil {
		f.lookup.Close()
	}
}

// readClock reads when the capture started, in Unix ns and on the clock of its timestamps:
// TARGET_INFO_SESSION_START_TIME's utcEpochNs and systemClockNs. Exports of Nsight Systems 2024 have
// no systemClockNs; their ANALYSIS_DETAILS' startTime is the start on the timestamps' clock (in
// later exports the two are equal).
func (f *fileReader) readClock() error {
	if !f.d.has(tableStart) {
		f.m.anyClock = true
		return nil
	}
	var utc, clock int64
	var okUTC, okClock bool
	err := f.d.read(tableStart, []string{"utcEpochNs", "systemClockNs"}, nil, "", func(r metaRow) {
		utc, okUTC = r.int(0)
		clock, okClock = r.int(1)
	}, func() { okUTC, okClock = false, false })
	if err != nil {
		return fmt.Errorf("%s: %w", tableStart, err)
	}
	if !okClock && f.d.has(tableDetails) && f.d.tables[tableDetails]["startTime"] {
		// min("startTime"): with SQL, the query's one row
		err := f.d.read(tableDetails, []string{"startTime"}, nil, `SELECT min("startTime") FROM `+tableDetails, func(r metaRow) {
			if t, ok := r.int(0); ok && (!okClock || t < clock) {
				clock, okClock = t, true
			}
		}, func() { okClock = false })
		if err != nil {
			return fmt.Errorf("%s: %w", tableDetails, err)
		}
	}
	if okUTC && okClock && inTime(utc) && inTime(clock) {
		f.offset = utc - clock
		return nil
	}
	f.m.warn("%s: %s holds no usable start time: times are those of the capture's clock", f.d.name, tableStart)
	f.m.anyClock = true
	return nil
}

// str returns the label of a StringIds id.
func (f *fileReader) str(id int64) uint32 {
	if l, ok := f.ids[id]; ok {
		return l
	}
	l := f.m.label(f.text(id))
	if len(f.ids) >= cacheEntries {
		clear(f.ids)
	}
	f.ids[id] = l
	return l
}

// text looks up a StringIds id ("" when there is none): StringIds' id is its primary key, so this
// is one b-tree descent, and the strings are never all held.
func (f *fileReader) text(id int64) string {
	s := f.lookupText(id)
	if len(s) > maxName && !f.cut[id] {
		if f.cut == nil {
			f.cut = map[int64]bool{}
		}
		f.cut[id] = true // a few: each is a name over 1 MiB
		f.m.warn("%s: %s row %d: a name of %d bytes, longer than the %s limit of one name: cut to its first %s",
			f.d.name, tableStrings, id, len(s), sizeText(maxName), sizeText(maxName))
	}
	return cutName(s)
}

// maxName bounds one name (a kernel's, a range's): a longer one is cut there with a warning, so
// that one damaged or foreign string cannot take the memory of a copy per use, or pass the size
// of a recording's chunk when the import is written as one (replay, convert).
const maxName = 1 << 20

// cutName cuts a name to maxName bytes, back to the start of a UTF-8 character.
func cutName(s string) string {
	if len(s) <= maxName {
		return s
	}
	n := maxName
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// sizeText says a size in bytes as a person would: 1 MiB.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// lookupText looks up a StringIds id, whole.
func (f *fileReader) lookupText(id int64) string {
	if s, ok := f.d.stringPages(id); ok {
		return s
	}
	if f.lookup == nil {
		if f.noLookup {
			return ""
		}
		conn, err := f.d.sql()
		var s *sqlite3.Stmt
		if err == nil {
			s, _, err = conn.Prepare("SELECT value FROM " + tableStrings + " WHERE id = ?")
		}
		if err != nil {
			f.m.warn("%s: %s: %v: names left out", f.d.name, tableStrings, err)
			f.noLookup = true
			return ""
		}
		f.lookup = s
	}
	s := f.lookup
	defer s.Reset()
	if s.BindInt64(1, id) != nil || !s.Step() {
		return ""
	}
	return s.ColumnText(0)
}

// readDevices maps each process's CUDA device ids to GPUs: processes that see their GPUs through
// CUDA_VISIBLE_DEVICES all call theirs device 0.
func (f *fileReader) readDevices() error {
	if !f.d.has(tableCUDADev) || f.d.need(tableCUDADev, "cudaId", "pid") != nil {
		return nil
	}
	return f.d.read(tableCUDADev, []string{"pid", "cudaId", "gpuId"}, nil, "", func(r metaRow) {
		pid, _ := r.int(0)
		cuda, _ := r.int(1)
		if gpu, ok := r.int(2); ok && gpu >= 0 && gpu <= math.MaxInt16 {
			f.gpus[devKey{uint32(pid), cuda}] = gpu
		}
	}, func() { clear(f.gpus) })
}

// readGPUNames keeps each GPU's name for the report's description.
func (f *fileReader) readGPUNames() error {
	if !f.d.has(tableGPU) || f.d.need(tableGPU, "id", "name") != nil {
		return nil
	}
	kept := map[string]string{}
	err := f.d.read(tableGPU, []string{"id", "name"}, map[string]bool{"name": true}, "", func(r metaRow) {
		id, _ := r.int(0)
		if name := r.text(1); name != "" && id >= 0 && id <= f.maxLocal {
			kept["gpu."+strconv.FormatInt(id+int64(f.devBase), 10)] = name
		}
	}, func() { clear(kept) })
	maps.Copy(f.m.extra, kept)
	return err
}

// localOf is the file's id of a process's CUDA device: its GPU, or the CUDA id when the export
// does not map it.
func (f *fileReader) localOf(p procKey, cuda int64) int64 {
	if len(f.gpus) > 0 {
		if g, ok := f.gpus[devKey{p.pid(), cuda}]; ok {
			return g
		}
	}
	return cuda
}

// device resolves the device of a GPU row, warning when it is none.
func (f *fileReader) device(table string, rowid int64, p procKey, cuda int64) (int32, bool) {
	local := f.devs.localOf(f, p, cuda)
	if local < 0 || local > math.MaxInt16 {
		f.m.warn("%s: %s row %d: deviceId %d is not a device id: row left out", f.d.name, table, rowid, cuda)
		return 0, false
	}
	return int32(local), true
}

func inTime(t int64) bool { return t > -maxTime && t < maxTime }

// span checks a row's interval: whether it is kept, and its end (an end before the start is taken
// as the start).
func span(start, end int64) (int64, bool) {
	if !inTime(start) || !inTime(end) {
		return 0, false
	}
	end = max(end, start)
	return end, end-start <= maxSpan
}

// times checks a row's interval and puts it on the Unix clock.
func (f *fileReader) times(table string, rowid, start, end int64) (int64, int64, bool) {
	switch {
	case start == notATime || end == notATime:
		f.m.warn("%s: %s row %d: start or end is not an integer (text or a real number in an integer column): row left out", f.d.name, table, rowid)
		return 0, 0, false
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

// bytes checks a row's byte count: 0 (unknown) with a warning when out of range.
func (f *fileReader) bytes(table string, rowid, b int64) int64 {
	if b < 0 || b > maxEventBytes {
		f.m.warn("%s: %s row %d: bytes %d is out of range (0 to 1 TiB): taken as unknown", f.d.name, table, rowid, b)
		return 0
	}
	return b
}

func wrap(table string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	return nil
}
