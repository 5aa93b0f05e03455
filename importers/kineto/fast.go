package kineto

import (
	"encoding/binary"
	"math/bits"
	"strconv"
)

// The fast path of the decoder: a trace event read straight from the scanner's window, by index,
// with no call per byte and no refill. It takes only what it can read to the same result as the
// general path (decoder.event over the scanner): the whole event in the window, strings without
// control characters, tokens within the limit, containers nested a few levels deep, the fields
// of the types profilers write. On anything else (the window's end, an xfertop export's args, a
// value of an odd type, any byte that is not JSON) it gives up having consumed nothing and
// changed nothing the general path does not reset, and the general path reads the event again
// from its first byte: so its errors, offsets and limits stay those of the general path, and
// FuzzFastPath checks that both read the same events.

// fastDepth is how deeply a value the fast path skips may nest; deeper ones go the general way.
const fastDepth = 32

// isSpace tells JSON's white space. Most bytes it is asked about are none, and above the space:
// one comparison tells them.
func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t') }

// fastEvent reads the event at the window's next non-space byte into d.ev, reporting whether it
// did; when it did not, the scanner has not moved.
func (d *decoder) fastEvent(index int64) bool {
	s, e := d.s, &d.ev
	b := s.buf
	i := s.pos
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if d.shapedEvent(b, i, index) {
		return true
	}
	d.shapes.start(i)
	i++
	e.reset(index)
	e.Name, e.Pid, e.Tid = nil, nil, nil // not the arrays the general path copies to: they may point into the window
	first := true
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return false
		}
		if first && b[i] == '}' {
			s.pos = i + 1
			d.shapes.learn(b, s.pos)
			return true
		}
		first = false
		field, next, ok := d.fastEventKey(b, i)
		if !ok {
			return false
		}
		i = next
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return false
		}
		at := i
		if i, ok = d.fastEventField(b, field, i); !ok {
			return false
		}
		if field != fieldArgs || b[at] != '{' { // an args object's values are noted one by one
			d.shapes.note(at, i, uint8(field))
		}
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			s.pos = i + 1
			d.shapes.learn(b, s.pos)
			return true
		default:
			return false
		}
	}
}

// Fields of a trace event that the decoder reads.
const (
	fieldOther = iota
	fieldPh
	fieldCat
	fieldName
	fieldPid
	fieldTid
	fieldTs
	fieldDur
	fieldArgs
)

// eventField tells which of the fields the decoder reads a key names.
func eventField(key []byte) int {
	switch string(key) {
	case "ph":
		return fieldPh
	case "cat":
		return fieldCat
	case "name":
		return fieldName
	case "pid":
		return fieldPid
	case "tid":
		return fieldTid
	case "ts":
		return fieldTs
	case "dur":
		return fieldDur
	case "args":
		return fieldArgs
	}
	return fieldOther
}

// fastEventKey reads the event's key at b[i] and its colon, and tells which field it names: the
// keys profilers write are matched with their quotes and colon at once, as one eight-byte word
// masked to the key's length, without a scan, when the token limit lets the longest of them
// ("name" and "args", six bytes with their quotes) through; under a lower one each key is read
// as a string, which the limit applies to.
func (d *decoder) fastEventKey(b []byte, i int) (field, next int, ok bool) {
	if len(b)-i >= 8 && d.s.maxToken >= len(`"name"`) {
		w := binary.LittleEndian.Uint64(b[i:])
		switch {
		case w&mask5 == keyPh:
			return fieldPh, i + 5, true
		case w&mask6 == keyCat:
			return fieldCat, i + 6, true
		case w&mask7 == keyName:
			return fieldName, i + 7, true
		case w&mask6 == keyPid:
			return fieldPid, i + 6, true
		case w&mask6 == keyTid:
			return fieldTid, i + 6, true
		case w&mask5 == keyTs:
			return fieldTs, i + 5, true
		case w&mask6 == keyDur:
			return fieldDur, i + 6, true
		case w&mask7 == keyArgs:
			return fieldArgs, i + 7, true
		}
	}
	name, after, found := d.fastNamedKey(b, i)
	if !found {
		return 0, 0, false
	}
	return eventField(name), after, true
}

// Masks of a word's first five, six and seven bytes, and the keys profilers write with their
// quotes and colon, as little-endian words.
const (
	mask5 = 1<<40 - 1
	mask6 = 1<<48 - 1
	mask7 = 1<<56 - 1
)

var (
	keyPh, keyTs                   = keyWord(`"ph":`), keyWord(`"ts":`)
	keyCat, keyPid, keyTid, keyDur = keyWord(`"cat":`), keyWord(`"pid":`), keyWord(`"tid":`), keyWord(`"dur":`)
	keyName, keyArgs               = keyWord(`"name":`), keyWord(`"args":`)
)

// keyWord is a key of up to eight bytes as a little-endian word.
func keyWord(k string) uint64 {
	var w [8]byte
	copy(w[:], k)
	return binary.LittleEndian.Uint64(w[:])
}

// fastEventField reads the value at b[i] of the event's field, as readEventField does, and
// returns the index after it. It only dispatches: each kind of field is read by a function of its
// own, so that the commonest (a time, an id) do not pay for the frame of the rarest.
func (d *decoder) fastEventField(b []byte, field, i int) (int, bool) {
	switch field {
	case fieldPh:
		if len(b)-i >= 3 && b[i] == '"' && b[i+2] == '"' && b[i+1] >= 0x20 && b[i+1] != '"' && b[i+1] != '\\' && d.s.maxToken >= 3 {
			d.ev.Ph = b[i+1] // "X": a phase is one letter
			return i + 3, true
		}
		return d.fastStrField(b, field, i)
	case fieldCat, fieldName:
		return d.fastStrField(b, field, i)
	case fieldPid, fieldTid:
		return d.fastIDField(b, field, i)
	case fieldTs, fieldDur:
		if ns, ok, end, read := d.fastTime(b, i); read && ok && !d.floats {
			e := &d.ev
			if field == fieldTs {
				e.Ts, e.TsF, e.HasTs, e.BadTs = ns, 0, true, false
			} else {
				e.Dur, e.DurF, e.HasDur, e.BadDur = ns, 0, true, false
			}
			return end, true
		}
		return d.fastTimeField(b, field, i)
	case fieldArgs:
		if b[i] != '{' {
			return d.fastSkip(b, i)
		}
		return d.fastArgs(b, i+1)
	}
	return d.fastSkip(b, i)
}

// fastStrField reads the string value of ph, cat or name.
func (d *decoder) fastStrField(b []byte, field, i int) (int, bool) {
	e := &d.ev
	v0, v1, ok := d.fastStr(b, i)
	if !ok {
		return 0, false
	}
	v := b[v0:v1]
	switch field {
	case fieldPh:
		if len(v) > 0 {
			e.Ph = v[0]
		}
	case fieldCat:
		e.Cat = category(v)
	default:
		e.Name = d.take(e.Name, &d.name, b[v0:v1:v1])
	}
	return v1 + 1, true
}

// fastIDField reads the value of pid or tid: its text, an integer's or a string's.
func (d *decoder) fastIDField(b []byte, field, i int) (int, bool) {
	e := &d.ev
	v0, v1, end, ok := i, 0, 0, false
	if _, end, ok = d.fastInt(b, i); ok {
		v1 = end
	} else if v0, v1, end, ok = d.fastScalar(b, i); !ok {
		return 0, false
	}
	if field == fieldPid {
		e.Pid = d.take(e.Pid, &d.pid, b[v0:v1:v1])
	} else {
		e.Tid = d.take(e.Tid, &d.tid, b[v0:v1:v1])
	}
	return end, true
}

// fastTimeField reads the value of ts or dur, with its float64 for --like-hta, where fastTime
// alone did not: a string, an exponent, a number out of range.
func (d *decoder) fastTimeField(b []byte, field, i int) (int, bool) {
	e := &d.ev
	ns, ok, end, read := d.fastTime(b, i)
	if !read {
		var v0, v1 int
		if v0, v1, end, read = d.fastScalar(b, i); !read {
			return 0, false
		}
		ns, ok = parseNs(b[v0:v1])
	}
	v0, v1 := i, end
	if b[i] == '"' {
		v0, v1 = i+1, end-1
	}
	var f float64
	if ok && d.floats {
		f, _ = strconv.ParseFloat(string(b[v0:v1]), 64)
	}
	if !ok {
		ns = 0
	}
	if field == fieldTs {
		e.Ts, e.TsF, e.HasTs, e.BadTs = ns, f, ok, !ok
	} else {
		e.Dur, e.DurF, e.HasDur, e.BadDur = ns, f, ok, !ok
	}
	return end, true
}

// The args the decoder reads.
const (
	argOther = iota
	argDevice
	argStream
	argCorrelation
	argBytes
	argInNelems
	argOutNelems
	argGroupSize
	argDType
	argXfertop
	argCollName
)

// argKeys are the args the decoder reads, by the key's first byte (two at most; an id of
// argOther ends them), each as its first eight
// bytes with the opening quote, the rest with the closing quote and colon (and how long that
// is), for fastArgKey.
var argKeys = func() (keys [128][2]argKey) {
	for _, k := range []struct {
		name string
		id   int
	}{{"device", argDevice}, {"stream", argStream}, {"correlation", argCorrelation}, {"bytes", argBytes},
		{"In msg nelems", argInNelems}, {"Out msg nelems", argOutNelems}, {"Group size", argGroupSize},
		{"dtype", argDType}, {"xfertop", argXfertop}, {"Collective name", argCollName}} {
		quoted := `"` + k.name + `":`
		head, tail := quoted[:min(8, len(quoted))], quoted[min(8, len(quoted)):min(16, len(quoted))]
		at := &keys[k.name[0]]
		j := 0
		if at[0].id != argOther {
			j = 1 // no first byte starts more than two
		}
		at[j] = argKey{keyWord(head), uint64(1)<<(8*len(head)) - 1, keyWord(tail),
			uint64(1)<<(8*len(tail)) - 1, quoted[min(16, len(quoted)):], len(quoted), k.id}
	}
	return keys
}()

// argKey is a quoted key and its colon as a word, the next up to eight bytes as another, and
// what follows (masks of 64 bits are all ones: a shift by 64 is 0).
type argKey struct {
	head, headMask, tail, tailMask uint64
	rest                           string
	n, id                          int
}

// fastArgKey reads the key of an arg at b[i] and its colon, and tells which arg it names: those
// the decoder reads are matched as one or two masked words, others read as a string.
func (d *decoder) fastArgKey(b []byte, i int) (key, next int, ok bool) {
	if len(b)-i >= 24 && b[i+1] < 128 {
		w, w2 := binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint64(b[i+8:])
		ks := &argKeys[b[i+1]]
		for j := range ks {
			k := &ks[j]
			if k.id == argOther {
				break
			}
			if w&k.headMask == k.head && w2&k.tailMask == k.tail && (k.rest == "" || hasLiteral(b, i+16, k.rest)) {
				if k.n-1 > d.s.maxToken {
					return 0, 0, false // the quoted key is past the token limit: the general path says so
				}
				return k.id, i + k.n, true
			}
		}
	}
	name, after, found := d.fastNamedKey(b, i)
	if !found {
		return 0, 0, false
	}
	return argID(name), after, true
}

// fastNamedKey reads the quoted key at b[i] and its colon: the key's bytes (its escapes as
// written) and the index after the colon.
func (d *decoder) fastNamedKey(b []byte, i int) (key []byte, next int, ok bool) {
	k0, k1, ok := d.fastStr(b, i)
	if !ok {
		return nil, 0, false
	}
	i = k1 + 1
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i >= len(b) || b[i] != ':' {
		return nil, 0, false
	}
	return b[k0:k1], i + 1, true
}

// argID tells which of the args the decoder reads a key names.
func argID(key []byte) int {
	switch string(key) {
	case "device":
		return argDevice
	case "stream":
		return argStream
	case "correlation":
		return argCorrelation
	case "bytes":
		return argBytes
	case "In msg nelems":
		return argInNelems
	case "Out msg nelems":
		return argOutNelems
	case "Group size":
		return argGroupSize
	case "dtype":
		return argDType
	case "xfertop":
		return argXfertop
	case "Collective name":
		return argCollName
	}
	return argOther
}

// take is a field's value v (in the window) after what the event already has of it, cur: v
// itself, not copied, when that is nothing (the general path appends a repeated key's values, so
// a second one is copied after the first into own).
func (d *decoder) take(cur []byte, own *[]byte, v []byte) []byte {
	if len(cur) == 0 {
		return v
	}
	*own = append(append((*own)[:0], cur...), v...)
	return *own
}

// fastArgs reads an event's args object from after its brace, as readArgField does.
func (d *decoder) fastArgs(b []byte, i int) (int, bool) {
	first := true
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return 0, false
		}
		if first && b[i] == '}' {
			return i + 1, true
		}
		first = false
		key, next, ok := d.fastArgKey(b, i)
		if !ok {
			return 0, false
		}
		i = next
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return 0, false
		}
		at := i
		if i, ok = d.fastArgValue(b, key, i); !ok {
			return 0, false
		}
		d.shapes.note(at, i, slotArg+uint8(key))
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// intArg is the integer arg key names: its bit in Has and Bad and where its value goes; nil for
// an arg that is no integer.
func (a *rawArgs) intArg(key int) (uint8, *int64) {
	switch key {
	case argDevice:
		return hasDevice, &a.Device
	case argStream:
		return hasStream, &a.Stream
	case argCorrelation:
		return hasCorrelation, &a.Correlation
	case argBytes:
		return hasBytes, &a.Bytes
	case argInNelems:
		return hasInNelems, &a.InNelems
	case argOutNelems:
		return hasOutNelems, &a.OutNelems
	case argGroupSize:
		return hasGroupSize, &a.GroupSize
	}
	return 0, nil
}

// fastArgValue reads the value at b[i] (i < len(b)) of the arg key names, and returns the index
// after it.
func (d *decoder) fastArgValue(b []byte, key, i int) (int, bool) {
	a := &d.ev.Args
	bit, dst := a.intArg(key)
	switch {
	case dst != nil:
	case key == argDType:
		v0, v1, end, ok := d.fastScalar(b, i)
		if !ok {
			return 0, false
		}
		a.DType = dtypeName(b[v0:v1])
		return end, true
	case key == argCollName:
		v0, v1, end, ok := d.fastScalar(b, i)
		if !ok {
			return 0, false
		}
		a.Coll = uint8(torchCollOp(b[v0:v1]))
		return end, true
	case key == argXfertop:
		return 0, false // an export's own fields: the general path reads them
	default:
		return d.fastSkip(b, i)
	}
	if n, end, ok := d.fastInt(b, i); ok {
		*dst = n
		a.Has |= bit
		return end, true
	}
	v0, v1, end, ok := d.fastScalar(b, i)
	if !ok {
		return 0, false
	}
	if n, ok := parseInt(b[v0:v1]); ok {
		*dst = n
		a.Has |= bit
	} else {
		a.Bad |= bit
	}
	return end, true
}

// fastStr reads the string at b[i] (its opening quote) without escapes or control characters,
// within the token limit, and returns where its contents start and end (the closing quote).
func (d *decoder) fastStr(b []byte, i int) (int, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	j := strStop(b, i+1)
	if j >= len(b) || b[j] != '"' || j+1-i > d.s.maxToken {
		return 0, 0, false
	}
	return i + 1, j, true
}

// SWAR constants: a byte's value in each of a word's eight bytes.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// strStopWords returns the index of the first quote, backslash or control character in b[j:]
// (len(b) when there is none), eight bytes at a time: a string's bytes are mostly none of these.
// It is strStop in the portable build, and the vector strStop's tail.
func strStopWords(b []byte, j int) int {
	for ; j+8 <= len(b); j += 8 {
		v := binary.LittleEndian.Uint64(b[j:])
		q, bs := v^(ones*'"'), v^(ones*'\\')
		// A byte is zero in q or bs, or below 0x20 in v: the lowest set high bit marks the first
		// (bits above a true one may be false, never bits below it).
		m := ((q - ones) &^ q) | ((bs - ones) &^ bs) | ((v - ones*0x20) &^ v)
		if m &= highs; m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
	}
	for ; j < len(b); j++ {
		if c := b[j]; c == '"' || c == '\\' || c < 0x20 {
			return j
		}
	}
	return j
}

// fastScalar reads the string or number at b[i] and returns its text (a string's contents) and
// the index after it; any other value is left to the general path.
func (d *decoder) fastScalar(b []byte, i int) (v0, v1, end int, ok bool) {
	c := b[i]
	if c == '"' {
		v0, v1, ok = d.fastStr(b, i)
		return v0, v1, v1 + 1, ok
	}
	if c == '-' || (c >= '0' && c <= '9') {
		end, ok = d.fastNumber(b, i)
		return i, end, end, ok
	}
	return 0, 0, 0, false
}

// fastSkip passes over the value at b[i], checking that it is JSON, and returns the index after
// it.
func (d *decoder) fastSkip(b []byte, i int) (int, bool) {
	if i < len(b) {
		// A number or a string, what most skipped args are, without the stack below (zeroed at
		// every call that declares it).
		switch c := b[i]; {
		case c == '-' || (c >= '0' && c <= '9'):
			return d.fastNumber(b, i)
		case c == '"':
			return d.fastSkipStr(b, i)
		case c == '[':
			if end, ok := d.fastSkipArray(b, i); ok {
				return end, true
			}
		}
	}
	return d.fastSkipNested(b, i)
}

// fastSkipArray passes over the array at b[i] when it holds only arrays (nested up to
// fastDepth), integers not negative and strings without escapes: the arrays profilers write in
// args ("Input Dims": [[2048, 1024], [1024, 4096]], "grid": [32, 16, 1], "Input type":
// ["float", "float"]). Its elements are told apart by their first byte and checked as
// fastNumber and fastSkipStr check them, with no stack (arrays only: a depth is enough). On
// anything else it reports false, and fastSkipNested reads the array from the same byte.
func (d *decoder) fastSkipArray(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '[' {
		return 0, false
	}
	depth, j := 0, i
	for {
		// A value: an array opens (an empty one is a value whole), or a number or string.
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j >= len(b) {
			return 0, false
		}
		switch c := b[j]; {
		case c == '[':
			if depth == fastDepth {
				return 0, false
			}
			depth++
			for j++; j < len(b) && isSpace(b[j]); j++ {
			}
			if j >= len(b) || b[j] != ']' {
				continue
			}
			depth--
			j++
		case c-'0' < 10:
			k := j
			for j++; j < len(b) && b[j]-'0' < 10; j++ {
			}
			if c == '0' && j-k > 1 || j-k > d.s.maxToken {
				return 0, false
			}
		case c == '"':
			end := strStop(b, j+1)
			if end >= len(b) || b[end] != '"' || end+1-j > d.s.maxToken {
				return 0, false
			}
			j = end + 1
		default:
			return 0, false
		}
		if depth == 0 {
			return j, true
		}
		// After a value: a comma and the next, or brackets that close arrays.
		for {
			for j < len(b) && isSpace(b[j]) {
				j++
			}
			if j >= len(b) {
				return 0, false
			}
			if b[j] == ',' {
				j++
				break
			}
			if b[j] != ']' {
				return 0, false
			}
			j++
			if depth--; depth == 0 {
				return j, true
			}
		}
	}
}

// fastSkipNested is fastSkip of any value, containers included.
func (d *decoder) fastSkipNested(b []byte, i int) (int, bool) {
	var stack [fastDepth]byte
	depth := 0
	needValue := true
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) {
			return 0, false
		}
		c := b[i]
		if needValue {
			switch {
			case c == '"':
				end, ok := d.fastSkipStr(b, i)
				if !ok {
					return 0, false
				}
				i = end
			case c == '{' || c == '[':
				if depth == fastDepth {
					return 0, false
				}
				stack[depth] = c
				depth++
				i++
				for i < len(b) && isSpace(b[i]) {
					i++
				}
				if i >= len(b) {
					return 0, false
				}
				if (c == '{' && b[i] == '}') || (c == '[' && b[i] == ']') {
					depth--
					i++
					break
				}
				if c == '{' {
					var ok bool
					if i, ok = d.fastKey(b, i); !ok {
						return 0, false
					}
				}
				continue
			case c == '-' || (c >= '0' && c <= '9'):
				end, ok := d.fastNumber(b, i)
				if !ok {
					return 0, false
				}
				i = end
			case c == 't':
				if !hasLiteral(b, i, "true") {
					return 0, false
				}
				i += 4
			case c == 'f':
				if !hasLiteral(b, i, "false") {
					return 0, false
				}
				i += 5
			case c == 'n':
				if !hasLiteral(b, i, "null") {
					return 0, false
				}
				i += 4
			default:
				return 0, false
			}
			if depth == 0 {
				return i, true
			}
			needValue = false
			continue
		}
		top := stack[depth-1]
		switch {
		case c == ',':
			i++
			if top == '{' {
				var ok bool
				if i, ok = d.fastKey(b, i); !ok {
					return 0, false
				}
			}
			needValue = true
		case (top == '{' && c == '}') || (top == '[' && c == ']'):
			i++
			depth--
			if depth == 0 {
				return i, true
			}
		default:
			return 0, false
		}
	}
}

// fastKey passes over an object's key and its colon.
func (d *decoder) fastKey(b []byte, i int) (int, bool) {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	end, ok := d.fastSkipStr(b, i)
	if !ok {
		return 0, false
	}
	for end < len(b) && isSpace(b[end]) {
		end++
	}
	if end >= len(b) || b[end] != ':' {
		return 0, false
	}
	return end + 1, true
}

// fastSkipStr passes over the string at b[i], checking its escapes, and returns the index after
// its closing quote.
func (d *decoder) fastSkipStr(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	j := i + 1
	for {
		j = strStop(b, j)
		if j >= len(b) {
			return 0, false
		}
		c := b[j]
		switch {
		case c == '"':
			if j+1-i > d.s.maxToken {
				return 0, false
			}
			return j + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if j+1 >= len(b) {
				return 0, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return 0, false
				}
				j += 6
			default:
				return 0, false
			}
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// hasLiteral tells whether b[i:] starts with the literal w.
func hasLiteral(b []byte, i int, w string) bool {
	return len(b)-i >= len(w) && string(b[i:i+len(w)]) == w
}
