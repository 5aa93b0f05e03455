package receiver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/timeline"
)

// Span is one decoded xfertop span: the event it carries, its place in its session's stream, and
// the resource it came with.
type Span struct {
	// Event's Start and End are wall-clock ns (Unix) until the merger places them on its time axis;
	// Queued is ns since the sender's epoch; Label indexes Decoded.Strings; Host is the resource's.
	Event timeline.Event
	Seq   int64 // xfertop.seq; -1 when the sender did not number its events (detail spans)
	Res   int32 // index in Decoded.Resources
}

// Resource is what a ResourceSpans says about its sender.
type Resource struct {
	Session  string      // xfertop.session: one exporting process
	HostName string      // host.name
	Host     int         // xfertop.host; -1 when absent
	Detail   string      // xfertop.detail
	Meta     [][2]string // xfertop.meta.* pairs (recordings.MetaPairs)
	Spans    int         // xfertop spans in it
	MaxEnd   int64       // the latest span end, wall-clock ns (for the clock offset estimate)
}

// senders names the hosts of the request's resources, for a log line.
func (d *Decoded) senders() string {
	var names []string
	for _, r := range d.Resources {
		n := r.HostName
		if n == "" {
			n = "a host without host.name"
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "a sender without a resource"
	}
	return strings.Join(names, ", ")
}

// Decoded is one OTLP trace request turned into events. Its slices are reused by the next Decode.
type Decoded struct {
	Resources []Resource
	Spans     []Span
	Strings   []string // labels; index 0 is ""
	Foreign   int64    // spans that are not xfertop's (no xfertop.kind): counted, not shown
	Tails     int64    // roots of the events after a run's last step: no event of their own
	strIdx    map[string]uint32
	lastLabel uint32 // the label interned last: spans in a row mostly share theirs
	keys      keyCache
}

// reset empties d for the next request, keeping its memory.
func (d *Decoded) reset() {
	clear(d.Resources)
	d.Resources, d.Spans = d.Resources[:0], d.Spans[:0]
	if d.strIdx == nil || len(d.strIdx) > 4096 {
		d.strIdx = map[string]uint32{}
	} else {
		clear(d.strIdx)
	}
	d.Strings = append(d.Strings[:0], "")
	d.Foreign, d.Tails, d.lastLabel = 0, 0, 0
	d.keys = keyCache{}
}

func (d *Decoded) label(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	if d.Strings[d.lastLabel] == string(b) {
		return d.lastLabel
	}
	if id, ok := d.strIdx[string(b)]; ok {
		d.lastLabel = id
		return id
	}
	s := string(b)
	id := uint32(len(d.Strings))
	d.Strings = append(d.Strings, s)
	d.strIdx[s] = id
	d.lastLabel = id
	return id
}

// DecodeError says where a request is malformed.
type DecodeError struct {
	Offset int    // byte offset in the request where the bad field starts
	What   string // the message being read
	Err    error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("malformed OTLP request at byte %d (%s): %v", e.Offset, e.What, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ErrTooManySpans is returned when a request holds more spans than the limit allows.
var ErrTooManySpans = errors.New("too many spans in one request")

// kindsByLen are the kinds by the length of their name: a span's kind is found by comparing it
// with the few names of its length (a map lookup of every span's kind was a tenth of Decode).
var kindsByLen = func() [][]kindName {
	var byLen [][]kindName
	for k := timeline.Kind(1); k.String() != fmt.Sprintf("kind(%d)", uint8(k)); k++ {
		n := len(k.String())
		for len(byLen) <= n {
			byLen = append(byLen, nil)
		}
		byLen[n] = append(byLen[n], kindName{k.String(), k})
	}
	return byLen
}()

type kindName struct {
	name string
	kind timeline.Kind
}

// kindOf is the kind named name.
func kindOf(name []byte) (timeline.Kind, bool) {
	if len(name) >= len(kindsByLen) {
		return 0, false
	}
	for _, c := range kindsByLen[len(name)] {
		if c.name == string(name) {
			return c.kind, true
		}
	}
	return 0, false
}

var copyByName = map[string]timeline.CopyDir{"h2d": timeline.CopyH2D, "d2h": timeline.CopyD2H, "d2d": timeline.CopyD2D,
	"p2p": timeline.CopyP2P, "memset": timeline.CopySet}

// Decode reads an ExportTraceServiceRequest (protobuf) into d, keeping only xfertop's spans.
// maxSpans bounds the spans it holds (0: no bound); more is ErrTooManySpans. It reads the wire
// format directly (google.golang.org/protobuf/encoding/protowire), allocating only for labels and
// resources: the generated types would allocate every attribute of every span.
func Decode(buf []byte, d *Decoded, maxSpans int) error {
	d.reset()
	r := reader{buf: buf}
	for !r.done() {
		num, typ, body, err := r.field("ExportTraceServiceRequest")
		if err != nil {
			return err
		}
		if num == 1 && typ == protowire.BytesType {
			if err := d.resourceSpans(body, maxSpans); err != nil {
				return err
			}
		}
	}
	return nil
}

// reader walks one message's fields, keeping absolute offsets for errors.
type reader struct {
	buf  []byte
	pos  int
	base int // offset of buf[0] in the request
}

func (r *reader) done() bool { return r.pos >= len(r.buf) }

// field reads the next field: for length-delimited ones body is a reader over its bytes; for
// varint and fixed ones body.v holds the value.
func (r *reader) field(what string) (protowire.Number, protowire.Type, field, error) {
	start := r.pos
	num, typ, n := protowire.ConsumeTag(r.buf[r.pos:])
	if n < 0 {
		return 0, 0, field{}, &DecodeError{Offset: r.base + start, What: what, Err: protowire.ParseError(n)}
	}
	r.pos += n
	var f field
	switch typ {
	case protowire.VarintType:
		v, m := protowire.ConsumeVarint(r.buf[r.pos:])
		n, f.v = m, v
	case protowire.Fixed64Type:
		v, m := protowire.ConsumeFixed64(r.buf[r.pos:])
		n, f.v = m, v
	case protowire.Fixed32Type:
		v, m := protowire.ConsumeFixed32(r.buf[r.pos:])
		n, f.v = m, uint64(v)
	case protowire.BytesType:
		b, m := protowire.ConsumeBytes(r.buf[r.pos:])
		n, f.r = m, reader{buf: b, base: r.base + r.pos + m - len(b)}
	default:
		n = protowire.ConsumeFieldValue(num, typ, r.buf[r.pos:])
	}
	if n < 0 {
		return 0, 0, field{}, &DecodeError{Offset: r.base + start, What: what, Err: protowire.ParseError(n)}
	}
	r.pos += n
	return num, typ, f, nil
}

type field struct {
	v uint64
	r reader
}

func (d *Decoded) resourceSpans(body field, maxSpans int) error {
	ri := int32(len(d.Resources))
	d.Resources = append(d.Resources, Resource{Host: -1})
	first := len(d.Spans)
	r := body.r
	for !r.done() {
		num, typ, f, err := r.field("ResourceSpans")
		if err != nil {
			return err
		}
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case 1:
			if err := d.resource(f.r, &d.Resources[ri]); err != nil {
				return err
			}
		case 2:
			if err := d.scopeSpans(f.r, ri, maxSpans); err != nil {
				return err
			}
		}
	}
	res := &d.Resources[ri]
	for i := first; i < len(d.Spans); i++ {
		if res.Host >= 0 {
			d.Spans[i].Event.Host = uint16(res.Host)
		}
		res.MaxEnd = max(res.MaxEnd, d.Spans[i].Event.End)
	}
	res.Spans = len(d.Spans) - first
	return nil
}

func (d *Decoded) resource(r reader, res *Resource) error {
	for !r.done() {
		num, typ, f, err := r.field("Resource")
		if err != nil {
			return err
		}
		if num != 1 || typ != protowire.BytesType {
			continue
		}
		key, val, err := keyValue(f.r)
		if err != nil {
			return err
		}
		switch k := string(key); {
		case k == "host.name":
			res.HostName = string(val.s)
		case k == string(otel.ResSession):
			res.Session = string(val.s)
		case k == string(otel.ResDetail):
			res.Detail = string(val.s)
		case k == string(otel.ResHost):
			if val.isInt && val.i >= 0 && val.i <= math.MaxUint16 {
				res.Host = int(val.i)
			}
		case len(k) > len(otel.ResMetaPrefix) && k[:len(otel.ResMetaPrefix)] == otel.ResMetaPrefix:
			res.Meta = append(res.Meta, [2]string{k[len(otel.ResMetaPrefix):], string(val.s)})
		}
	}
	return nil
}

// tagScopeSpan is ScopeSpans' spans field (2, bytes).
const tagScopeSpan = 2<<3 | byte(protowire.BytesType)

func (d *Decoded) scopeSpans(r reader, ri int32, maxSpans int) error {
	for !r.done() {
		if r.buf[r.pos] == tagScopeSpan {
			// A span, read in place; one cut short goes through reader.field, which says where.
			if n, m := uvarint(r.buf[r.pos+1:]); m > 0 && n <= uint64(len(r.buf)-r.pos-1-m) {
				if maxSpans > 0 && len(d.Spans)+int(d.Foreign+d.Tails) >= maxSpans {
					return fmt.Errorf("%w (more than %d)", ErrTooManySpans, maxSpans)
				}
				at := r.pos + 1 + m
				r.pos = at + int(n)
				if err := d.span(reader{buf: r.buf[at:r.pos], base: r.base + at}, ri); err != nil {
					return err
				}
				continue
			}
		}
		num, typ, f, err := r.field("ScopeSpans")
		if err != nil {
			return err
		}
		if num != 2 || typ != protowire.BytesType {
			continue
		}
		if maxSpans > 0 && len(d.Spans)+int(d.Foreign+d.Tails) >= maxSpans {
			return fmt.Errorf("%w (more than %d)", ErrTooManySpans, maxSpans)
		}
		if err := d.span(f.r, ri); err != nil {
			return err
		}
	}
	return nil
}

// value is an AnyValue: a string (or bytes), an int, a bool or a double.
type value struct {
	s     []byte
	i     int64
	isInt bool
}

func keyValue(r reader) (key []byte, val value, err error) {
	for !r.done() {
		num, typ, f, err := r.field("KeyValue")
		if err != nil {
			return nil, value{}, err
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			key = f.r.buf
		case num == 2 && typ == protowire.BytesType:
			v := f.r
			for !v.done() {
				n, t, g, err := v.field("AnyValue")
				if err != nil {
					return nil, value{}, err
				}
				// A oneof: the last value set wins, as in the generated types.
				switch {
				case n == 1 && t == protowire.BytesType, n == 7 && t == protowire.BytesType:
					val = value{s: g.r.buf}
				case n == 2 && t == protowire.VarintType, n == 3 && t == protowire.VarintType:
					val = value{i: int64(g.v), isInt: true}
				case n == 4 && t == protowire.Fixed64Type:
					val = value{i: int64(math.Float64frombits(g.v)), isInt: true}
				case n == 5 && t == protowire.BytesType, n == 6 && t == protowire.BytesType:
					val = value{} // arrays and lists carry nothing xfertop reads
				}
			}
		}
	}
	return key, val, nil
}

// uvarint is protowire.ConsumeVarint, inlined for the one-byte lengths and values most are.
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return protowire.ConsumeVarint(b)
}

// fastKeyValue reads a KeyValue laid out as OTLP exporters write it: a key and a value holding one
// string or int, the key first (the protobuf libraries) or the value first (the Collector's pdata
// writes messages backwards). ok is false for anything else, which keyValue then reads in full.
func fastKeyValue(b []byte) (key []byte, val value, ok bool) {
	var av []byte
	var haveKey, haveVal bool
	for range 2 {
		if len(b) < 2 {
			return nil, value{}, false
		}
		tag := b[0]
		n, m := uvarint(b[1:])
		if m <= 0 || n > uint64(len(b)-1-m) {
			return nil, value{}, false
		}
		body := b[1+m : 1+m+int(n)]
		b = b[1+m+int(n):]
		switch {
		case tag == 0x0a && !haveKey: // field 1, bytes: the key
			key, haveKey = body, true
		case tag == 0x12 && !haveVal: // field 2, bytes: the AnyValue
			av, haveVal = body, true
		default:
			return nil, value{}, false
		}
	}
	if len(b) != 0 || len(av) < 2 {
		return nil, value{}, false
	}
	// anyValue's, written out: a call here cost the exporters' layout a tenth of Decode.
	switch av[0] {
	case 0x0a: // string_value
		n, m := uvarint(av[1:])
		if m <= 0 || n != uint64(len(av)-1-m) {
			return nil, value{}, false
		}
		return key, value{s: av[1+m:]}, true
	case 0x18: // int_value
		v, m := uvarint(av[1:])
		if m <= 0 || 1+m != len(av) {
			return nil, value{}, false
		}
		return key, value{i: int64(v), isInt: true}, true
	}
	return nil, value{}, false
}

// spanAttrs are what a span's attributes say, as span reads them: the event's fields straight
// into e (the span's place in Decoded.Spans), the rest here.
type spanAttrs struct {
	e                    *timeline.Event
	kind, dir, coll      []byte
	label                []byte // interned once the span is known to be kept
	aux, step, groupOps  int64
	hasAux, hasStep      bool
	hasOps, hasSub, tail bool
}

// attrKey names an attribute span reads; 0 is any other.
type attrKey uint8

const (
	keyKind attrKey = iota + 1
	keySeq
	keyDevice
	keyPeer
	keyStream
	keyPriority
	keyOp
	keyBytes
	keyCommunicator
	keyGroup
	keyGroupOps
	keyBarrier
	keyRanks
	keyStatus
	keySub
	keyAux
	keyStep
	keyLabel
	keyQueuedNs
	keyCopyDirection
	keyCollective
	keyTail
)

// attrNames are the attributes' keys, by attrKey.
var attrNames = [...]string{keyKind: "xfertop.kind", keySeq: "xfertop.seq", keyDevice: "xfertop.device", keyPeer: "xfertop.peer", keyStream: "xfertop.stream", keyPriority: "xfertop.priority", keyOp: "xfertop.op", keyBytes: "xfertop.bytes", keyCommunicator: "xfertop.communicator", keyGroup: "xfertop.group", keyGroupOps: "xfertop.group.ops", keyBarrier: "xfertop.barrier", keyRanks: "xfertop.ranks", keyStatus: "xfertop.status", keySub: "xfertop.sub", keyAux: "xfertop.aux", keyStep: "xfertop.step", keyLabel: "xfertop.label", keyQueuedNs: "xfertop.queued_ns", keyCopyDirection: "xfertop.copy.direction", keyCollective: "xfertop.collective", keyTail: "xfertop.tail"}

// attrKeys finds an attribute's attrKey by its key.
var attrKeys = func() map[string]attrKey {
	m := map[string]attrKey{}
	for k, name := range attrNames {
		if name != "" {
			m[name] = attrKey(k)
		}
	}
	return m
}()

// keyCache remembers each of a span's first attributes by its place: its key, and whether the
// value came before the key (the Collector) or after it (the protobuf libraries). An exporter writes
// every span's attributes in the same order and layout, so most keys are found with one comparison,
// not a map lookup or a search among the names; and span reads an attribute in the Collector's
// layout in place, checking that its key and layout are the ones last seen at its place. Its keys
// point into the request, so it is emptied at each Decode.
type keyCache [16]keyCacheEntry

type keyCacheEntry struct {
	key        []byte // the key last seen at this place (in the request being decoded)
	id         attrKey
	valid      bool
	valueFirst bool // the KeyValue's value came before its key
}

// find returns the attrKey of key, the span's attribute at place i, and remembers it there with
// the order of the KeyValue's fields.
func (c *keyCache) find(i int, key []byte, valueFirst bool) attrKey {
	if i >= len(c) {
		return attrKeys[string(key)]
	}
	e := &c[i]
	if e.valid && string(e.key) == string(key) {
		e.valueFirst = valueFirst
		return e.id
	}
	*e = keyCacheEntry{key: key, id: attrKeys[string(key)], valid: true, valueFirst: valueFirst}
	return e.id
}

// valueFirst reports whether a KeyValue starts with its value (as the Collector writes them).
func valueFirst(kv []byte) bool { return len(kv) > 0 && kv[0] == 0x12 }

// anyValue reads an AnyValue that holds one string or one int; ok is false for anything else.
func anyValue(av []byte) (value, bool) {
	if len(av) < 2 {
		return value{}, false
	}
	switch av[0] {
	case 0x0a: // string_value
		n, m := uvarint(av[1:])
		if m <= 0 || n != uint64(len(av)-1-m) {
			return value{}, false
		}
		return value{s: av[1+m:]}, true
	case 0x18: // int_value
		v, m := uvarint(av[1:])
		if m <= 0 || 1+m != len(av) {
			return value{}, false
		}
		return value{i: int64(v), isInt: true}, true
	}
	return value{}, false
}

// intOr is v's integer, or def when v holds none: the last value of a key wins, and a number
// given as a string (or nothing) leaves the field as if the key were absent (as the generated
// types read it).
func intOr(v value, def int64) int64 {
	if v.isInt {
		return v.i
	}
	return def
}

// attr reads one of a span's attributes, key being its attrKey. A value that is not a number
// reads as 0 (v.i) for the fields whose absence is 0.
func (d *Decoded) attr(sp *Span, a *spanAttrs, key attrKey, v value) {
	e := a.e
	switch key {
	case keyKind:
		a.kind = v.s
	case keySeq:
		sp.Seq = intOr(v, -1)
	case keyDevice:
		e.Device = int32(intOr(v, int64(timeline.NoDevice)))
	case keyPeer:
		e.Peer = int32(intOr(v, int64(timeline.NoDevice)))
	case keyStream:
		e.Stream = uint32(v.i)
	case keyPriority:
		e.Priority = int8(v.i)
	case keyOp:
		e.Op = uint64(v.i)
	case keyBytes:
		e.Bytes = v.i
	case keyCommunicator:
		e.Comm = uint32(v.i)
	case keyGroup:
		e.Group = uint32(v.i)
	case keyGroupOps:
		a.groupOps, a.hasOps = v.i, v.isInt
	case keyBarrier:
		e.Barrier = uint32(v.i)
	case keyRanks:
		e.Ranks = uint16(v.i)
	case keyStatus:
		e.Status = uint8(v.i)
	case keySub:
		e.Sub, a.hasSub = uint8(v.i), v.isInt
	case keyAux:
		a.aux, a.hasAux = v.i, v.isInt
	case keyStep:
		a.step, a.hasStep = v.i, v.isInt
	case keyLabel:
		a.label = v.s
	case keyQueuedNs:
		e.Queued = v.i
	case keyCopyDirection:
		a.dir = v.s
	case keyCollective:
		a.coll = v.s
	case keyTail:
		a.tail = v.i != 0
	}
}

// Tags of the Span fields read on span's fast path: start_time_unix_nano and end_time_unix_nano
// (fixed64) and attributes (bytes).
const (
	tagSpanStart = 7<<3 | byte(protowire.Fixed64Type)
	tagSpanEnd   = 8<<3 | byte(protowire.Fixed64Type)
	tagSpanAttr  = 9<<3 | byte(protowire.BytesType)
)

// span decodes one Span; one that carries no xfertop.kind is counted as foreign. The fields every
// xfertop span has (its times and attributes) are read in place; any other field, or one of those
// cut short, goes through reader.field, which says where it is malformed. The span is decoded into
// the next place of d.Spans, which it takes only if it is kept: copying a decoded span (104 bytes)
// twice on its way there was a tenth of Decode.
func (d *Decoded) span(r reader, ri int32) error {
	at := len(d.Spans)
	if at == cap(d.Spans) {
		d.Spans = slices.Grow(d.Spans, 1)
	}
	sp := &d.Spans[:at+1][at]
	*sp = Span{Event: timeline.Event{Device: timeline.NoDevice, Peer: timeline.NoDevice}, Seq: -1, Res: ri}
	a := spanAttrs{e: &sp.Event}
	b := r.buf
	nattr := 0 // the attributes read so far
	// pos is r.pos, kept in a register on the fast paths (r escapes to field).
	for pos := r.pos; pos < len(b); pos = r.pos {
		switch t := b[pos]; t {
		case tagSpanStart, tagSpanEnd:
			if pos+9 > len(b) {
				break
			}
			v := int64(binary.LittleEndian.Uint64(b[pos+1 : pos+9]))
			if t == tagSpanStart {
				sp.Event.Start = v
			} else {
				sp.Event.End = v
			}
			r.pos = pos + 9
			continue
		case tagSpanAttr:
			if nattr < len(d.keys) && pos+4 < len(b) && b[pos+1] < 0x80 {
				// The Collector's layout as the span before had it at this place, read in place:
				// [0x4a n] [0x12 avLen] AnyValue [0x0a keyLen] key, each length one byte.
				e := &d.keys[nattr]
				end, kl := pos+2+int(b[pos+1]), len(e.key)
				ks := end - kl - 2 // the key's field
				if e.valid && e.valueFirst && end <= len(b) && ks >= pos+4 && kl < 0x80 && b[pos+2] == 0x12 && int(b[pos+3]) == ks-pos-4 &&
					b[ks] == 0x0a && int(b[ks+1]) == kl && string(b[ks+2:end]) == string(e.key) {
					if v, ok := anyValue(b[pos+4 : ks]); ok {
						d.attr(sp, &a, e.id, v)
						nattr++
						r.pos = end
						continue
					}
				}
			}
			n, m := uvarint(b[pos+1:])
			if m <= 0 || n > uint64(len(b)-pos-1-m) {
				break
			}
			at := pos + 1 + m
			kv := b[at : at+int(n)]
			key, v, ok := fastKeyValue(kv)
			if !ok {
				var err error
				if key, v, err = keyValue(reader{buf: kv, base: r.base + at}); err != nil {
					return err
				}
			}
			d.attr(sp, &a, d.keys.find(nattr, key, valueFirst(kv)), v)
			nattr++
			r.pos = at + int(n)
			continue
		default:
			// Another length-delimited field (ids, name, events, links, status): skipped.
			if t >= 1<<3 && t < 0x80 && t&7 == byte(protowire.BytesType) {
				if n, m := uvarint(b[pos+1:]); m > 0 && n <= uint64(len(b)-pos-1-m) {
					r.pos = pos + 1 + m + int(n)
					continue
				}
			}
		}
		num, typ, f, err := r.field("Span")
		if err != nil {
			return err
		}
		switch {
		case num == 7 && typ == protowire.Fixed64Type:
			sp.Event.Start = int64(f.v)
		case num == 8 && typ == protowire.Fixed64Type:
			sp.Event.End = int64(f.v)
		case num == 9 && typ == protowire.BytesType:
			key, v, err := keyValue(f.r)
			if err != nil {
				return err
			}
			d.attr(sp, &a, d.keys.find(nattr, key, valueFirst(f.r.buf)), v)
			nattr++
		}
	}
	k, ok := kindOf(a.kind)
	switch {
	case !ok:
		d.Foreign++
		return nil
	case a.tail:
		d.Tails++
		return nil
	}
	e := &sp.Event
	e.Kind = k
	e.Label = d.label(a.label)
	if !a.hasSub {
		// Detail spans: the sub-kind is spelt out.
		switch k {
		case timeline.KindMemcpy:
			if c, ok := copyByName[string(a.dir)]; ok {
				e.Sub = uint8(c)
			}
		case timeline.KindCollective:
			if c, ok := timeline.ParseCollOp(string(a.coll)); ok {
				e.Sub = uint8(c)
			}
		}
	}
	switch {
	case a.hasAux:
		e.Aux = uint32(a.aux)
	case a.hasStep && k == timeline.KindStep:
		e.Aux = uint32(a.step)
	case a.hasOps && k == timeline.KindGroupLaunch:
		e.Aux = uint32(a.groupOps)
	}
	d.Spans = d.Spans[:at+1]
	return nil
}
