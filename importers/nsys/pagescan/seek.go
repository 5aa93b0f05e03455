package pagescan

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// maxRecord bounds the records a Cursor with Overflow assembles from their overflow pages: a longer
// one is refused (ErrUnsupported), so memory stays bounded on any file.
const maxRecord = 1 << 24

// assemble returns the whole payload of a record of size bytes whose first local bytes are on leaf
// page pg at the start of p, followed by the number of its first overflow page. The overflow pages
// are read without the cache, whose blocks hold the leaf.
func (f *File) assemble(pg uint32, p []byte, local int64, size uint64) ([]byte, error) {
	if size > maxRecord {
		return nil, fmt.Errorf("page %d: a record of %d bytes: %w", pg, size, ErrUnsupported)
	}
	if local+4 > int64(len(p)) {
		return nil, &CorruptError{Page: pg, Reason: "overflow page number beyond the page"}
	}
	next := binary.BigEndian.Uint32(p[local:])
	buf := append(f.spill[:0], p[:local]...)
	defer func() { f.spill = buf[:0] }()
	for hops := uint32(0); uint64(len(buf)) < size; hops++ {
		switch {
		case next < 1 || next > f.pages:
			return nil, &CorruptError{Page: pg, Reason: fmt.Sprintf("overflow page %d beyond the %d pages of the file", next, f.pages)}
		case hops >= f.pages:
			return nil, &CorruptError{Page: pg, Reason: "more overflow pages than the file holds (a loop)"}
		}
		page, err := f.rawPage(next)
		if err != nil {
			return nil, err
		}
		page = page[:f.usable]
		take := min(uint64(len(page)-4), size-uint64(len(buf)))
		buf = append(buf, page[4:4+take]...)
		next = binary.BigEndian.Uint32(page)
	}
	return buf, nil
}

// rawPage reads page pg past the cache: from the whole file, or into a buffer of the File's own.
func (f *File) rawPage(pg uint32) ([]byte, error) {
	if f.data != nil {
		return f.page(pg)
	}
	if len(f.scratch) != f.pageSize {
		f.scratch = make([]byte, f.pageSize)
	}
	if _, err := f.src.f.ReadAt(f.scratch, int64(pg-1)*int64(f.pageSize)); err != nil {
		return nil, fmt.Errorf("page %d: %w", pg, err)
	}
	return f.scratch, nil
}

// btreePage reads page pg of a table b-tree, depth pages below its root: its bytes, where its cell
// pointers start, how many cells it has and whether it is a leaf.
func (f *File) btreePage(pg uint32, depth int) (page []byte, ptrs, n int, leaf bool, err error) {
	if depth >= maxDepth {
		return nil, 0, 0, false, &CorruptError{Page: pg, Reason: "b-tree deeper than 20 pages"}
	}
	if pg < 1 || pg > f.pages {
		return nil, 0, 0, false, &CorruptError{Page: pg, Reason: fmt.Sprintf("page number beyond the %d pages of the file", f.pages)}
	}
	if page, err = f.page(pg); err != nil {
		return nil, 0, 0, false, err
	}
	page = page[:f.usable]
	hdr := 0
	if pg == 1 {
		hdr = headerSize
	}
	if hdr+12 > len(page) {
		return nil, 0, 0, false, &CorruptError{Page: pg, Reason: "page shorter than its header"}
	}
	n = int(binary.BigEndian.Uint16(page[hdr+3:]))
	switch page[hdr] {
	case leafTable:
		ptrs, leaf = hdr+8, true
	case interiorTable:
		ptrs = hdr + 12
	case 0x02, 0x0A:
		return nil, 0, 0, false, fmt.Errorf("page %d: an index b-tree (a table without rowid): %w", pg, ErrUnsupported)
	default:
		return nil, 0, 0, false, &CorruptError{Page: pg, Reason: fmt.Sprintf("page type %#x", page[hdr])}
	}
	if ptrs+2*n > len(page) {
		return nil, 0, 0, false, &CorruptError{Page: pg, Reason: fmt.Sprintf("%d cells do not fit", n)}
	}
	return page, ptrs, n, leaf, nil
}

// cellKey reads cell i of a b-tree page: its rowid, and for an interior page its left child; bad
// names a cell that does not parse.
func cellKey(pg uint32, page []byte, ptrs, i int, leaf bool) (key int64, child uint32, off int, err error) {
	off = int(binary.BigEndian.Uint16(page[ptrs+2*i:]))
	if off < ptrs || off >= len(page) {
		return 0, 0, off, &CorruptError{Page: pg, Reason: fmt.Sprintf("cell %d at offset %d", i, off)}
	}
	p := page[off:]
	if leaf {
		_, n := varint(p) // the payload's size
		if n == 0 {
			return 0, 0, off, &CorruptError{Page: pg, Reason: fmt.Sprintf("cell at offset %d: payload size", off)}
		}
		p = p[n:]
	} else {
		if len(p) < 4 {
			return 0, 0, off, &CorruptError{Page: pg, Reason: fmt.Sprintf("cell %d at offset %d", i, off)}
		}
		child, p = binary.BigEndian.Uint32(p), p[4:]
	}
	k, n := varint(p)
	if n == 0 {
		return 0, 0, off, &CorruptError{Page: pg, Reason: fmt.Sprintf("cell at offset %d: rowid", off)}
	}
	return int64(k), child, off, nil
}

// Find reads the row of rowid into Row, reporting whether the table has one: a descent of the
// b-tree, as SQLite looks a row up by its rowid (an INTEGER PRIMARY KEY). A Cursor finds or scans:
// Next reports false after a Find.
func (c *Cursor) Find(rowid int64) (bool, error) {
	c.begun, c.stack, c.cell, c.n = true, c.stack[:0], 0, 0
	pg := c.root
	for depth := 0; ; depth++ {
		page, ptrs, n, leaf, err := c.f.btreePage(pg, depth)
		if err != nil {
			return false, err
		}
		var cellErr error
		// The first cell whose key is at least rowid: keys grow from cell to cell.
		i := sort.Search(n, func(i int) bool {
			k, _, _, err := cellKey(pg, page, ptrs, i, leaf)
			if err != nil && cellErr == nil {
				cellErr = err
			}
			return err != nil || k >= rowid
		})
		if cellErr != nil {
			return false, cellErr
		}
		if leaf {
			if i == n {
				return false, nil
			}
			k, _, off, _ := cellKey(pg, page, ptrs, i, true)
			if k != rowid {
				return false, nil
			}
			return true, c.leafCell(pg, page, off)
		}
		if i == n {
			pg = binary.BigEndian.Uint32(page[ptrs-4:]) // the right-most child
		} else {
			_, pg, _, _ = cellKey(pg, page, ptrs, i, false)
		}
	}
}

// MaxRowid is the largest rowid of the table whose b-tree starts at page root (0 when it is empty),
// as SQLite's max(rowid) finds it: down the right-most children to the last cell.
func (f *File) MaxRowid(root uint32) (int64, error) {
	pg := root
	for depth := 0; ; depth++ {
		page, ptrs, n, leaf, err := f.btreePage(pg, depth)
		if err != nil {
			return 0, err
		}
		if !leaf {
			pg = binary.BigEndian.Uint32(page[ptrs-4:])
			continue
		}
		if n == 0 {
			return 0, nil
		}
		k, _, _, err := cellKey(pg, page, ptrs, n-1, true)
		return k, err
	}
}
