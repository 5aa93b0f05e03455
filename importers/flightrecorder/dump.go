package flightrecorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// FormatError is a dump that cannot be read: which file, where in it (a pickle's byte offset, or
// a JSON document's), and what is wrong.
type FormatError struct {
	File   string
	Offset int64 // −1: not at one place (a field of an entry, named in Reason)
	Reason string
}

func (e *FormatError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("%s (byte %d): %s", e.File, e.Offset, e.Reason)
}

// dump is one rank's Flight Recorder dump, as read.
type dump struct {
	version string
	rank    int // −1: the dump does not say (the file name does)
	pgs     map[string]pgConfig
	entries []entry
	notes   []string // what was wrong with single entries ("entry 3: …"): warned about, the dump kept
	dropped int      // notes past maxNotes, counted
}

// maxNotes bounds the notes one dump keeps: a dump whose every entry is off says so in a count.
const maxNotes = 20

// note records something wrong with one entry, within maxNotes.
func (d *dump) note(format string, args ...any) {
	if len(d.notes) >= maxNotes {
		d.dropped++
		return
	}
	d.notes = append(d.notes, fmt.Sprintf(format, args...))
}

// pgNames is the names of the dump's process groups, sorted: the order the import visits them in,
// so that its output does not depend on a map's.
func (d *dump) pgNames() []string { return slices.Sorted(maps.Keys(d.pgs)) }

// pgConfig is one process group a rank belongs to: its name, description and the job ranks in it.
type pgConfig struct {
	name, desc string
	ranks      []int    // set.ranks, shared with the other dumps of the group; nil: not known
	set        *rankSet // nil: not known
}

// entry is one record of the ring.
type entry struct {
	index              int // its place in the dump's entries list, for warnings
	record             int64
	pgName, pgDesc     string
	collSeq, p2pSeq    int64
	profiling          string
	created            int64   // Unix ns; 0: not known
	badCreated         string  // time_created_ns as written, when it is there but not a time
	started, completed int64   // Unix ns the watchdog saw it start / complete; 0: not seen
	dumped             int64   // Unix ns the dump itself saw it start or complete (not retired); 0: none
	durMs              float64 // −1: not known (timing off)
	inSizes, outSizes  [][]int64
	inTypes, outTypes  []string
	state              string
	isP2P              bool
}

// Bounds on what one dump may hold.
const (
	maxEntries = 1 << 20 // torch's ring is TORCH_NCCL_TRACE_BUFFER_SIZE entries, 2,000 by default
	maxPGs     = 1 << 16
	maxPGRanks = 1 << 20
	maxDims    = 64
)

// parseDump reads a dump's plain values (from pickle or JSON).
func parseDump(v any, sets *rankSets) (*dump, error) {
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the dump's top level: expected a dict of its fields (entries, pg_config, …), found %s", found(v))
	}
	d := &dump{rank: -1, pgs: map[string]pgConfig{}}
	if _, ok := top["entries"]; !ok {
		if _, ok := top["pg_config"]; !ok {
			return nil, fmt.Errorf("neither entries nor pg_config: not a Flight Recorder dump")
		}
	}
	d.version = str(top["version"])
	if r, ok := integer(top["rank"]); ok && r >= 0 && r < maxPGRanks {
		d.rank = int(r)
	}
	if err := d.parsePGs(top["pg_config"], sets); err != nil {
		return nil, err
	}
	if top["entries"] == nil {
		return d, nil
	}
	var n int
	var each func(func(i int, v any, err error) error) error
	switch list := top["entries"].(type) {
	case []any:
		n, each = len(list), func(f func(int, any, error) error) error {
			for i, x := range list {
				if err := f(i, x, nil); err != nil {
					return err
				}
			}
			return nil
		}
	case *pickleEntries: // a pickle's, turned into plain values one entry at a time
		n, each = list.list.n, list.each
	default:
		return nil, fmt.Errorf("field entries: expected a list of the ring's entries, found %s", found(top["entries"]))
	}
	if n > maxEntries {
		return nil, fmt.Errorf("%d entries, more than %d", n, maxEntries)
	}
	// One entry the rank's ring got wrong leaves the rest of its dump worth reading: the entry is
	// left out (or its size left unknown) with a note, and the rank keeps its dump.
	err := each(func(i int, x any, err error) error {
		if err != nil {
			return err // the pickle itself is wrong (nested too deep, …): not one entry
		}
		e, notes, err := parseEntry(x)
		for _, n := range notes {
			d.note("entry %d: %s", i, n)
		}
		if err != nil && len(d.notes) >= maxNotes {
			d.dropped++ // as note counts it, without formatting what it would not keep
			return nil
		}
		if err != nil {
			d.note("entry %d: %v: left out", i, err)
			return nil
		}
		e.index = i
		d.entries = append(d.entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n > 0 && len(d.entries) == 0 {
		// Not one entry read: a garbled dump, not one with a bad entry; its rank is one without a dump.
		return nil, fmt.Errorf("none of its %d entries could be read (%s)", n, d.notes[0])
	}
	return d, nil
}

func (d *dump) parsePGs(v any, sets *rankSets) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("field pg_config: expected a dict of process groups by name, found %s", found(v))
	}
	if len(m) > maxPGs {
		return fmt.Errorf("pg_config names %d process groups, more than %d", len(m), maxPGs)
	}
	for key, x := range m {
		pm, ok := x.(map[string]any)
		if !ok {
			return fmt.Errorf("field pg_config[%q]: expected a dict of the process group's fields (name, desc, ranks), found %s", key, found(x))
		}
		pg := pgConfig{name: key, desc: str(pm["desc"])}
		if n := str(pm["name"]); n != "" {
			pg.name = n
		}
		set, err := sets.intern(pm["ranks"])
		if err != nil {
			return fmt.Errorf("pg_config[%q].ranks: %w", key, err)
		}
		if set != nil {
			pg.ranks, pg.set = set.ranks, set
		}
		d.pgs[pg.name] = pg
	}
	return nil
}

// parseRanks reads a process group's ranks: torch writes them as a string, "[0, 1, 2]"; a list is
// taken too.
func parseRanks(v any) ([]int, error) {
	var parts []any
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
			parts = append(parts, f)
		}
	case []any:
		parts = x
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("expected a list of ranks, found %s", found(v))
	}
	if len(parts) > maxPGRanks {
		return nil, fmt.Errorf("%d ranks, more than %d", len(parts), maxPGRanks)
	}
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		r, ok := integer(p)
		if !ok || r < 0 || r >= maxPGRanks {
			return nil, fmt.Errorf("rank %v is not a rank", p)
		}
		out = append(out, int(r))
	}
	return out, nil
}

// parseEntry reads one entry of the ring. An error leaves the entry out; notes are what is off in
// an entry that is kept (a size or dtype not known, a creation time that is not one).
func parseEntry(v any) (entry, []string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if _, list := v.([]any); list {
			return entry{}, nil, errEntryList
		}
		return entry{}, nil, notEntryError{v}
	}
	e := entry{durMs: -1, profiling: str(m["profiling_name"]), state: str(m["state"])}
	if e.profiling == "" {
		return e, nil, errNoName
	}
	var notes []string
	var err error
	e.record, _ = integer(m["record_id"])
	ok1, err := seqID(m, "collective_seq_id", &e.collSeq)
	if err != nil {
		return e, nil, fmt.Errorf("%s: %w", e.profiling, err)
	}
	ok2, err := seqID(m, "p2p_seq_id", &e.p2pSeq)
	if err != nil {
		return e, nil, fmt.Errorf("%s: %w", e.profiling, err)
	}
	if !ok1 && !ok2 {
		return e, nil, fmt.Errorf("%s: neither collective_seq_id nor p2p_seq_id", e.profiling)
	}
	if e.collSeq < 0 || e.p2pSeq < 0 || e.record < 0 {
		return e, nil, fmt.Errorf("%s: a negative record or sequence id", e.profiling)
	}
	switch pg := m["process_group"].(type) {
	case []any:
		if len(pg) > 0 {
			e.pgName = str(pg[0])
		}
		if len(pg) > 1 {
			e.pgDesc = str(pg[1])
		}
	case string:
		e.pgName = pg
	}
	if e.pgName == "" {
		if id, ok := integer(m["pg_id"]); ok {
			e.pgName = strconv.FormatInt(id, 10)
		}
	}
	e.created = nsField(m["time_created_ns"])
	if raw, there := m["time_created_ns"]; there && raw != nil && e.created == 0 {
		e.badCreated = written(raw)
	}
	e.started = nsField(m["time_discovered_started_ns"])
	e.completed = nsField(m["time_discovered_completed_ns"])
	if r, ok := m["retired"].(bool); ok && !r {
		// torch's dump queries the CUDA events of an entry its watchdog has not retired and stamps
		// time_discovered_* with its own clock: when the dump was taken, not when the op started or
		// completed. Seen in real dumps (torch 2.11): a rank's pickle and JSON dumps, taken 0.7 ms
		// apart, differ in exactly these entries' times, all within microseconds of each other.
		// Only a retired entry's times are its watchdog's.
		e.dumped = max(e.started, e.completed)
		e.started, e.completed = 0, 0
	}
	if f, ok := number(m["duration_ms"]); ok && f >= 0 && f < 1e9 {
		e.durMs = f
	}
	e.isP2P, _ = m["is_p2p"].(bool)
	if e.inSizes, err = sizes(m["input_sizes"]); err != nil {
		notes = append(notes, fmt.Sprintf("%s: input_sizes: %v: its size is unknown", e.profiling, err))
		e.inSizes = nil
	}
	if e.outSizes, err = sizes(m["output_sizes"]); err != nil {
		notes = append(notes, fmt.Sprintf("%s: output_sizes: %v: its size is unknown", e.profiling, err))
		e.outSizes = nil
	}
	e.inTypes, e.outTypes = strList(m["input_dtypes"]), strList(m["output_dtypes"])
	for _, f := range []struct {
		name  string
		types []string
	}{{"input_dtypes", e.inTypes}, {"output_dtypes", e.outTypes}} {
		for _, t := range f.types {
			if t != "" && dtypeBytes(t) == 0 {
				notes = append(notes, fmt.Sprintf("%s: %s: %q is no dtype xfertop knows: its size is unknown", e.profiling, f.name, t))
				break
			}
		}
	}
	switch e.state {
	case "completed", "started", "scheduled":
	default:
		return e, nil, fmt.Errorf("%s: state %q is none of scheduled, started, completed", e.profiling, e.state)
	}
	return e, notes, nil
}

// errNoName is an entry without its profiling_name; notEntryError one that is not a dict. Neither
// is formatted until a note says it: a ring of a million bad entries is noted maxNotes times, and
// the rest only counted.
var (
	errNoName          = errors.New("no profiling_name")
	errEntryList error = notEntryError{[]any(nil)} // boxed once
)

type notEntryError struct{ v any }

func (e notEntryError) Error() string {
	return fmt.Sprintf("expected a dict of the entry's fields (profiling_name, state, …), found %s", found(e.v))
}

// seqID reads a sequence id into *to: false when the entry has none (absent or None), an error
// when it has one that is not an integer ("abc" is no sequence id, and 0 in its place would
// match the entry with another rank's first op).
func seqID(m map[string]any, key string, to *int64) (bool, error) {
	raw, there := m[key]
	if !there || raw == nil {
		return false, nil
	}
	n, ok := integer(raw)
	if !ok {
		return false, fmt.Errorf("%s %s is not a sequence id", key, written(raw))
	}
	*to = n
	return true, nil
}

// written is a plain value as a warning quotes it.
func written(v any) string {
	s, more := fmt.Sprint(v), ""
	if r := []rune(s); len(r) > 40 {
		s, more = string(r[:40]), "…"
	}
	if _, ok := v.(string); ok {
		s = strconv.Quote(s)
	}
	return s + more
}

// nsField reads a time in ns: None (pickle) and 0 (JSON) are not known.
func nsField(v any) int64 {
	n, ok := integer(v)
	if !ok || n <= 0 {
		return 0
	}
	return n
}

func sizes(v any) ([][]int64, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("expected a list of tensor shapes, found %s", found(v))
	}
	if len(list) > maxDims {
		return nil, fmt.Errorf("%d tensors, more than %d", len(list), maxDims)
	}
	out := make([][]int64, 0, len(list))
	for _, t := range list {
		dims, ok := t.([]any)
		if !ok || len(dims) > maxDims {
			return nil, fmt.Errorf("a tensor's sizes are not a list of at most %d dimensions", maxDims)
		}
		ds := make([]int64, 0, len(dims))
		for _, x := range dims {
			n, ok := integer(x)
			if !ok || n < 0 {
				return nil, fmt.Errorf("dimension %v is not a size", x)
			}
			ds = append(ds, n)
		}
		out = append(out, ds)
	}
	return out, nil
}

func strList(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, s := range x {
			out = append(out, str(s))
		}
		return out
	case string: // PyTorch's analyzer tests write one dtype as a string
		if x == "" {
			return nil
		}
		return []string{x}
	}
	return nil
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case json.Number:
		return x.String()
	}
	return ""
}

// integer reads an integer written as a number, or as a decimal string (as PyTorch's analyzer
// tests write sequence ids).
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x), true
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// found says what a value is, for an error that names what was expected instead: its kind in
// the words of both Python (which writes pickles) and JSON, and a scalar's value.
func found(v any) string {
	switch x := v.(type) {
	case nil:
		return "no value (None, JSON null)"
	case map[string]any:
		return "a dict (JSON object)"
	case []any:
		return "a list (JSON array)"
	case string:
		if len(x) > 40 {
			return fmt.Sprintf("the string %q… (%d bytes)", x[:40], len(x))
		}
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	}
	if f, ok := number(v); ok {
		return fmt.Sprintf("the number %v", f)
	}
	return "a " + typeName(v)
}

// typeName is the kind of a plain value, in one word.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case map[string]any:
		return "dict"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	}
	return "number"
}

// dtypeBytes is the size of one element of a torch dtype as c10::toString names it (Float,
// BFloat16, …); 0 for one not known.
func dtypeBytes(t string) int64 {
	switch strings.ToLower(strings.TrimPrefix(t, "torch.")) {
	case "float", "float32", "int", "int32", "uint32", "complexhalf":
		return 4
	case "double", "float64", "long", "int64", "uint64", "complexfloat":
		return 8
	case "half", "float16", "bfloat16", "short", "int16", "uint16":
		return 2
	case "byte", "uint8", "char", "int8", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz":
		return 1
	case "complexdouble":
		return 16
	}
	return 0
}

// tensorBytes is Σ elements × element size over tensors; 0 when a dtype is not known.
func tensorBytes(sizes [][]int64, types []string) int64 {
	var total int64
	for i, dims := range sizes {
		n := int64(1)
		for _, d := range dims {
			if d != 0 && n > math.MaxInt64/4/d {
				return 0
			}
			n *= d
		}
		t := ""
		if i < len(types) {
			t = types[i]
		} else if len(types) > 0 {
			t = types[len(types)-1]
		}
		sz := dtypeBytes(t)
		if sz == 0 || n > math.MaxInt64/32-total {
			return 0
		}
		total += n * sz
	}
	return total
}
