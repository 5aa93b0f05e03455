package kineto

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/xfertop/xfertop/importers/chrome"
)

// Default limits of Options: large enough for any real profiler trace, small enough that a hostile
// file fails with a clear error long before it exhausts memory.
const (
	DefaultMaxInputBytes int64 = 16 << 30 // JSON bytes per file, after decompression
	DefaultMaxTokenBytes int   = 64 << 20 // one string or number
)

// LimitError says that a trace exceeded one of Options' limits. It names the file; the command
// that set the limit adds how to raise it.
type LimitError struct {
	Name   string
	Offset int64  // where the refused token starts, or the input limit
	Limit  int64  // the limit in bytes
	What   string // "input" (JSON bytes after decompression), "string" or "number"
	// Gzipped: the input is gzip, and Offset counts its decompressed bytes.
	Gzipped bool
}

func (e *LimitError) Error() string {
	if e.What == "input" {
		return fmt.Sprintf("%s: more than %s of JSON (after decompression): that is the input limit", e.Name, sizeText(e.Limit))
	}
	return fmt.Sprintf("%s: the %s at %s is longer than %s: that is the limit for one token", e.Name, e.What, byteOffset(e.Offset, e.Gzipped), sizeText(e.Limit))
}

// byteOffset says where a byte lies: in a gzipped input, offsets count the decompressed bytes,
// which a person opening the file (zcat, an editor) sees, not the file's own.
func byteOffset(off int64, gzipped bool) string {
	if gzipped {
		return fmt.Sprintf("byte offset %d of the decompressed data", off)
	}
	return fmt.Sprintf("byte offset %d", off)
}

// sizeText writes a byte count in the largest binary unit that divides it.
func sizeText(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// limitReader refuses input past limit bytes with a *LimitError.
type limitReader struct {
	r        io.Reader
	n, limit int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n > l.limit {
		return 0, &LimitError{What: "input", Offset: l.limit, Limit: l.limit}
	}
	if room := l.limit - l.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	m, err := l.r.Read(p)
	l.n += int64(m)
	if l.n > l.limit {
		return m - int(l.n-l.limit), &LimitError{What: "input", Offset: l.limit, Limit: l.limit}
	}
	return m, err
}

// gzipErrors marks errors of the decompressor as such.
type gzipErrors struct{ r io.Reader }

func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF && !strings.HasPrefix(err.Error(), "gzip: ") { // compress/gzip's own say it already
		err = fmt.Errorf("gzip: %w", err)
	}
	return n, err
}

// gzipMembers reads a gzip file's members one after the other, as gzip -d does, and says what is
// wrong with bytes after the last that are no gzip member (a file with something appended), with
// how many there are and where they begin, where compress/gzip, looking for the next member's
// header, says "unexpected EOF" or "invalid header" about them.
type gzipMembers struct {
	gz    *gzip.Reader
	br    *bufio.Reader
	file  *countingReader // the compressed bytes read from the file
	ended bool            // the member being read has ended
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		if !g.ended {
			n, err := g.gz.Read(p)
			if err != io.EOF {
				return n, err
			}
			if g.ended = true; n > 0 {
				return n, nil
			}
		}
		head, _ := g.br.Peek(2)
		switch {
		case len(head) == 0:
			return 0, io.EOF
		case len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b: // the next member
			if err := g.gz.Reset(g.br); err != nil {
				return 0, err
			}
			g.gz.Multistream(false)
			g.ended = false
		default:
			at := g.file.n - int64(g.br.Buffered())
			const most = 1 << 20
			n, _ := io.Copy(io.Discard, io.LimitReader(g.br, most+1))
			count := fmt.Sprintf("%d bytes", n)
			if n > most {
				count = "more than 1 MiB"
			}
			return 0, fmt.Errorf("%s after the gzip data, at byte offset %d of the file: not gzip (something appended to the file?)", count, at)
		}
	}
}

// rawEvent is the part of a trace event xfertop reads. Its byte slices are reused from one event to
// the next.
type rawEvent struct {
	Index  int64 // position in traceEvents
	Ph     byte
	Cat    string
	Name   []byte
	Pid    []byte
	Tid    []byte
	Ts     int64 // ns
	Dur    int64 // ns
	TsF    float64
	DurF   float64 // µs as float64: what Holistic Trace Analysis computes with
	HasTs  bool
	HasDur bool
	BadTs  bool // present but not a time
	BadDur bool
	Args   rawArgs
}

// Presence bits of rawArgs fields.
const (
	hasDevice = 1 << iota
	hasStream
	hasCorrelation
	hasBytes
	hasInNelems
	hasOutNelems
	hasGroupSize
	hasXfertop
)

type rawArgs struct {
	Has         uint8
	Bad         uint8 // present but not an integer
	Device      int64
	Stream      int64
	Correlation int64
	Bytes       int64
	InNelems    int64
	OutNelems   int64
	GroupSize   int64
	// Coll is torch's "Collective name" (on an NCCL kernel: the call that launched it) as xfertop's
	// op, timeline.CollOp's value; 0 when absent or one xfertop has no op for.
	Coll    uint8
	DType   string
	Xfertop chrome.Args
}

// header is what a trace holds besides its events.
type header struct {
	Rank     int64
	HasRank  bool
	BadRank  bool
	Metadata map[string]string
	// Unclosed is a trace in the JSON Array Format whose array ends without its ']' (the format
	// allows it: a tracer that stopped while writing).
	Unclosed bool
	// Stopped is where the read stopped on an error: the byte offset the error names (-1 in a
	// gzipped file, whose offsets count its decompressed bytes), for the progress of an import
	// that keeps what it read.
	Stopped int64
}

// decoder streams one trace file's events to a callback.
type decoder struct {
	s       *scanner
	floats  bool // also read ts and dur as float64 (for --like-hta)
	ev      rawEvent
	h       header
	onEvent func(e *rawEvent, h *header) error
	// seenEvents is set once traceEvents is read: a JSON object without it is no trace.
	// slowOnly turns the fast path (fast.go) off, for the tests that compare the two.
	slowOnly     bool
	slowEvents   *int // counts the events read the general way, for a test
	shapedEvents *int // and those read by a shape learnt
	seenEvents   bool
	// The arrays of the event's name, pid and tid where they are copied to: the fast path
	// points them into the window instead, where the event lies whole while onEvent runs.
	name, pid, tid []byte
	shapes         shapes // the shapes of the file's events (shape.go)
	// Method values made once, so that reading an event allocates nothing.
	eventField, argField, xfrField func(key []byte)
}

// openStream wraps r: gunzipped if it starts with the gzip magic, and limited to max bytes.
func openStream(name string, r io.Reader, max int64) (src io.Reader, done func(), gzipped bool, err error) {
	file := &countingReader{r: r}
	br := bufio.NewReaderSize(file, readChunk)
	src, done = br, func() {}
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, true, fmt.Errorf("%s: gzip header at byte offset 0: %w", name, err)
		}
		gz.Multistream(false) // gzipMembers reads the next member, or names what follows the last
		src, done, gzipped = gzipErrors{&gzipMembers{gz: gz, br: br, file: file}}, func() { gz.Close() }, true
	}
	return &limitReader{r: src, limit: max}, done, gzipped, nil
}

// decode reads one trace from r, calling onEvent for each element of traceEvents. It reads the input
// once, front to back, and stops at the first byte that is not JSON or that a limit refuses, or at
// the first error onEvent returns (returned as it is).
func decode(name string, r io.Reader, opts Options, onEvent func(e *rawEvent, h *header) error) (*header, error) {
	opts = opts.withDefaults()
	src, done, gzipped, err := openStream(name, r, opts.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	defer done()
	d := &decoder{s: newScanner(name, src, opts.MaxTokenBytes), floats: opts.LikeHTA, onEvent: onEvent}
	d.s.gzipped = gzipped
	d.s.skipBOM()
	return d.run()
}

// run reads the trace.
func (d *decoder) run() (*header, error) {
	d.eventField, d.argField, d.xfrField = d.readEventField, d.readArgField, d.readXfrField
	s, name := d.s, d.s.name
	what := "object"
	if s.peek() == '[' { // the JSON Array Format: the events alone
		d.seenEvents, what = true, "array"
		d.h.Unclosed = !d.readEvents(true)
	} else {
		s.object(d.readTopField)
	}
	if s.err == nil {
		if s.peek(); s.more() {
			s.fail("data after the trace %s", what)
		}
	}
	if s.err != nil {
		d.h.Stopped = s.offset()
		if s.gzipped {
			d.h.Stopped = -1
		}
		return &d.h, s.err // the header as read so far, for Options.KeepRead
	}
	if !d.seenEvents {
		return nil, fmt.Errorf("%s: no traceEvents array: not a Chrome or PyTorch profiler trace", name)
	}
	return &d.h, nil
}

// readTopField reads one field of the trace object: the events, the rank of a PyTorch profiler
// trace, the metadata of an xfertop export; other fields are skipped.
func (d *decoder) readTopField(key []byte) {
	switch string(key) {
	case "traceEvents":
		d.seenEvents = true
		d.readEvents(false)
	case "distributedInfo":
		d.readDistributedInfo()
	case "xfertopMetadata":
		d.readMetadata()
	default:
		d.s.skip()
	}
}

// readEvents reads traceEvents, or the whole trace in the JSON Array Format (top), handing each
// event to onEvent as it is read. It reports whether the array was closed: only the top array may
// end with the input instead, after a whole event (and a comma, maybe), as Chrome allows.
func (d *decoder) readEvents(top bool) (closed bool) {
	s := d.s
	var i int64
	arr := s.array
	if top {
		arr = s.openArray
	}
	return arr(func() {
		if d.slowOnly || !d.fastEvent(i) {
			if d.slowEvents != nil {
				*d.slowEvents++
			}
			d.event(i)
		}
		if s.err == nil {
			if err := d.onEvent(&d.ev, &d.h); err != nil {
				s.err = err
			}
		}
		i++
	})
}

// readDistributedInfo reads the rank from distributedInfo.
func (d *decoder) readDistributedInfo() {
	s := d.s
	if s.peek() != '{' {
		s.skip()
		return
	}
	s.object(func(k []byte) {
		if string(k) != "rank" {
			s.skip()
			return
		}
		if v, ok := s.scalar(); ok {
			d.h.Rank, d.h.HasRank = parseInt(v)
			d.h.BadRank = !d.h.HasRank
		}
	})
}

// readMetadata reads xfertopMetadata, the description an xfertop export carries.
func (d *decoder) readMetadata() {
	s := d.s
	d.h.Metadata = map[string]string{}
	if s.peek() != '{' {
		s.fail("xfertopMetadata must be an object")
		return
	}
	s.object(func(k []byte) {
		key := string(k)
		v, _ := s.scalar()
		d.h.Metadata[key] = string(v)
	})
}

// event reads one trace event object into d.ev.
func (d *decoder) event(index int64) {
	s, e := d.s, &d.ev
	if s.peek() != '{' {
		s.fail("a trace event must be an object")
		return
	}
	e.reset(index)
	e.Name, e.Pid, e.Tid = d.name[:0], d.pid[:0], d.tid[:0]
	s.object(d.eventField)
	d.name, d.pid, d.tid = e.Name, e.Pid, e.Tid
}

// reset empties the event for the one at index, keeping its slices' arrays: it is
// *e = rawEvent{Index: index, Name: e.Name[:0], ...} (TestRawEventReset), field by field, since
// assigning the whole struct, pointers and all, cost a tenth of reading an event.
func (e *rawEvent) reset(index int64) {
	e.Index, e.Ph, e.Cat = index, 0, ""
	e.Name, e.Pid, e.Tid = e.Name[:0], e.Pid[:0], e.Tid[:0]
	e.Ts, e.Dur, e.TsF, e.DurF = 0, 0, 0, 0
	e.HasTs, e.HasDur, e.BadTs, e.BadDur = false, false, false, false
	a := &e.Args
	if a.Has&hasXfertop != 0 || a.DType != "" {
		*a = rawArgs{Xfertop: chrome.Args{L: a.Xfertop.L[:0]}}
		return
	}
	a.Has, a.Bad, a.Coll = 0, 0, 0
	a.Device, a.Stream, a.Correlation, a.Bytes, a.InNelems, a.OutNelems, a.GroupSize = 0, 0, 0, 0, 0, 0, 0
}

// readEventField reads one field of an event. The key is decided on before anything else is read: the
// window may move under it.
func (d *decoder) readEventField(key []byte) {
	s, e := d.s, &d.ev
	var field string
	switch string(key) {
	case "ph":
		field = "ph"
	case "cat":
		field = "cat"
	case "name":
		field = "name"
	case "pid":
		field = "pid"
	case "tid":
		field = "tid"
	case "ts":
		field = "ts"
	case "dur":
		field = "dur"
	case "args":
		field = "args"
	default:
		s.skip()
		return
	}
	switch field {
	case "ph", "cat", "name":
		if s.peek() != '"' {
			s.fail("event field %q must be a string", field)
			return
		}
	}
	switch field {
	case "ph":
		if v := s.str(); len(v) > 0 {
			e.Ph = v[0]
		}
	case "cat":
		e.Cat = category(s.str())
	case "name":
		e.Name = append(e.Name, s.str()...)
	case "pid":
		v, _ := s.scalar()
		e.Pid = append(e.Pid, v...)
	case "tid":
		v, _ := s.scalar()
		e.Tid = append(e.Tid, v...)
	case "ts":
		e.Ts, e.TsF, e.HasTs, e.BadTs = d.time()
	case "dur":
		e.Dur, e.DurF, e.HasDur, e.BadDur = d.time()
	case "args":
		if s.peek() != '{' {
			s.skip()
			return
		}
		s.object(d.argField)
	}
}

// time reads a number of microseconds: ns exactly, and the float64 HTA would compute with.
func (d *decoder) time() (ns int64, f float64, has, bad bool) {
	v, ok := d.s.scalar()
	if !ok {
		return 0, 0, false, d.s.err == nil
	}
	ns, ok = parseNs(v)
	if !ok {
		return 0, 0, false, true
	}
	if d.floats {
		f, _ = strconv.ParseFloat(string(v), 64)
	}
	return ns, f, true, false
}

// num reads an integer argument, noting in a.Has that it was there or in a.Bad that it was not a
// usable integer.
func (d *decoder) num(bit uint8, dst *int64) {
	a := &d.ev.Args
	v, ok := d.s.scalar()
	if !ok {
		if d.s.err == nil {
			a.Bad |= bit
		}
		return
	}
	if n, ok := parseInt(v); ok {
		*dst = n
		a.Has |= bit
	} else if d.s.err == nil {
		a.Bad |= bit
	}
}

// readArgField reads one of an event's args.
func (d *decoder) readArgField(key []byte) {
	s, a := d.s, &d.ev.Args
	switch string(key) {
	case "device":
		d.num(hasDevice, &a.Device)
	case "stream":
		d.num(hasStream, &a.Stream)
	case "correlation":
		d.num(hasCorrelation, &a.Correlation)
	case "bytes":
		d.num(hasBytes, &a.Bytes)
	case "In msg nelems":
		d.num(hasInNelems, &a.InNelems)
	case "Out msg nelems":
		d.num(hasOutNelems, &a.OutNelems)
	case "Group size":
		d.num(hasGroupSize, &a.GroupSize)
	case "dtype":
		if v, ok := s.scalar(); ok {
			a.DType = dtypeName(v)
		}
	case "Collective name":
		if v, ok := s.scalar(); ok {
			a.Coll = uint8(torchCollOp(v))
		}
	case "xfertop":
		if s.peek() != '{' {
			s.skip()
			return
		}
		s.object(d.xfrField)
		a.Has |= hasXfertop
	default:
		s.skip()
	}
}

// dtypeName returns the dtypes xfertop knows (the keys of dtypeSize) without allocating; others
// are not needed. A switch, not a walk over the map: every collective kernel has a dtype.
func dtypeName(b []byte) string {
	switch string(b) {
	case "Float":
		return "Float"
	case "float":
		return "float"
	case "Half":
		return "Half"
	case "BFloat16":
		return "BFloat16"
	case "Double":
		return "Double"
	case "Int":
		return "Int"
	case "Long":
		return "Long"
	case "Byte":
		return "Byte"
	case "Char":
		return "Char"
	case "Bool":
		return "Bool"
	case "Float8_e4m3fn":
		return "Float8_e4m3fn"
	}
	return ""
}

// readXfrField reads one of the fields chrome.Write stores in an exported slice.
func (d *decoder) readXfrField(key []byte) {
	s, x := d.s, &d.ev.Args.Xfertop
	if string(key) == "l" {
		v, _ := s.scalar()
		x.L = append(x.L[:0], v...)
		return
	}
	s.peek() // past the spaces, so start is where the value starts
	start := s.offset()
	v, _ := s.scalar()
	if s.err != nil {
		return
	}
	if err := x.Set(string(key), v); err != nil {
		s.badValue(start, err)
	}
}

// inRange reports whether v lies in [lo, hi].
func inRange(v, lo, hi int64) bool { return v >= lo && v <= hi }

// maxInt32 is the largest device or rank id taken from a trace.
const maxInt32 = math.MaxInt32
