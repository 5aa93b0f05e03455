package kineto

import (
	"encoding/binary"
	"math/bits"
)

// Shapes: the events of a trace are written by one profiler and come in a few shapes, the same
// keys in the same order with the same punctuation and white space between the values. An event
// the fast path reads is learnt as its shape: the bytes between its values (literals: keys,
// colons, commas, braces, white space, the args object's braces), each followed by the reader of
// the value after it (the field or arg its key names). The shapes learnt form a tree from the
// event's brace, a node per literal and value, so that shapes that begin alike share their
// beginning; an event is then read by following the tree, comparing a literal as one or two
// words and reading a value where the fast path would have: the scanning for white space, the
// matching of keys and the dispatch on them are done once per shape instead of once per event.
//
// An event read by a shape is read as the fast path reads it: the literals are bytes that the fast
// path read, in the same state, and each value is read, at the same place, by the function the
// fast path calls for it or, for the commonest (shapeValue), as that function reads it. Where the event parts from every shape learnt (another key, other
// white space, a value that turns out not to be of the fast path's), it is read again by the
// fast path from its first byte (and learnt), as the general path reads what the fast path
// gives up on. FuzzFastPath checks that every path reads the same events.

// Bounds on what is learnt, so that a trace whose events all differ costs a bounded memory and
// stops being learnt: past them an event not of a shape learnt goes the fast path's way.
const (
	maxShapeNodes  = 1 << 10 // nodes of the tree
	maxShapeLit    = 1 << 8  // bytes of one literal
	maxShapeValues = 64      // values of one event
	maxShapeKids   = 16      // shapes that part at one node
)

// Readers of the value after a literal: slotEnd (the literal closes the event), a field of the
// event (fieldOther to fieldArgs: fastEventField), or slotArg plus an arg (fastArgValue).
const (
	slotArg = 16
	slotEnd = 0xff
)

// shapeNode is a literal and the reader of the value after it, and the nodes that may follow.
type shapeNode struct {
	lit          string
	head0, head1 uint64 // lit's first sixteen bytes as little-endian words, masked to its length
	mask0, mask1 uint64
	slot         uint8
	next         []*shapeNode
}

// shapes is the tree of a file's shapes, and the values of the event being read the fast way,
// noted to learn its shape.
type shapes struct {
	root  []*shapeNode
	nodes int
	full  bool // nothing more is learnt
	from  int  // the index of the brace of the event being read the fast way
	vals  []shapeValue
	// Events read by a shape and not, since nothing more is learnt: a file of more shapes than
	// the tree holds stops trying them once most events are of none (each is read twice then).
	hits, misses int
}

// shapeValue is a value of the event being read: where it lies, and its reader.
type shapeValue struct {
	start, end int
	slot       uint8
}

// start begins noting the values of the event at b[from], which no shape read.
func (sh *shapes) start(from int) {
	sh.from, sh.vals = from, sh.vals[:0]
	if sh.full && len(sh.root) > 0 {
		if sh.misses++; sh.misses >= 256 && sh.misses > sh.hits {
			sh.root = nil // not a trace of few shapes
		}
	}
}

// note notes a value of the event being read.
func (sh *shapes) note(start, end int, slot uint8) {
	if !sh.full && len(sh.vals) <= maxShapeValues {
		sh.vals = append(sh.vals, shapeValue{start, end, slot})
	}
}

// learn adds the shape of the event read the fast way, which ended at b[end], to the tree.
func (sh *shapes) learn(b []byte, end int) {
	if sh.full || len(sh.vals) > maxShapeValues {
		return
	}
	kids := &sh.root
	prev := sh.from
	for k := 0; k <= len(sh.vals); k++ {
		lit, slot, after := b[prev:end], uint8(slotEnd), end
		if k < len(sh.vals) {
			v := sh.vals[k]
			lit, slot, after = b[prev:v.start], v.slot, v.end
		}
		if len(lit) > maxShapeLit {
			return
		}
		var n *shapeNode
		for _, c := range *kids {
			if c.slot == slot && c.lit == string(lit) {
				n = c
				break
			}
		}
		if n == nil {
			if len(*kids) >= maxShapeKids || sh.nodes >= maxShapeNodes {
				sh.full, sh.hits, sh.misses = true, 0, 0
				return
			}
			n = newShapeNode(string(lit), slot)
			*kids = append(*kids, n)
			sh.nodes++
		}
		kids, prev = &n.next, after
	}
}

func newShapeNode(lit string, slot uint8) *shapeNode {
	n := &shapeNode{lit: lit, slot: slot}
	var w [16]byte
	copy(w[:], lit)
	n.head0, n.head1 = binary.LittleEndian.Uint64(w[:]), binary.LittleEndian.Uint64(w[8:])
	n.mask0, n.mask1 = lowBytes(len(lit)), lowBytes(len(lit)-8)
	return n
}

// lowBytes is the mask of a word's first n bytes (none when n <= 0, all when n >= 8).
func lowBytes(n int) uint64 {
	switch {
	case n <= 0:
		return 0
	case n >= 8:
		return ^uint64(0)
	}
	return 1<<(8*n) - 1
}

// at reports whether b[i:] starts with the node's literal.
func (n *shapeNode) at(b []byte, i int) bool {
	if len(b)-i < 16 {
		return len(b)-i >= len(n.lit) && string(b[i:i+len(n.lit)]) == n.lit
	}
	if binary.LittleEndian.Uint64(b[i:])&n.mask0 != n.head0 || binary.LittleEndian.Uint64(b[i+8:])&n.mask1 != n.head1 {
		return false
	}
	return len(n.lit) <= 16 || len(b)-i >= len(n.lit) && string(b[i+16:i+len(n.lit)]) == n.lit[16:]
}

// shapedEvent reads the event at b[i] (its brace) by the shapes learnt into d.ev, reporting
// whether it did; when it did not, the scanner has not moved.
func (d *decoder) shapedEvent(b []byte, i int, index int64) bool {
	kids := d.shapes.root
	if len(kids) == 0 {
		return false
	}
	e := &d.ev
	e.reset(index)
	e.Name, e.Pid, e.Tid = nil, nil, nil
	for {
		var n *shapeNode
		if len(b)-i >= 16 {
			// The next sixteen bytes, loaded once for all the nodes that may follow.
			w0, w1 := binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint64(b[i+8:])
			for _, c := range kids {
				if w0&c.mask0 == c.head0 && w1&c.mask1 == c.head1 && (len(c.lit) <= 16 || c.at(b, i)) {
					n = c
					break
				}
			}
		} else {
			for _, c := range kids {
				if c.at(b, i) {
					n = c
					break
				}
			}
		}
		if n == nil {
			return false
		}
		i += len(n.lit)
		if n.slot == slotEnd {
			d.s.pos = i
			d.shapes.hits++
			if d.shapedEvents != nil {
				*d.shapedEvents++
			}
			return true
		}
		if i >= len(b) {
			return false
		}
		var ok bool
		if i, ok = d.shapeValue(b, n.slot, i); !ok {
			return false
		}
		kids = n.next
	}
}

// shapeValue reads the value at b[i] (i < len(b)) of a shape's slot, as fastEventField or
// fastArgValue does, and returns the index after it. The values most events hold (a phase's
// letter, a string without escapes, a small integer) are read here, in one call, rather than
// through the fast path's readers two or three calls deep (each call spills what the caller
// holds in registers); each is taken only where that reader would read it to the same
// result, and anything else goes to the reader.
func (d *decoder) shapeValue(b []byte, slot uint8, i int) (int, bool) {
	e := &d.ev
	switch slot {
	case fieldPh:
		if len(b)-i >= 3 && b[i] == '"' && b[i+2] == '"' && b[i+1] >= 0x20 && b[i+1] != '"' && b[i+1] != '\\' && d.s.maxToken >= 3 {
			e.Ph = b[i+1]
			return i + 3, true
		}
	case fieldCat, fieldName:
		if b[i] != '"' {
			break
		}
		// The string ends at its first quote, backslash or control byte: strStop's vectors in
		// a build that has them (vectorScan), else its words here, without the call.
		if vectorScan {
			j := strStop(b, i+1)
			if j >= len(b) || b[j] != '"' || j+1-i > d.s.maxToken {
				break
			}
			if slot == fieldCat {
				e.Cat = category(b[i+1 : j])
			} else {
				e.Name = d.take(e.Name, &d.name, b[i+1:j:j])
			}
			return j + 1, true
		}
		for j := i + 1; j+8 <= len(b); j += 8 {
			v := binary.LittleEndian.Uint64(b[j:])
			q, bs := v^(ones*'"'), v^(ones*'\\')
			m := ((q - ones) &^ q) | ((bs - ones) &^ bs) | ((v - ones*0x20) &^ v)
			if m &= highs; m != 0 {
				j += bits.TrailingZeros64(m) / 8
				if b[j] != '"' || j+1-i > d.s.maxToken {
					break
				}
				if slot == fieldCat {
					e.Cat = category(b[i+1 : j])
				} else {
					e.Name = d.take(e.Name, &d.name, b[i+1:j:j])
				}
				return j + 1, true
			}
		}
	case fieldTs, fieldDur:
		if ns, ok, end, read := d.fastTime(b, i); read && ok && !d.floats {
			if slot == fieldTs {
				e.Ts, e.TsF, e.HasTs, e.BadTs = ns, 0, true, false
			} else {
				e.Dur, e.DurF, e.HasDur, e.BadDur = ns, 0, true, false
			}
			return end, true
		}
	case fieldOther, slotArg + argOther:
		// A value the importer does not read (an arg such as "External id" or "grid", a field
		// such as "id"): skipped as fastEventField and fastArgValue skip it, without the two
		// calls between.
		return d.fastSkip(b, i)
	case fieldPid, fieldTid, slotArg + argDevice, slotArg + argStream, slotArg + argCorrelation, slotArg + argBytes,
		slotArg + argInNelems, slotArg + argOutNelems, slotArg + argGroupSize:
		// fastInt's plain integer, not negative: its digits, no leading zero, and after them no
		// byte that would make it another number (a digit past the eighteenth included).
		j, v := i, int64(0)
		for j < len(b) && j-i < 18 && b[j]-'0' < 10 {
			v = v*10 + int64(b[j]-'0')
			j++
		}
		if j == i || j >= len(b) || j-i > 1 && b[i] == '0' || j-i > d.s.maxToken || numberByte(b[j]) {
			break
		}
		switch slot {
		case fieldPid:
			e.Pid = d.take(e.Pid, &d.pid, b[i:j:j])
		case fieldTid:
			e.Tid = d.take(e.Tid, &d.tid, b[i:j:j])
		default:
			d.setArg(slot-slotArg, v)
		}
		return j, true
	}
	if slot < slotArg {
		return d.fastEventField(b, int(slot), i)
	}
	return d.fastArgValue(b, int(slot-slotArg), i)
}

// numberByte tells whether c may continue a number: after an integer's digits, one of these
// makes it a fraction, an exponent or something the general path reports.
func numberByte(c byte) bool {
	return c-'0' < 10 || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// setArg sets an integer arg, as fastArgValue does for one read by fastInt.
func (d *decoder) setArg(arg uint8, v int64) {
	a := &d.ev.Args
	bit, dst := a.intArg(int(arg))
	*dst = v
	a.Has |= bit
}
