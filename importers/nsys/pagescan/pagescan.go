package pagescan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

// ErrUnsupported is returned when a file or table holds what the scanner does not read (a WAL
// file, a table without rowid, a needed column that is not an integer or NULL, or that lies on an
// overflow page): SQL reads it.
var ErrUnsupported = errors.New("not readable from its pages")

// CorruptError tells where a file's pages do not parse.
type CorruptError struct {
	Page   uint32 // the page, counting from 1
	Reason string
}

func (e *CorruptError) Error() string { return fmt.Sprintf("page %d: %s", e.Page, e.Reason) }

// TruncatedError is a file shorter than its header says it is: Pages pages of PageSize bytes,
// of which the file holds Size bytes (a copy cut short, a download not finished).
type TruncatedError struct {
	Size     int64
	Pages    uint32
	PageSize int
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("truncated: %d bytes of the %d its header gives (%d pages of %d bytes; is the copy complete?)",
		e.Size, int64(e.Pages)*int64(e.PageSize), e.Pages, e.PageSize)
}

// Page types of table b-trees.
const (
	interiorTable = 0x05
	leafTable     = 0x0D
	headerSize    = 100 // the database header, at the start of page 1
	maxDepth      = 20  // SQLite's BTCURSOR_MAX_DEPTH
)

// File is an SQLite file opened for scanning: its own reader of a Source's pages. It is not safe for
// concurrent use; the Files of one Source are, each on its own goroutine.
type File struct {
	src      *Source
	own      bool // the File opened its Source, and closes it
	name     string
	pageSize int
	usable   int    // page size less the bytes reserved at the end of each page
	pages    uint32 // pages in the file
	data     []byte // the whole file when the Source holds it; else pages come from cache
	cache    blockCache
	spill    []byte // a record assembled from its overflow pages (Cursor.Overflow)
	scratch  []byte // an overflow page read past the cache
}

// Open opens an SQLite file and reads its header: a File on a Source of its own, read through a
// cache of blocks.
func Open(path string) (*File, error) {
	s, err := OpenSource(path, 0)
	if err != nil {
		return nil, err
	}
	f := s.File()
	f.own = true
	return f, nil
}

// parseHeader checks the database header of a file of size bytes.
func parseHeader(h []byte, size int64) (*Source, error) {
	if string(h[:16]) != "SQLite format 3\x00" {
		return nil, fmt.Errorf("not an SQLite file: %w", ErrUnsupported)
	}
	ps := int(binary.BigEndian.Uint16(h[16:]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		return nil, &CorruptError{Page: 1, Reason: fmt.Sprintf("page size %d", ps)}
	}
	if h[18] != 1 || h[19] != 1 {
		// 2 is WAL: the latest pages may be in the -wal file.
		return nil, fmt.Errorf("journal mode versions %d/%d: %w", h[18], h[19], ErrUnsupported)
	}
	usable := ps - int(h[20])
	if usable < 480 {
		return nil, &CorruptError{Page: 1, Reason: fmt.Sprintf("%d bytes reserved per page", h[20])}
	}
	// The database's size in pages (offset 28) is valid when it is not 0 and the change counter
	// (24) equals the version it is valid for (92), as SQLite reads it; a file shorter than that
	// was cut short, which SQLite reports only as "database disk image is malformed" when a read
	// reaches a missing page.
	if n := binary.BigEndian.Uint32(h[28:]); n > 0 && string(h[24:28]) == string(h[92:96]) && int64(n)*int64(ps) > size {
		return nil, &TruncatedError{Size: size, Pages: n, PageSize: ps}
	}
	// The text encoding: 1 is UTF-8 (0, a database not yet written); texts in UTF-16 are not read.
	enc := binary.BigEndian.Uint32(h[56:])
	return &Source{pageSize: ps, usable: usable, pages: uint32(min(size/int64(ps), 1<<31)), utf16: enc > 1}, nil
}

// Close releases the File, handing its cache's blocks on to the next File opened (and closes its
// Source when Open opened it).
func (f *File) Close() error {
	f.cache.release()
	if f.own {
		return f.src.Close()
	}
	return nil
}

// page returns page pg (from 1), valid until the next call.
func (f *File) page(pg uint32) ([]byte, error) {
	if f.data != nil {
		at := int64(pg-1) * int64(f.pageSize)
		if at+int64(f.pageSize) > int64(len(f.data)) {
			return nil, &CorruptError{Page: pg, Reason: "beyond the end of the file"}
		}
		return f.data[at : at+int64(f.pageSize)], nil
	}
	return f.cache.page(pg)
}

// Row is one row of a scan: its rowid and the values of the columns asked for, in the order asked
// (a NULL is 0 with its Null set; a text column's value is in Text, nil for a NULL).
type Row struct {
	Rowid int64
	Ints  []int64
	Null  []bool
	Text  [][]byte
}

// Column is a column a scan reads: its position in the record (from 0), and whether it holds text
// (a text or NULL; else an integer or NULL).
type Column struct {
	Pos  int
	Text bool
}

// Scan calls fn with each row of the table whose b-tree starts at page root, in rowid order, with
// the values of the integer record columns cols (distinct positions in the record, from 0; a column
// past the end of a record is NULL, as it is for a column added later without a default). The Row is
// reused once fn returns. It stops at fn's first error and returns it.
func (f *File) Scan(root uint32, cols []int, fn func(r *Row) error) error {
	cc := make([]Column, len(cols))
	for i, c := range cols {
		cc[i] = Column{Pos: c}
	}
	c, err := f.Rows(root, cc)
	if err != nil {
		return err
	}
	for c.Next() {
		if err := fn(c.Row()); err != nil {
			return err
		}
	}
	return c.Err()
}

// Cursor reads a table's rows one at a time, in rowid order: Next, then Row, until Next reports
// false; then Err tells whether the rows ended or a page did not parse. It reads the File's pages
// and must not be used beside another reader of the same File.
type Cursor struct {
	// Overflow has a record that spills to overflow pages read from them (up to 16 MiB), rather
	// than refused when a column asked for lies there.
	Overflow bool
	f        *File
	need     int    // columns of the record to decode: the last one asked for, plus one
	slot     []int  // by record column: where its value goes in the Row, or -1
	text     []bool // by column asked for: read as text
	row      Row
	plans    []plan  // the headers read, by planSlot (made with the first)
	last     int     // the plan used last
	fresh    []place // the header being read
	err      error
	root     uint32
	begun    bool
	// The interior pages above the current leaf: the children of each and the next one to read.
	stack   []frame
	leaf    []byte // the current leaf page (usable bytes), valid until the next page is read
	leafPg  uint32
	ptrs    int // where the leaf's cell pointers start
	cell, n int // the next cell of the leaf, and how many it has
	visited uint32
}

type frame struct {
	children []uint32
	next     int
}

// Rows opens a cursor on the table whose b-tree starts at page root, reading the record columns
// cols (distinct positions; a column past the end of a record is NULL, as it is for a column added
// later without a default).
func (f *File) Rows(root uint32, cols []Column) (*Cursor, error) {
	c := &Cursor{f: f, root: root, row: Row{Ints: make([]int64, len(cols)), Null: make([]bool, len(cols)), Text: make([][]byte, len(cols))}}
	for _, col := range cols {
		if col.Pos < 0 || col.Pos > 1<<15 {
			return nil, fmt.Errorf("column %d: not a column of a record", col.Pos)
		}
		if col.Text && f.src.utf16 {
			return nil, fmt.Errorf("texts in UTF-16: %w", ErrUnsupported)
		}
		c.need = max(c.need, col.Pos+1)
	}
	c.slot, c.text, c.fresh = make([]int, c.need), make([]bool, len(cols)), make([]place, len(cols))
	for i := range c.slot {
		c.slot[i] = -1
	}
	for i, col := range cols {
		if c.slot[col.Pos] >= 0 {
			return nil, fmt.Errorf("column %d asked for twice", col.Pos)
		}
		c.slot[col.Pos], c.text[i] = i, col.Text
	}
	return c, nil
}

// Row is the row Next moved to; it and its texts are valid until the next call to Next.
func (c *Cursor) Row() *Row { return &c.row }

// Err is why Next reported false: nil at the end of the rows.
func (c *Cursor) Err() error { return c.err }

// Next moves to the next row, reporting false at the end or at an error (Err).
func (c *Cursor) Next() bool {
	if c.err != nil {
		return false
	}
	for c.cell >= c.n {
		if !c.nextLeaf() {
			return false
		}
	}
	off := int(binary.BigEndian.Uint16(c.leaf[c.ptrs+2*c.cell:]))
	c.cell++
	if err := c.leafCell(c.leafPg, c.leaf, off); err != nil {
		c.err = err
		return false
	}
	return true
}

// nextLeaf moves to the next leaf page of the b-tree, reporting false at its end or at an error.
func (c *Cursor) nextLeaf() bool {
	pg := c.root
	if c.begun {
		for len(c.stack) > 0 && c.stack[len(c.stack)-1].next >= len(c.stack[len(c.stack)-1].children) {
			c.stack = c.stack[:len(c.stack)-1]
		}
		if len(c.stack) == 0 {
			return false
		}
		top := &c.stack[len(c.stack)-1]
		pg = top.children[top.next]
		top.next++
	}
	c.begun = true
	for {
		leaf, err := c.load(pg, len(c.stack))
		if err != nil {
			c.err = err
			return false
		}
		if leaf {
			return true
		}
		top := &c.stack[len(c.stack)-1]
		pg = top.children[0]
		top.next = 1
	}
}

// load reads page pg, depth pages below the root: a leaf becomes the current leaf (true); an
// interior page's children are pushed on the stack.
func (c *Cursor) load(pg uint32, depth int) (bool, error) {
	if depth >= maxDepth {
		return false, &CorruptError{Page: pg, Reason: "b-tree deeper than 20 pages"}
	}
	if pg < 1 || pg > c.f.pages {
		return false, &CorruptError{Page: pg, Reason: fmt.Sprintf("page number beyond the %d pages of the file", c.f.pages)}
	}
	if c.visited++; c.visited > c.f.pages {
		return false, &CorruptError{Page: pg, Reason: "more pages visited than the file holds (a loop)"}
	}
	page, err := c.f.page(pg)
	if err != nil {
		return false, err
	}
	page = page[:c.f.usable]
	hdr := 0
	if pg == 1 {
		hdr = headerSize
	}
	if hdr+8 > len(page) {
		return false, &CorruptError{Page: pg, Reason: "page shorter than its header"}
	}
	typ := page[hdr]
	n := int(binary.BigEndian.Uint16(page[hdr+3:]))
	switch typ {
	case leafTable:
		ptrs := hdr + 8
		if ptrs+2*n > len(page) {
			return false, &CorruptError{Page: pg, Reason: fmt.Sprintf("%d cells do not fit", n)}
		}
		// The page is the cache's: no other page is read until the leaf's cells are.
		c.leaf, c.leafPg, c.ptrs, c.cell, c.n = page, pg, ptrs, 0, n
		return true, nil
	case interiorTable:
		ptrs := hdr + 12
		if ptrs+2*n > len(page) {
			return false, &CorruptError{Page: pg, Reason: fmt.Sprintf("%d cells do not fit", n)}
		}
		right := binary.BigEndian.Uint32(page[hdr+8:])
		// The page may be evicted while its children are read: keep its child pointers, in a
		// frame whose slice is reused from one page to the next at this depth.
		if depth == len(c.stack) && depth < cap(c.stack) {
			c.stack = c.stack[:depth+1]
		} else {
			c.stack = append(c.stack, frame{})
		}
		fr := &c.stack[depth]
		children := fr.children[:0]
		for i := range n {
			off := int(binary.BigEndian.Uint16(page[ptrs+2*i:]))
			if off < ptrs+2*n || off+4 > len(page) {
				c.stack = c.stack[:depth]
				return false, &CorruptError{Page: pg, Reason: fmt.Sprintf("cell %d at offset %d", i, off)}
			}
			children = append(children, binary.BigEndian.Uint32(page[off:]))
		}
		fr.children, fr.next = append(children, right), 0
		return false, nil
	case 0x02, 0x0A:
		return false, fmt.Errorf("page %d: an index b-tree (a table without rowid): %w", pg, ErrUnsupported)
	}
	return false, &CorruptError{Page: pg, Reason: fmt.Sprintf("page type %#x", typ)}
}

// leafCell reads the cell at off of leaf page pg into the row.
func (c *Cursor) leafCell(pg uint32, page []byte, off int) error {
	bad := func(what string) error {
		return &CorruptError{Page: pg, Reason: fmt.Sprintf("cell at offset %d: %s", off, what)}
	}
	if off < 8 || off >= len(page) {
		return bad("outside the page")
	}
	p := page[off:]
	var size uint64
	n := 1
	if p[0] < 0x80 { // inline: most payloads are shorter than 128 bytes
		size = uint64(p[0])
	} else if size, n = varint(p); n == 0 {
		return bad("payload size")
	}
	p = p[n:]
	rowid, n := varint(p)
	if n == 0 {
		return bad("rowid")
	}
	p = p[n:]
	local := c.f.localPayload(size)
	if local > int64(len(p)) {
		return bad("payload beyond the page")
	}
	payload, spilled := p[:local], local < int64(size)
	if spilled && c.Overflow {
		full, err := c.f.assemble(pg, p, local, size)
		if err != nil {
			return err
		}
		payload, spilled = full, false
	}
	c.row.Rowid = int64(rowid)
	if err := c.record(payload, spilled); err != nil {
		if errors.Is(err, ErrUnsupported) {
			return fmt.Errorf("page %d: row %d: %w", pg, int64(rowid), err)
		}
		return bad(err.Error())
	}
	return nil
}

// localPayload is how many bytes of a payload of size bytes a table leaf cell holds on its page.
func (f *File) localPayload(size uint64) int64 {
	u := int64(f.usable)
	x := u - 35
	if size <= uint64(x) {
		return int64(size)
	}
	m := (u-12)*32/255 - 23
	k := m + int64((size-uint64(m))%uint64(u-4))
	if k <= x {
		return k
	}
	return m
}

// record decodes the columns asked for from a record's local payload; spilled tells that the rest
// of the record is on overflow pages.
func (c *Cursor) record(payload []byte, spilled bool) error {
	var hsize uint64
	n := 1
	if len(payload) > 0 && payload[0] < 0x80 { // inline: a header is mostly shorter than 128 bytes
		hsize = uint64(payload[0])
	} else {
		hsize, n = varint(payload)
	}
	if n == 0 || hsize > uint64(len(payload)) {
		if spilled {
			return ErrUnsupported
		}
		return errors.New("record header beyond the payload")
	}
	if hsize < uint64(n) {
		return errors.New("record header shorter than its size")
	}
	hdr, body := payload[n:hsize], payload[hsize:]
	if !spilled {
		// Rows of a table repeat a few headers (the same types and widths; a text's length is in
		// its type): a header met before is decoded as it was then, without walking it again. The
		// last one first (a table's rows mostly repeat one), then the one kept in its slot.
		if key := payload[:hsize]; c.plans != nil {
			if p := &c.plans[c.last]; p.used && string(p.hdr) == string(key) {
				c.apply(p, body)
				return nil
			}
			if k := planSlot(key); c.plans[k].used && string(c.plans[k].hdr) == string(key) {
				c.apply(&c.plans[k], body)
				c.last = k
				return nil
			}
		}
	}
	ints, null, slots, text, fresh := c.row.Ints, c.row.Null, c.slot, c.text, c.fresh
	var at uint64 // where column k's value is in body: the sum of the sizes of those before it
	k := 0
	for ; k < len(slots) && len(hdr) > 0; k++ {
		var t uint64
		if hdr[0] < 0x80 {
			t, hdr = uint64(hdr[0]), hdr[1:]
		} else {
			var n int
			if t, n = varint(hdr); n == 0 {
				return errors.New("serial type")
			}
			hdr = hdr[n:]
		}
		var sz uint64
		if t < 12 {
			if t == 10 || t == 11 {
				return errors.New("reserved serial type")
			}
			sz = uint64(smallSizes[t])
		} else {
			sz = (t - 12) >> 1
		}
		if i := slots[k]; i >= 0 {
			fresh[i] = place{t: t, at: at, sz: sz}
			if text[i] || t < 1 || t > 6 || at >= uint64(len(body)) || sz > uint64(len(body))-at {
				if err := c.value(i, t, sz, body, at, spilled); err != nil {
					return err
				}
			} else {
				// The common case, inline: a big-endian two's complement integer of 1 to 8 bytes.
				b := body[at : at+sz]
				v := int64(int8(b[0]))
				for _, x := range b[1:] {
					v = v<<8 | int64(x)
				}
				ints[i], null[i] = v, false
			}
		}
		at += min(sz, math.MaxUint64-at) // saturating: a damaged size may be near 2^64
	}
	for ; k < c.need; k++ { // past the end of the record
		if i := c.slot[k]; i >= 0 {
			c.row.Ints[i], c.row.Null[i], c.row.Text[i] = 0, true, nil
			fresh[i] = place{}
		}
	}
	if !spilled && hsize <= maxPlanHeader {
		// Keep how this header was read, in its slot (in place of the one there).
		if c.plans == nil {
			c.plans = make([]plan, planSlots)
		}
		k := planSlot(payload[:hsize])
		p := &c.plans[k] // its slices are reused
		p.hdr = append(p.hdr[:0], payload[:hsize]...)
		p.at = append(p.at[:0], fresh...)
		p.used = true
		c.last = k
	}
	return nil
}

// planSlots is how many headers a Cursor keeps plans for: a table of texts has a header for each
// length of its texts.
const planSlots = 64

// planSlot is where a header's plan is kept: a hash of its bytes, eight at a time (a byte at a time,
// the hash of a row's header cost as much as reading the row's values).
func planSlot(hdr []byte) int {
	const k = 0x9E3779B97F4A7C15
	n := len(hdr)
	h := uint64(n) * k
	if n < 8 {
		var w uint64
		for i, b := range hdr {
			w |= uint64(b) << (8 * i)
		}
		h = (h ^ w) * k
	} else {
		for i := 0; i+8 < n; i += 8 {
			h = (h ^ binary.LittleEndian.Uint64(hdr[i:])) * k
		}
		h = (h ^ binary.LittleEndian.Uint64(hdr[n-8:])) * k // the last eight, overlapping
	}
	h = (h ^ h>>32) * k // a multiply moves a byte's bits up only: fold the high half down, mix again
	return int(h >> 58) // 64 slots
}

// place is where a column's value is in a record's body, and its serial type (0 for a column past
// the end of the record).
type place struct {
	t, at, sz uint64
}

// plan is how a record header was read: where each column asked for is, for the next record with
// the same header (the same types, so the same sizes and offsets; its values were all read without
// error, so they will be again).
type plan struct {
	hdr  []byte
	at   []place // by column asked for
	used bool
}

// maxPlanHeader bounds the headers a Cursor keeps plans for.
const maxPlanHeader = 256

// apply reads the columns asked for from a record's body as plan p says.
func (c *Cursor) apply(p *plan, body []byte) {
	ints, null, text := c.row.Ints, c.row.Null, c.text
	for i, pl := range p.at {
		switch {
		case pl.t == 0:
			ints[i], null[i], c.row.Text[i] = 0, true, nil
		case text[i]:
			c.row.Text[i], null[i] = body[pl.at:pl.at+pl.sz:pl.at+pl.sz], false
		case pl.t == 8 || pl.t == 9:
			ints[i], null[i] = int64(pl.t-8), false
		default:
			b := body[pl.at : pl.at+pl.sz]
			v := int64(int8(b[0]))
			for _, x := range b[1:] {
				v = v<<8 | int64(x)
			}
			ints[i], null[i] = v, false
		}
	}
}

// value reads the value of column i of the row, of serial type t and sz bytes at offset at of body,
// other than an integer on the page (record's own case).
func (c *Cursor) value(i int, t, sz uint64, body []byte, at uint64, spilled bool) error {
	if c.text[i] {
		v, null, err := textValue(t, sz, body, at, spilled)
		c.row.Text[i], c.row.Null[i] = v, null
		return err
	}
	v, null, err := intValue(t, sz, body, at, spilled)
	c.row.Ints[i], c.row.Null[i] = v, null
	return err
}

// smallSizes are the sizes of the serial types below 12.
var smallSizes = [12]uint8{0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0}

// intValue reads the value of serial type t, of sz bytes, at offset at of body: an integer or
// NULL, else ErrUnsupported.
func intValue(t, sz uint64, body []byte, at uint64, spilled bool) (int64, bool, error) {
	switch {
	case t == 0:
		return 0, true, nil
	case t == 8:
		return 0, false, nil
	case t == 9:
		return 1, false, nil
	case t > 6:
		return 0, false, fmt.Errorf("a value of serial type %d, not an integer: %w", t, ErrUnsupported)
	case at > uint64(len(body)) || sz > uint64(len(body))-at:
		if spilled {
			return 0, false, ErrUnsupported
		}
		return 0, false, errors.New("value beyond the payload")
	}
	b := body[at : at+sz]
	switch t { // big-endian two's complement of 1, 2, 3, 4, 6 and 8 bytes
	case 1:
		return int64(int8(b[0])), false, nil
	case 2:
		return int64(int16(binary.BigEndian.Uint16(b))), false, nil
	case 3:
		return int64(int8(b[0]))<<16 | int64(b[1])<<8 | int64(b[2]), false, nil
	case 4:
		return int64(int32(binary.BigEndian.Uint32(b))), false, nil
	case 5:
		return int64(int16(binary.BigEndian.Uint16(b)))<<32 | int64(binary.BigEndian.Uint32(b[2:])), false, nil
	}
	return int64(binary.BigEndian.Uint64(b)), false, nil
}

// textValue reads the value of serial type t, of sz bytes, at offset at of body: a text or NULL,
// else ErrUnsupported (an integer, a real or a blob, which SQL would convert).
func textValue(t, sz uint64, body []byte, at uint64, spilled bool) ([]byte, bool, error) {
	switch {
	case t == 0:
		return nil, true, nil
	case t < 13 || t%2 == 0:
		return nil, false, fmt.Errorf("a value of serial type %d, not a text: %w", t, ErrUnsupported)
	case at > uint64(len(body)) || sz > uint64(len(body))-at:
		if spilled {
			return nil, false, fmt.Errorf("a text on overflow pages: %w", ErrUnsupported)
		}
		return nil, false, errors.New("value beyond the payload")
	}
	return body[at : at+sz : at+sz], false, nil
}

// varint decodes an SQLite varint (1 to 9 bytes, big-endian, 7 bits a byte but 8 in the ninth),
// returning its length, 0 when p ends first.
func varint(p []byte) (uint64, int) {
	if len(p) > 0 && p[0] < 0x80 {
		return uint64(p[0]), 1
	}
	var v uint64
	for i := 0; i < 8; i++ {
		if i >= len(p) {
			return 0, 0
		}
		v = v<<7 | uint64(p[i]&0x7F)
		if p[i] < 0x80 {
			return v, i + 1
		}
	}
	if len(p) < 9 {
		return 0, 0
	}
	return v<<8 | uint64(p[8]), 9
}

// blockCache reads pages a block of blockPages at a time and keeps the last cacheBlocks blocks:
// a table written in one go lies in consecutive pages, so most pages come from a block read
// already, and a table interleaved with others still finds its blocks within the cache.
type blockCache struct {
	r        io.ReaderAt
	pageSize int
	blocks   [cacheBlocks]block
	next     int // the slot the next block read goes to
}

const (
	blockPages  = 16
	cacheBlocks = 32
)

type block struct {
	first uint32 // the block's first page; 0: none
	pages int    // pages read into data
	data  []byte
}

func newBlockCache(r io.ReaderAt, pageSize int) blockCache {
	return blockCache{r: r, pageSize: pageSize}
}

// page returns page pg (from 1), the cache's own bytes, valid until the next call.
func (c *blockCache) page(pg uint32) ([]byte, error) {
	first := (pg-1)/blockPages*blockPages + 1
	for i := range c.blocks {
		b := &c.blocks[i]
		if b.first == first && int(pg-first) < b.pages {
			at := int(pg-first) * c.pageSize
			return b.data[at : at+c.pageSize], nil
		}
	}
	b := &c.blocks[c.next]
	c.next = (c.next + 1) % cacheBlocks
	if b.data == nil {
		b.data = getBlock(blockPages * c.pageSize)
	}
	n, err := c.r.ReadAt(b.data, int64(first-1)*int64(c.pageSize))
	b.first, b.pages = first, n/c.pageSize
	if int(pg-first) >= b.pages {
		b.first = 0
		if err == nil || errors.Is(err, io.EOF) {
			return nil, &CorruptError{Page: pg, Reason: "beyond the end of the file"}
		}
		return nil, fmt.Errorf("page %d: %w", pg, err)
	}
	at := int(pg-first) * c.pageSize
	return b.data[at : at+c.pageSize], nil
}

// blockPool keeps the blocks of closed Files for the next ones: an import reads each table twice,
// each time on a File of its own, and a block is 64 KiB or more.
var blockPool sync.Pool

// getBlock returns a block of n bytes, from the pool when it holds one of that size.
func getBlock(n int) []byte {
	if p, ok := blockPool.Get().(*[]byte); ok && len(*p) == n {
		return *p
	}
	return make([]byte, n)
}

// release puts the cache's blocks in the pool.
func (c *blockCache) release() {
	for i := range c.blocks {
		if b := &c.blocks[i]; b.data != nil {
			data := b.data
			blockPool.Put(&data)
			b.data, b.first, b.pages = nil, 0, 0
		}
	}
}
