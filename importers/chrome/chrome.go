package chrome

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/xfertop/xfertop/timeline"
)

// Args carries an event's fields in an exported slice's args, so an export imports back exactly.
type Args struct {
	K      uint8
	S, E   int64
	Q, B   int64
	O      uint64
	D, P   int32
	St, G  uint32
	C, Ba  uint32
	L      []byte
	A      uint32
	H, R   uint16
	Sb, Su uint8
	Pr     int8
}

// Set parses v, the text of field k of an exported slice's "xfertop" args, and stores it. The
// field's type is the Event field it carries: the op id is unsigned 64-bit (sequence ops set the top
// bit), the times and sizes signed 64-bit, ids 32-bit and so on. A value that is not an integer, or
// lies outside its field's type, is a *FieldError; an unknown key is passed over (a newer writer's).
func (x *Args) Set(k string, v []byte) error {
	f, ok := xfrFields[k]
	if !ok {
		return nil
	}
	var n int64
	if f.signed {
		i, err := strconv.ParseInt(string(v), 10, f.bits)
		if err != nil {
			return fieldError(k, v, f, err)
		}
		n = i
	} else {
		u, err := strconv.ParseUint(string(v), 10, f.bits)
		if err != nil {
			return fieldError(k, v, f, err)
		}
		if k == "o" {
			x.O = u
			return nil
		}
		n = int64(u)
	}
	f.set(x, n)
	return nil
}

// xfrField is the type of one field of an exported slice's "xfertop" args and where it goes.
type xfrField struct {
	signed bool
	bits   int
	set    func(x *Args, n int64)
}

// xfrFields are the fields appendXfr writes (and "l", the label, which is a string and read apart).
var xfrFields = map[string]xfrField{
	"k":  {false, 8, func(x *Args, n int64) { x.K = uint8(n) }},
	"s":  {true, 64, func(x *Args, n int64) { x.S = n }},
	"e":  {true, 64, func(x *Args, n int64) { x.E = n }},
	"q":  {true, 64, func(x *Args, n int64) { x.Q = n }},
	"b":  {true, 64, func(x *Args, n int64) { x.B = n }},
	"o":  {false, 64, nil}, // set in Set: it needs all 64 bits
	"d":  {true, 32, func(x *Args, n int64) { x.D = int32(n) }},
	"p":  {true, 32, func(x *Args, n int64) { x.P = int32(n) }},
	"st": {false, 32, func(x *Args, n int64) { x.St = uint32(n) }},
	"g":  {false, 32, func(x *Args, n int64) { x.G = uint32(n) }},
	"c":  {false, 32, func(x *Args, n int64) { x.C = uint32(n) }},
	"ba": {false, 32, func(x *Args, n int64) { x.Ba = uint32(n) }},
	"a":  {false, 32, func(x *Args, n int64) { x.A = uint32(n) }},
	"h":  {false, 16, func(x *Args, n int64) { x.H = uint16(n) }},
	"r":  {false, 16, func(x *Args, n int64) { x.R = uint16(n) }},
	"sb": {false, 8, func(x *Args, n int64) { x.Sb = uint8(n) }},
	"su": {false, 8, func(x *Args, n int64) { x.Su = uint8(n) }},
	"pr": {true, 8, func(x *Args, n int64) { x.Pr = int8(n) }},
}

// FieldError is a field of an exported slice's "xfertop" args whose value is not an integer of the
// field's type: the file may be valid JSON, but it was not written by Write (or was edited).
type FieldError struct {
	Key, Value string
	Range      bool   // an integer, out of the field's range
	Type       string // the field's type, as "uint64"
}

func (e *FieldError) Error() string {
	if e.Range {
		return fmt.Sprintf("args.xfertop.%s: %s is out of range for the field (%s)", e.Key, e.Value, e.Type)
	}
	if e.Value == "" {
		return fmt.Sprintf("args.xfertop.%s is not an integer (the field is %s)", e.Key, e.Type)
	}
	return fmt.Sprintf("args.xfertop.%s: %q is not an integer (the field is %s)", e.Key, e.Value, e.Type)
}

func fieldError(k string, v []byte, f xfrField, err error) *FieldError {
	typ := fmt.Sprintf("int%d", f.bits)
	if !f.signed {
		typ = "u" + typ
	}
	return &FieldError{Key: k, Value: string(v), Type: typ, Range: errors.Is(err, strconv.ErrRange)}
}

// sessionPid is the Chrome process that holds events tied to no device (steps, marks, alerts).
const sessionPid = 1 << 20

func tid(dev int32, stream uint32) int64 {
	if dev < 0 {
		return int64(stream)
	}
	return int64(dev)<<20 | int64(stream)
}

func pid(e *timeline.Event) int64 {
	if e.Device < 0 {
		return sessionPid
	}
	return int64(e.Host)
}

// Write writes events as Chrome trace JSON: one process per host (and one for the session),
// one thread per device stream, copies, transfers and kernels as slices (async slices where ops
// overlap on one stream), send→recv flow arrows, and a bandwidth counter per device. meta is stored
// under "xfertopMetadata" so the file imports back with its description.
func Write(w io.Writer, events []timeline.Event, strs *timeline.Strings, meta map[string]string) error {
	cw := &writer{bw: bufio.NewWriterSize(w, 1<<20), b: make([]byte, 0, 4096), first: true, strs: strs, lastEnd: map[[2]int64]int64{}}
	err := cw.header(meta)
	if err == nil {
		err = cw.names(events)
	}
	if err == nil {
		err = cw.slices(events)
	}
	if err == nil {
		err = writeCounters(events, &cw.b, cw.emit)
	}
	if err == nil {
		_, err = cw.bw.WriteString("]}\n")
	}
	if err == nil {
		err = cw.bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// writer writes one trace: the elements of traceEvents, one at a time, through one buffer.
type writer struct {
	bw      *bufio.Writer
	b       []byte // the element being written
	first   bool   // no element written yet
	strs    *timeline.Strings
	lastEnd map[[2]int64]int64 // per process and thread, the end of its last synchronous slice
	asyncID int                // the id of the last async slice
}

// emit writes the element in b to traceEvents and empties b.
func (w *writer) emit() error {
	if !w.first {
		if _, err := w.bw.WriteString(",\n"); err != nil {
			return err
		}
	}
	w.first = false
	_, err := w.bw.Write(w.b)
	w.b = w.b[:0]
	return err
}

// header writes the object's opening: the time unit, meta in sorted key order, and the opening of
// traceEvents.
func (w *writer) header(meta map[string]string) error {
	b := append(w.b, `{"displayTimeUnit":"ns","xfertopMetadata":{`...)
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, meta[k])
	}
	b = append(b, `},"traceEvents":[`...)
	_, err := w.bw.Write(b)
	w.b = b[:0]
	return err
}

// names writes the metadata events that name the processes (hosts, and the session) and the
// threads (device streams), in order of their ids.
func (w *writer) names(events []timeline.Event) error {
	hosts := map[int64]bool{}
	threads := map[[2]int64]string{}
	for i := range events {
		e := &events[i]
		p := pid(e)
		hosts[p] = true
		if k := [2]int64{p, tid(e.Device, e.Stream)}; threads[k] == "" {
			threads[k] = threadName(e)
		}
	}
	hostIDs := make([]int64, 0, len(hosts))
	for h := range hosts {
		hostIDs = append(hostIDs, h)
	}
	sort.Slice(hostIDs, func(i, j int) bool { return hostIDs[i] < hostIDs[j] })
	for _, h := range hostIDs {
		name := fmt.Sprintf("host %d", h)
		switch h {
		case sessionPid:
			name = "session"
		case int64(timeline.NoHost):
			name = "host unknown" // ranks no source placed (a partial join), not a host 65535
		}
		if err := w.name("process_name", h, 0, name); err != nil {
			return err
		}
	}
	tkeys := make([][2]int64, 0, len(threads))
	for k := range threads {
		tkeys = append(tkeys, k)
	}
	sort.Slice(tkeys, func(i, j int) bool {
		if tkeys[i][0] != tkeys[j][0] {
			return tkeys[i][0] < tkeys[j][0]
		}
		return tkeys[i][1] < tkeys[j][1]
	})
	for _, k := range tkeys {
		if err := w.name("thread_name", k[0], k[1], threads[k]); err != nil {
			return err
		}
	}
	return nil
}

// threadName names the thread of e's device stream.
func threadName(e *timeline.Event) string {
	switch {
	case e.Device < 0:
		return "session"
	case e.Stream == 0:
		return fmt.Sprintf("device %d host thread", e.Device)
	}
	return fmt.Sprintf("device %d stream %d", e.Device, e.Stream)
}

// name writes one metadata event (process_name or thread_name).
func (w *writer) name(what string, pid, tid int64, name string) error {
	w.b = fmt.Appendf(w.b, `{"ph":"M","name":"%s","pid":%d,"tid":%d,"args":{"name":`, what, pid, tid)
	w.b = appendJSONString(w.b, name)
	w.b = append(w.b, "}}"...)
	return w.emit()
}

// slices writes every event in order of start: a slice, the end of an async slice, and the flow
// arrow of a send or a receive.
func (w *writer) slices(events []timeline.Event) error {
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return events[order[i]].Start < events[order[j]].Start })
	for _, i := range order {
		e := &events[i]
		name := e.Title(w.strs)
		ph := w.phase(e)
		if err := w.slice(e, name, ph); err != nil {
			return err
		}
		if ph == "b" {
			if err := w.asyncEnd(e, name); err != nil {
				return err
			}
		}
		if e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv {
			if err := w.flow(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// phase chooses how e is drawn: an instant ("i") if it takes no time, a synchronous slice ("X")
// where it nests on its stream, else an async slice ("b", closed by asyncEnd).
func (w *writer) phase(e *timeline.Event) string {
	k := [2]int64{pid(e), tid(e.Device, e.Stream)}
	if e.End == e.Start {
		return "i"
	}
	if end, ok := w.lastEnd[k]; ok && e.Start < end && e.End > end {
		return "b"
	}
	w.lastEnd[k] = max(w.lastEnd[k], e.End)
	return "X"
}

// slice writes e's slice in phase ph, with its bytes, its rate if it moves data, and every field
// of the event under "xfertop".
func (w *writer) slice(e *timeline.Event, name, ph string) error {
	b := append(w.b, `{"ph":"`...)
	b = append(b, ph...)
	b = append(b, `","name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"cat":"`...)
	b = append(b, e.Kind.String()...)
	b = fmt.Appendf(b, `","pid":%d,"tid":%d,"ts":`, pid(e), tid(e.Device, e.Stream))
	b = appendMicros(b, e.Start)
	switch ph {
	case "X":
		b = append(b, `,"dur":`...)
		b = appendMicros(b, e.End-e.Start)
	case "i":
		b = append(b, `,"s":"t"`...)
	case "b":
		w.asyncID++
		b = fmt.Appendf(b, `,"id":%d`, w.asyncID)
	}
	b = append(b, `,"args":{`...)
	if e.Bytes != 0 {
		b = fmt.Appendf(b, `"bytes":%d,`, e.Bytes)
		if d := e.End - e.Start; d > 0 && e.Kind.IsComm() && !e.Emulated() { // an emulated op's time is no rate (--fit)
			b = append(b, `"GB/s":`...)
			b = strconv.AppendFloat(b, float64(e.Bytes)/float64(d), 'f', 3, 64)
			b = append(b, ',')
		}
	}
	b = appendXfr(b, e, w.strs)
	w.b = append(b, "}}"...)
	return w.emit()
}

// asyncEnd closes the async slice slice opened last.
func (w *writer) asyncEnd(e *timeline.Event, name string) error {
	w.b = fmt.Appendf(w.b, `{"ph":"e","name":`)
	w.b = appendJSONString(w.b, name)
	w.b = fmt.Appendf(w.b, `,"cat":"%s","pid":%d,"tid":%d,"id":%d,"ts":`, e.Kind, pid(e), tid(e.Device, e.Stream), w.asyncID)
	w.b = appendMicros(w.b, e.End)
	w.b = append(w.b, '}')
	return w.emit()
}

// flow writes one end of the arrow from a send to its receive, both bound by the transfer's op id.
func (w *writer) flow(e *timeline.Event) error {
	fph := "s"
	if e.Kind == timeline.KindRecv {
		fph = "f"
	}
	w.b = fmt.Appendf(w.b, `{"ph":"%s","name":"transfer","cat":"flow","id":%d,"pid":%d,"tid":%d,"bp":"e","ts":`, fph, e.Op, pid(e), tid(e.Device, e.Stream))
	w.b = appendMicros(w.b, e.Start)
	w.b = append(w.b, '}')
	return w.emit()
}

// writeCounters emits, per device, a "GB/s" counter of the bytes moving at each moment.
func writeCounters(events []timeline.Event, b *[]byte, emit func() error) error {
	type change struct {
		t    int64
		rate float64
	}
	per := map[int32][]change{}
	hostOf := map[int32]uint16{}
	for i := range events {
		e := &events[i]
		// An emulated op (--fit on shared GPUs) moved its bytes on none of the topology's links, if
		// at all: a 1-rank all-reduce of 1 GiB "in" 6.8 µs would read 158,000 GB/s.
		if !e.Kind.IsComm() || e.Device < 0 || e.End <= e.Start || e.Bytes <= 0 || e.Kind == timeline.KindRecv || e.Emulated() {
			continue
		}
		r := float64(e.Bytes) / float64(e.End-e.Start)
		per[e.Device] = append(per[e.Device], change{e.Start, r}, change{e.End, -r})
		hostOf[e.Device] = e.Host
	}
	devs := make([]int32, 0, len(per))
	for d := range per {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i] < devs[j] })
	for _, d := range devs {
		cs := per[d]
		sort.Slice(cs, func(i, j int) bool { return cs[i].t < cs[j].t })
		rate := 0.0
		for i, c := range cs {
			rate += c.rate
			if i+1 < len(cs) && cs[i+1].t == c.t {
				continue
			}
			if rate < 1e-9 {
				rate = 0
			}
			*b = fmt.Appendf(*b, `{"ph":"C","name":"device %d GB/s","pid":%d,"ts":`, d, hostOf[d])
			*b = appendMicros(*b, c.t)
			*b = append(*b, `,"args":{"GB/s":`...)
			*b = strconv.AppendFloat(*b, rate, 'f', 3, 64)
			*b = append(*b, "}}"...)
			if err := emit(); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendXfr(b []byte, e *timeline.Event, strs *timeline.Strings) []byte {
	b = fmt.Appendf(b, `"xfertop":{"k":%d,"s":%d,"e":%d,"q":%d,"b":%d,"o":%d,"d":%d,"p":%d,"st":%d,"g":%d,"c":%d,"ba":%d,"l":`,
		e.Kind, e.Start, e.End, e.Queued, e.Bytes, e.Op, e.Device, e.Peer, e.Stream, e.Group, e.Comm, e.Barrier)
	b = appendJSONString(b, strs.Lookup(e.Label))
	return fmt.Appendf(b, `,"a":%d,"h":%d,"r":%d,"sb":%d,"su":%d,"pr":%d}`, e.Aux, e.Host, e.Ranks, e.Sub, e.Status, e.Priority)
}

// appendMicros writes ns as microseconds with nanosecond precision (Chrome's ts unit).
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	if r := ns % 1000; r != 0 {
		b = append(b, '.', byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10))
	}
	return b
}

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = fmt.Appendf(b, `\u%04x`, c)
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
	}
	return append(b, '"')
}

// Event rebuilds an event written by Write from its args.
func (x *Args) Event(label uint32) timeline.Event {
	return timeline.Event{Kind: timeline.Kind(x.K), Start: x.S, End: x.E, Queued: x.Q, Bytes: x.B, Op: x.O, Device: x.D, Peer: x.P,
		Stream: x.St, Group: x.G, Comm: x.C, Barrier: x.Ba, Label: label, Aux: x.A, Host: x.H, Ranks: x.R,
		Sub: x.Sb, Status: x.Su, Priority: x.Pr}
}
