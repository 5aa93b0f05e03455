package nsys

import (
	"fmt"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/importers/reorder"
	"github.com/xfertop/xfertop/timeline"
)

// reorderRows is how many rows a table read in its stored order may hold back to put them in start
// order: an export stores each table in the order its buffers were flushed, a few rows out of start
// order at most. A table whose rows are further out of order (the survey tells) is read sorted by
// SQLite instead, which spills to temporary files rather than growing.
const reorderRows = 1 << 14

// Roles of a row in the launch-time lookup.
const (
	roleNone     uint8 = iota
	roleLaunch         // a runtime call: its start is the launch time of its correlation's GPU ops
	roleLaunched       // a GPU op: its launch time is its runtime call's start
)

// item is an event on its way out of a table: its row's position (ties in start are broken by it,
// so that rows keep their stored order) and what its launch time is resolved with.
type item struct {
	ev   timeline.Event
	seq  int64
	proc procKey
	role uint8
}

// cursor reads one table of one export in start order: rows in their stored order, straight when
// they are in start order or through a reorder buffer of hold rows, or rows that SQLite sorted.
type cursor struct {
	f     *fileReader
	t     *table
	order int           // position among every file's tables, breaking ties between tables
	stmt  *sqlite3.Stmt // the rows with SQL; nil when they are read from the pages
	pages *pageRows     // the rows from the pages
	store *storeRows    // the rows as the survey kept them
	runs  *runMerge     // those rows read by their runs in start order (runmerge.go)
	vals  rowVals
	hold  int
	buf   reorder.Heap[item]
	head  item
	next1 item // the row read into the reorder buffer
	rows  int64
	done  bool // the statement has no more rows
	began bool // head has held an item
}

// next makes head the cursor's next item in start order, reporting false at the end. A row that
// comes out before the one let out last means that the survey read other rows, or in another order,
// than the cursor does (the file changed while it was read, or SQL and its pages disagree on a
// damaged file): that is an error, never an event out of order.
func (c *cursor) next() (bool, error) {
	last := c.head.ev.Start
	more, err := c.advance()
	if more && c.began && c.head.ev.Start < last {
		return false, fmt.Errorf("%s: %s: a row starts before one read before it, further out of order than the survey found: the file changed while it was read, or is damaged",
			c.f.d.name, c.t.name)
	}
	c.began = c.began || more
	return more, err
}

// advance makes head the next item of the cursor's rows, through its reorder buffer if it has one.
func (c *cursor) advance() (bool, error) {
	if c.hold == 0 {
		return c.read(&c.head)
	}
	if c.runs != nil { // read with a hold, by its runs instead
		return c.advanceRuns(), nil
	}
	for !c.done && c.buf.Len() <= c.hold {
		it := &c.next1 // the cursor's own: an item of the loop's would be allocated for each row
		ok, err := c.read(it)
		if err != nil {
			return false, err
		}
		if ok {
			c.buf.Push(reorder.Key{Start: it.ev.Start, Seq: it.seq}, it)
		}
	}
	if c.buf.Len() == 0 {
		return false, nil
	}
	c.buf.Pop(&c.head)
	return true, nil
}

// read reads the next row that makes an event into it, reporting false at the end.
func (c *cursor) read(it *item) (bool, error) {
	for !c.done {
		if !c.step() {
			c.done = true
			return false, c.err()
		}
		c.rows++
		c.f.m.row()
		*it = item{seq: c.rows}
		if c.t.conv(c.f, &c.vals, it) {
			return true, nil
		}
	}
	return false, nil
}

// step reads the next row the table's WHERE clause keeps into c.vals, reporting false at the end
// or at an error.
func (c *cursor) step() bool {
	if c.store != nil {
		return c.store.next(&c.vals)
	}
	if c.pages != nil {
		return c.pages.next(&c.vals)
	}
	if !c.stmt.Step() {
		return false
	}
	c.vals.fromStmt(c.t, c.stmt)
	return true
}

// err is why step reported false, naming the file and table: nil at the end of the rows.
func (c *cursor) err() error {
	var err error
	if c.store != nil {
		return nil
	}
	if c.pages != nil {
		if err = c.pages.rows.Err(); err != nil {
			// The survey read these pages whole: they changed since, or the file is not one file.
			err = fmt.Errorf("%w (the survey read this table's pages without error: the file changed while it was read)", err)
		}
	} else {
		err = c.stmt.Err()
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.f.d.name, c.t.name, err)
	}
	return nil
}

// close releases the cursor's statement or file.
func (c *cursor) close() {
	if c.stmt != nil {
		c.stmt.Close()
	}
	if c.pages != nil {
		c.pages.file.Close()
	}
	if c.store != nil {
		c.store.s.release()
		c.store = nil
	}
}

// merger merges cursors into one stream in start order (ties: the cursor's order).
//
// Its heap and runMerge's are written out, each with its own comparison, rather than one generic
// heap taking a comparison function: folded into one (minHeap[T] with a less func), the import of
// the 2,000,000-kernel export took 3.6 % more CPU (BenchmarkVsSQLite3, old and new test binaries
// alternated three rounds: 1,025 against 1,062 import-cpu-ms, import/sqlite3 1.365 against 1.412,
// the new slower in every round), the comparison no longer inlined.
type merger struct {
	heap []*cursor
}

func (m *merger) less(a, b *cursor) bool {
	return a.head.ev.Start < b.head.ev.Start || a.head.ev.Start == b.head.ev.Start && a.order < b.order
}

// add adds a cursor whose head is valid.
func (m *merger) add(c *cursor) {
	m.heap = append(m.heap, c)
	for i := len(m.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if !m.less(m.heap[i], m.heap[p]) {
			break
		}
		m.heap[i], m.heap[p] = m.heap[p], m.heap[i]
		i = p
	}
}

// fix restores the heap after the top cursor's head changed, or drops it when it is done.
func (m *merger) fix(more bool) {
	h := m.heap
	if !more {
		n := len(h) - 1
		h[0] = h[n]
		h = h[:n]
		m.heap = h
	}
	n := len(h)
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && m.less(h[l], h[small]) {
			small = l
		}
		if r := l + 1; r < n && m.less(h[r], h[small]) {
			small = r
		}
		if small == i {
			return
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}

// each calls fn with every item of every cursor in start order, and the file it is of.
func (m *merger) each(fn func(f *fileReader, it *item) error) error {
	for len(m.heap) > 0 {
		c := m.heap[0]
		if err := fn(c.f, &c.head); err != nil {
			return err
		}
		more, err := c.next()
		if err != nil {
			return err
		}
		m.fix(more)
	}
	return nil
}
