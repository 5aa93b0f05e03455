package flightrecorder

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The pickle opcodes a Flight Recorder dump uses (torch's C++ pickler writes protocol 2: PROTO,
// containers built with MARK … APPENDS/SETITEMS, strings memoized with BINPUT/BINGET, 8-byte
// integers as LONG1), and the few protocol 3-5 ones Python adds when a dump is loaded and written
// again (FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL). Anything else is refused.
const (
	opProto           = 0x80
	opStop            = '.'
	opMark            = '('
	opPop             = '0'
	opEmptyDict       = '}'
	opEmptyList       = ']'
	opEmptyTuple      = ')'
	opBinUnicode      = 'X'
	opShortBinUnicode = 0x8c
	opBinUnicode8     = 0x8d
	opShortBinBytes   = 'C'
	opBinBytes        = 'B'
	opBinInt          = 'J'
	opBinInt1         = 'K'
	opBinInt2         = 'M'
	opLong1           = 0x8a
	opBinFloat        = 'G'
	opNewTrue         = 0x88
	opNewFalse        = 0x89
	opNone            = 'N'
	opAppend          = 'a'
	opAppends         = 'e'
	opSetItem         = 's'
	opSetItems        = 'u'
	opTuple           = 't'
	opTuple1          = 0x85
	opTuple2          = 0x86
	opTuple3          = 0x87
	opBinPut          = 'q'
	opLongBinPut      = 'r'
	opBinGet          = 'h'
	opLongBinGet      = 'j'
	opMemoize         = 0x94
	opFrame           = 0x95
	opGlobal          = 'c'
	opStackGlobal     = 0x93
	opReduce          = 'R'
)

// pickle values: nil, bool, int64, float64, string, []byte, tuple, *plist, *pdict, global, and
// empty (an empty container, until something is put in it or it is memoized).
type (
	tuple  []any
	pdict  struct{ keys, vals []any }
	global struct{ module, name string }
	// empty is an empty dict, list or tuple as a value of its own: no allocation (an interface
	// holding a one-byte value points into the runtime's static table), where a *pdict costs 48
	// bytes and its map 48 more. A pickle of nothing but EMPTY_DICT opcodes made one a byte, and
	// cost over 100 times its size; a dict or list is made when an item is put in it (fill) or it
	// is memoized (memoOp: a later BINGET must find the same container).
	empty uint8
)

// The empty containers.
const (
	emptyDict empty = iota + 1
	emptyList
	emptyTuple
)

// plist is a list: its items in chunks of at most listChunk, the first grown as append grows it,
// the others made whole. A list of a million items costs their 16 bytes each once, where one slice
// grown by append copies them over and over (five times their size allocated in all).
type plist struct {
	chunks [][]any
	n      int
}

// listChunk is the most items in one of a list's chunks.
const listChunk = 1024

// add appends items to l.
func (l *plist) add(items []any) {
	l.n += len(items)
	for len(items) > 0 {
		last := len(l.chunks) - 1
		if last < 0 || len(l.chunks[last]) == listChunk {
			c := []any(nil)
			if last >= 0 {
				c = make([]any, 0, listChunk)
			}
			l.chunks, last = append(l.chunks, c), last+1
		}
		k := min(len(items), listChunk-len(l.chunks[last]))
		l.chunks[last] = append(l.chunks[last], items[:k]...)
		items = items[k:]
	}
}

// materialize makes the empty dict or list at the top of the stack a container of its own, in
// place, and returns it; any other value is returned as it is.
func (d *decoder) materialize() any {
	i := len(d.stack) - 1
	switch d.stack[i] {
	case emptyDict:
		d.stack[i] = &pdict{}
	case emptyList:
		d.stack[i] = &plist{}
	}
	return d.stack[i]
}

// maxMemo bounds the memo table's ids (torch numbers them from 0 up, one per string and global).
const maxMemo = 1 << 24

// Bounds on what a dump's pickle holds at once, so that memory follows what a dump can be and not
// what garbage made of one-byte opcodes asks for (each opcode can make a value of tens of bytes):
// pickle pushes a container's items in batches of 1,000 (2,000 values for a dict) after a MARK,
// one batch open per level of nesting, and values nest at most maxDepth deep.
const (
	maxStack = 1 << 16
	maxMarks = 2 * maxDepth
)

// unpickle decodes one pickle (the value STOP returns) from b. It does no more work than b's
// length allows: every opcode consumes input, and each makes at most one value. An error names
// the byte offset of the opcode that failed.
func unpickle(b []byte) (any, error) {
	d := decoder{b: b}
	v, err := d.run()
	if err != nil {
		return nil, &FormatError{Offset: int64(d.op), Reason: err.Error()}
	}
	return v, nil
}

type decoder struct {
	b     []byte
	pos   int
	op    int // the offset of the opcode being decoded
	stack []any
	marks []int
	// memo is indexed by id: a pickler numbers its memo from 0 up, one id after the other, so
	// that the table is dense (an id further ahead is refused).
	memo []any
}

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.pos {
		return nil, fmt.Errorf("opcode 0x%02x needs %d bytes, %d left: the pickle is cut", d.b[d.op], n, len(d.b)-d.pos)
	}
	s := d.b[d.pos : d.pos+n]
	d.pos += n
	return s, nil
}

func (d *decoder) pop() (any, error) {
	if len(d.stack) == 0 || (len(d.marks) > 0 && len(d.stack) == d.marks[len(d.marks)-1]) {
		return nil, fmt.Errorf("opcode 0x%02x on an empty stack", d.b[d.op])
	}
	v := d.stack[len(d.stack)-1]
	d.stack = d.stack[:len(d.stack)-1]
	return v, nil
}

// popMark returns the values pushed since the last MARK and removes them and the mark.
func (d *decoder) popMark() ([]any, error) {
	if len(d.marks) == 0 {
		return nil, fmt.Errorf("opcode 0x%02x without a MARK before it", d.b[d.op])
	}
	m := d.marks[len(d.marks)-1]
	d.marks = d.marks[:len(d.marks)-1]
	items := d.stack[m:]
	d.stack = d.stack[:m]
	return items, nil
}

func (d *decoder) top() (any, error) {
	if len(d.stack) == 0 {
		return nil, fmt.Errorf("opcode 0x%02x on an empty stack", d.b[d.op])
	}
	return d.stack[len(d.stack)-1], nil
}

func (d *decoder) run() (any, error) {
	for d.pos < len(d.b) {
		d.op = d.pos
		c := d.b[d.pos]
		d.pos++
		if c == opStop {
			v, err := d.pop()
			if err != nil {
				return nil, err
			}
			return v, nil
		}
		if err := d.step(c); err != nil {
			return nil, err
		}
		if err := d.bounded(); err != nil {
			return nil, err
		}
	}
	d.op = d.pos
	return nil, fmt.Errorf("no STOP opcode: the pickle is cut")
}

// bounded refuses, at the opcode that breaks it, a pickle that cannot be a dump: one whose first
// value is not a dict (or the OrderedDict REDUCE builds one from), or one holding more values on
// the stack or more open MARKs than a dump's nesting allows. Garbage fails within its first bytes
// instead of after it has all been decoded.
func (d *decoder) bounded() error {
	switch {
	case len(d.stack) > maxStack:
		return fmt.Errorf("more than %d values waiting on the stack: not a Flight Recorder dump", maxStack)
	case len(d.marks) > maxMarks:
		return fmt.Errorf("more than %d MARKs open at once: not a Flight Recorder dump", maxMarks)
	case len(d.stack) > 0:
		switch v := d.stack[0].(type) {
		case *pdict, global:
		case empty:
			if v != emptyDict {
				return fmt.Errorf("the dump's top level: expected a dict of its fields (entries, pg_config, …), found a %s", pickleTypeName(v))
			}
		default:
			return fmt.Errorf("the dump's top level: expected a dict of its fields (entries, pg_config, …), found a %s", pickleTypeName(v))
		}
	}
	return nil
}

// pickleTypeName names a pickle value's type as typeName names the decoded one.
func pickleTypeName(v any) string {
	switch v {
	case emptyDict:
		return "dict"
	case emptyList, emptyTuple:
		return "list"
	}
	switch v.(type) {
	case tuple, *plist:
		return "list"
	case []byte:
		return "string"
	}
	return typeName(v)
}

// step decodes one opcode other than STOP.
func (d *decoder) step(c byte) error {
	switch c {
	case opProto:
		_, err := d.take(1)
		return err
	case opFrame:
		_, err := d.take(8) // frames only group opcodes for buffering; the content follows inline
		return err
	case opMark:
		d.marks = append(d.marks, len(d.stack))
	case opPop:
		_, err := d.pop()
		return err
	case opEmptyDict:
		d.stack = append(d.stack, emptyDict)
	case opEmptyList:
		d.stack = append(d.stack, emptyList)
	case opEmptyTuple:
		d.stack = append(d.stack, emptyTuple)
	case opNone:
		d.stack = append(d.stack, nil)
	case opNewTrue, opNewFalse:
		d.stack = append(d.stack, c == opNewTrue)
	case opBinInt1, opBinInt2, opBinInt, opLong1, opBinFloat:
		return d.number(c)
	case opBinUnicode, opShortBinUnicode, opBinUnicode8, opShortBinBytes, opBinBytes:
		return d.bytes(c)
	case opTuple, opTuple1, opTuple2, opTuple3:
		return d.tuple(c)
	case opAppend, opAppends, opSetItem, opSetItems:
		return d.fill(c)
	case opBinPut, opLongBinPut, opMemoize, opBinGet, opLongBinGet:
		return d.memoOp(c)
	case opGlobal, opStackGlobal:
		return d.global(c)
	case opReduce:
		return d.reduce()
	default:
		return fmt.Errorf("opcode 0x%02x is not one a Flight Recorder dump uses", c)
	}
	return nil
}

func (d *decoder) number(c byte) error {
	switch c {
	case opBinInt1:
		b, err := d.take(1)
		if err != nil {
			return err
		}
		d.stack = append(d.stack, int64(b[0]))
	case opBinInt2:
		b, err := d.take(2)
		if err != nil {
			return err
		}
		d.stack = append(d.stack, int64(binary.LittleEndian.Uint16(b)))
	case opBinInt:
		b, err := d.take(4)
		if err != nil {
			return err
		}
		d.stack = append(d.stack, int64(int32(binary.LittleEndian.Uint32(b))))
	case opLong1:
		n, err := d.take(1)
		if err != nil {
			return err
		}
		if n[0] > 8 {
			return fmt.Errorf("LONG1 of %d bytes: integers wider than 64 bits are not a dump's", n[0])
		}
		b, err := d.take(int(n[0]))
		if err != nil {
			return err
		}
		var v int64
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | int64(b[i])
		}
		if len(b) > 0 && len(b) < 8 && b[len(b)-1]&0x80 != 0 {
			v -= 1 << (8 * len(b)) // two's complement of a shorter width
		}
		d.stack = append(d.stack, v)
	case opBinFloat:
		b, err := d.take(8)
		if err != nil {
			return err
		}
		d.stack = append(d.stack, math.Float64frombits(binary.BigEndian.Uint64(b)))
	}
	return nil
}

func (d *decoder) bytes(c byte) error {
	var n uint64
	switch c {
	case opShortBinUnicode, opShortBinBytes:
		b, err := d.take(1)
		if err != nil {
			return err
		}
		n = uint64(b[0])
	case opBinUnicode, opBinBytes:
		b, err := d.take(4)
		if err != nil {
			return err
		}
		n = uint64(binary.LittleEndian.Uint32(b))
	case opBinUnicode8:
		b, err := d.take(8)
		if err != nil {
			return err
		}
		n = binary.LittleEndian.Uint64(b)
	}
	if n > uint64(len(d.b)-d.pos) {
		return fmt.Errorf("a string of %d bytes, %d left: the pickle is cut", n, len(d.b)-d.pos)
	}
	s, _ := d.take(int(n))
	if c == opShortBinBytes || c == opBinBytes {
		d.stack = append(d.stack, append([]byte(nil), s...))
	} else {
		d.stack = append(d.stack, string(s))
	}
	return nil
}

func (d *decoder) tuple(c byte) error {
	if c == opTuple {
		items, err := d.popMark()
		if err != nil {
			return err
		}
		d.stack = append(d.stack, append(tuple(nil), items...))
		return nil
	}
	n := int(c-opTuple1) + 1
	t := make(tuple, n)
	for i := n - 1; i >= 0; i-- {
		v, err := d.pop()
		if err != nil {
			return err
		}
		t[i] = v
	}
	d.stack = append(d.stack, t)
	return nil
}

// fill appends to a list or sets a dict's items.
func (d *decoder) fill(c byte) error {
	var items []any
	var err error
	switch c {
	case opAppend:
		v, err := d.pop()
		if err != nil {
			return err
		}
		items = []any{v}
	case opSetItem:
		v, err := d.pop()
		if err != nil {
			return err
		}
		k, err := d.pop()
		if err != nil {
			return err
		}
		items = []any{k, v}
	default:
		if items, err = d.popMark(); err != nil {
			return err
		}
	}
	if _, err := d.top(); err != nil {
		return err
	}
	switch t := d.materialize().(type) {
	case *plist:
		if c == opSetItem || c == opSetItems {
			return fmt.Errorf("SETITEM(S) on a list")
		}
		t.add(items)
	case *pdict:
		if c == opAppend || c == opAppends {
			return fmt.Errorf("APPEND(S) on a dict")
		}
		if len(items)%2 != 0 {
			return fmt.Errorf("SETITEMS with an odd number of values")
		}
		for i := 0; i < len(items); i += 2 {
			t.keys = append(t.keys, items[i])
			t.vals = append(t.vals, items[i+1])
		}
	default:
		return fmt.Errorf("opcode 0x%02x on a %s, not a list or dict", c, valueKind(t))
	}
	return nil
}

// valueKind names a pickle value's Go type in a message, an empty container as the container.
func valueKind(v any) string {
	switch v {
	case emptyDict:
		return "*flightrecorder.pdict"
	case emptyList:
		return "*flightrecorder.plist"
	case emptyTuple:
		return "flightrecorder.tuple"
	}
	return fmt.Sprintf("%T", v)
}

func (d *decoder) memoOp(c byte) error {
	var id uint32
	switch c {
	case opBinPut, opBinGet:
		b, err := d.take(1)
		if err != nil {
			return err
		}
		id = uint32(b[0])
	case opLongBinPut, opLongBinGet:
		b, err := d.take(4)
		if err != nil {
			return err
		}
		id = binary.LittleEndian.Uint32(b)
	case opMemoize:
		id = uint32(len(d.memo))
	}
	if c == opBinGet || c == opLongBinGet {
		if int64(id) >= int64(len(d.memo)) {
			return fmt.Errorf("memo %d read before it was written", id)
		}
		d.stack = append(d.stack, d.memo[id])
		return nil
	}
	// The smallest value a dump memoizes, a one-byte string, takes 4 bytes with its MEMOIZE
	// (torch's dumps take about 18 per id): more ids than a quarter of the bytes is not a dump.
	if limit := min(maxMemo, len(d.b)/4+16); int(id) >= limit {
		return fmt.Errorf("memo id %d past the bound %d (a quarter of the pickle's %d bytes)", id, limit, len(d.b))
	}
	if int64(id) > int64(len(d.memo)) {
		return fmt.Errorf("memo id %d skips ahead of the %d written (a pickler numbers them in order)", id, len(d.memo))
	}
	if _, err := d.top(); err != nil {
		return err
	}
	v := d.materialize()
	if int(id) == len(d.memo) {
		d.memo = append(d.memo, v)
	} else {
		d.memo[id] = v
	}
	return nil
}

func (d *decoder) global(c byte) error {
	if c == opStackGlobal {
		name, err := d.pop()
		if err != nil {
			return err
		}
		mod, err := d.pop()
		if err != nil {
			return err
		}
		ms, ok1 := mod.(string)
		ns, ok2 := name.(string)
		if !ok1 || !ok2 {
			return fmt.Errorf("STACK_GLOBAL of a %s and a %s, not two strings", valueKind(mod), valueKind(name))
		}
		d.stack = append(d.stack, global{ms, ns})
		return nil
	}
	var parts [2]string
	for i := range parts {
		end := d.pos
		for end < len(d.b) && d.b[end] != '\n' && end-d.pos < 256 {
			end++
		}
		if end >= len(d.b) || d.b[end] != '\n' {
			return fmt.Errorf("GLOBAL's name is not a line")
		}
		parts[i] = string(d.b[d.pos:end])
		d.pos = end + 1
	}
	d.stack = append(d.stack, global{parts[0], parts[1]})
	return nil
}

// reduce calls one of the few functions torch's pickler names: the type tag and typed-list
// builders wrap a container and give it back; OrderedDict() is an empty dict.
func (d *decoder) reduce() error {
	args, err := d.pop()
	if err != nil {
		return err
	}
	fn, err := d.pop()
	if err != nil {
		return err
	}
	g, ok := fn.(global)
	if !ok {
		return fmt.Errorf("REDUCE calls a %s, not a global", valueKind(fn))
	}
	a, ok := args.(tuple)
	if args == emptyTuple {
		a, ok = nil, true
	}
	if !ok {
		return fmt.Errorf("REDUCE of %s.%s with %s arguments, not a tuple", g.module, g.name, valueKind(args))
	}
	switch g.module + "." + g.name {
	case "torch.jit._pickle.restore_type_tag", "torch.jit._pickle.build_intlist", "torch.jit._pickle.build_doublelist",
		"torch.jit._pickle.build_boollist", "torch.jit._pickle.build_tensorlist":
		if len(a) == 0 {
			return fmt.Errorf("%s.%s without arguments", g.module, g.name)
		}
		d.stack = append(d.stack, a[0])
	case "collections.OrderedDict":
		d.stack = append(d.stack, emptyDict)
	default:
		return fmt.Errorf("REDUCE calls %s.%s, which a Flight Recorder dump does not", g.module, g.name)
	}
	return nil
}

// maxDepth bounds how deep a dump's values nest (a dump nests four levels: the dump, entries, an
// entry, its sizes); deeper, or a container that holds itself, is refused.
const maxDepth = 16
