package nsys

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/importers/nsys/pagescan"
)

// The survey reads a table's few integer columns from its b-tree pages (package pagescan) rather
// than with SQL: a statement step and a call per column cost several times what decoding a row's
// varints does, and the survey reads every row of the export before its first event. The rows are
// those SQL reads, in its order (a full scan: by rowid; the queries say NOT INDEXED so that an
// index added to an export does not change it), and the WHERE clauses and the NVTX end are worked
// out here as SQL works them out. A table whose pages or columns the scanner does not read (a value
// that is not an integer, a record spilled to overflow pages, a column with a default, damaged
// pages) is read with SQL instead, from its first row.

// interrupted is the import's context's error, if it is done.
func (m *importer) interrupted() error {
	if m.opts.Context == nil {
		return nil
	}
	return m.opts.Context.Err()
}

// layout is where a table's columns are in its records, by name, and its b-tree's root page.
type layout struct {
	root uint32
	pos  map[string]int
}

// readLayout reads where table's columns lie in its records. A table with hidden columns (generated
// ones, stored or not), or whose columns named in need are part of its primary key (a rowid alias
// is stored as NULL) or have a default (a record written before the column was added holds none)
// is refused.
func (d *db) readLayout(table string, need []string) (*layout, error) {
	if def := d.defs[table]; def != nil { // the schema read from the pages
		l := &layout{root: d.roots[table], pos: map[string]int{}}
		if l.root == 0 {
			return nil, fmt.Errorf("no root page: %w", pagescan.ErrUnsupported)
		}
		for i, c := range def.cols {
			l.pos[c] = i
		}
		for _, n := range need {
			if def.pk[n] || def.dflt[n] {
				return nil, fmt.Errorf("column %s is a key or has a default: %w", n, pagescan.ErrUnsupported)
			}
		}
		return l, nil
	}
	l := &layout{pos: map[string]int{}}
	err := d.each("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = "+quote(table), func(s *sqlite3.Stmt) error {
		l.root = uint32(max(0, min(s.ColumnInt64(0), 1<<31)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if l.root == 0 {
		return nil, fmt.Errorf("no root page: %w", pagescan.ErrUnsupported)
	}
	type col struct {
		pk, hidden int64
		dflt       bool
	}
	cols := map[string]col{}
	pos := 0
	err = d.each("SELECT name, pk, hidden, dflt_value IS NOT NULL FROM pragma_table_xinfo("+quote(table)+")", func(s *sqlite3.Stmt) error {
		name := s.ColumnText(0)
		cols[name] = col{s.ColumnInt64(1), s.ColumnInt64(2), s.ColumnInt64(3) != 0}
		l.pos[name] = pos
		pos++
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name, c := range cols {
		if c.hidden != 0 {
			return nil, fmt.Errorf("column %s is generated: %w", name, pagescan.ErrUnsupported)
		}
	}
	for _, n := range need {
		if c, ok := cols[n]; ok && (c.pk != 0 || c.dflt) {
			return nil, fmt.Errorf("column %s is a key or has a default: %w", n, pagescan.ErrUnsupported)
		}
	}
	return l, nil
}

// pageCols names what is read of each row from the pages, in this order: start, end, the table's
// survey columns, those of its WHERE clause, then the columns of its events after the rowid (where
// the survey sees that the cursor will read them, so that a table the survey read from its pages
// is read from them to its end); each as the export names it (pick's choice among alternatives),
// or "" where the export lacks it. It returns the names and where the WHERE clause's columns begin.
func pageCols(t *table, have map[string]bool) ([]string, int) {
	cols := append([]string{"start", "end"}, t.survey...)
	where := len(cols)
	switch t.name {
	case tableSync:
		cols = append(cols, "syncType", "deprecatedSyncType")
	case tableNVTX:
		cols = append(cols, "eventType")
	}
	cols = append(cols, t.cols[1:]...)
	for i, c := range cols {
		cols[i] = ""
		if p := pick(have, c); p != "NULL" {
			cols[i] = strings.Trim(p, `"`)
		}
	}
	return cols, where
}

// pageColumns is what a scan of table t reads from its pages for the names of pageCols: the record
// columns, each once, and for each name where its value is among them (-1: NULL).
func (l *layout) pageColumns(t *table, names []string) ([]pagescan.Column, []int) {
	var rec []pagescan.Column
	slot := make([]int, len(names))
	at := map[int]int{} // a record column's place in rec
	text := ""
	if t.text > 0 {
		text = t.cols[t.text]
	}
	for i, c := range names {
		slot[i] = -1
		if c == "" {
			continue
		}
		pos := l.pos[c]
		j, ok := at[pos]
		if !ok {
			j = len(rec)
			at[pos] = j
			rec = append(rec, pagescan.Column{Pos: pos, Text: c == text})
		}
		slot[i] = j
	}
	return rec, slot
}

// pageWhere is the table's WHERE clause as its SQL works it out, on the values of its WHERE
// columns (pageCols' from where on; NULL as 0 with null set).
func (f *fileReader) pageWhere(t *table, v []int64, null []bool) bool {
	switch t.name {
	case tableSync:
		typ, ok := v[0], !null[0]
		if !ok {
			typ, ok = v[1], !null[1]
		}
		return ok && oneOfIDs(typ, f.enums.syncWaits)
	case tableNVTX:
		return !null[0] && (oneOfIDs(v[0], f.enums.nvtxMarks) || oneOfIDs(v[0], f.enums.nvtxRanges))
	}
	return true
}

// readPages surveys the table from its pages, on a File of its own (Files are not shared between
// goroutines), adding the rows read to progress now and then.
func (ts *tableSurvey) readPages(progress *atomic.Int64) (err error) {
	f, t := ts.f, ts.t
	defer func() {
		if progress != nil {
			progress.Add(ts.rows - ts.told)
			ts.told = ts.rows
		}
	}()
	if src := f.d.src; src != nil && src.Mapped() { // on a goroutine of its own: see Stream
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				if err = src.Fault(r); err == nil {
					panic(r)
				}
			}
		}()
	}
	pages, err := f.d.file()
	if err != nil {
		return err
	}
	defer pages.Close()
	names, where := pageCols(t, f.d.tables[t.name])
	rec, slot := ts.layout.pageColumns(t, names)
	events := len(names) - (len(t.cols) - 1)
	wheres := events - where // the WHERE clause's columns
	evSlot := slot[events:]
	slot = slot[:where+wheres]
	if data := f.d.src.Data(); data != nil && ts.sample == nil && !f.m.opts.sqlRows {
		ts.store = newRowStore(t, data, &f.d.storeLeft)
	}
	defer func() {
		if err != nil && ts.store != nil {
			ts.store.release()
			ts.store = nil
		}
	}()
	cur, err := pages.Rows(ts.layout.root, rec)
	if err != nil {
		return err
	}
	isNVTX := t.name == tableNVTX
	var v [8]int64 // the row's values by name (NULL: 0, with null set)
	var null [8]bool
	var sr surveyRow
	var scanned int64
	for cur.Next() {
		if scanned++; scanned%progressEvery == 0 {
			if err := f.m.interrupted(); err != nil {
				return err
			}
		}
		r := cur.Row()
		for i, s := range slot {
			if s >= 0 {
				v[i], null[i] = r.Ints[s], r.Null[s]
			} else {
				v[i], null[i] = 0, true
			}
		}
		if !f.pageWhere(t, v[where:where+wheres], null[where:where+wheres]) {
			continue
		}
		sr.start, sr.end = v[0], v[1]
		if isNVTX && (f.isMark(v[where]) || null[1]) { // an NVTX row's end, as its SQL works it out
			sr.end = sr.start
		}
		copy(sr.v[:], v[2:where])
		copy(sr.null[:], null[2:where])
		ts.add(&sr, progress)
		if ts.store != nil && !ts.store.add(r, evSlot) {
			ts.store.release()
			ts.store = nil
		}
	}
	return cur.Err()
}

// oneOfIDs is oneOf's test in Go: whether id is one of ids.
func oneOfIDs(id int64, ids []int64) bool {
	for _, x := range ids {
		if id == x {
			return true
		}
	}
	return false
}

// pageRows reads a table's rows for its cursor from the pages, as the survey read them: the same
// record columns, so that a table the survey read from its pages whole is read whole here, and the
// table's WHERE clause worked out as its SQL works it out.
type pageRows struct {
	f     *fileReader
	t     *table
	file  *pagescan.File
	rows  *pagescan.Cursor
	slot  []int // by column of t.cols after the rowid, where its value is in a row (-1: NULL)
	where []int // the WHERE clause's columns, where their values are
	v     [2]int64
	null  [2]bool
}

// openPageRows opens the table's rows on its pages, laid out as l says.
func (f *fileReader) openPageRows(t *table, l *layout) (*pageRows, error) {
	names, where := pageCols(t, f.d.tables[t.name])
	rec, slot := l.pageColumns(t, names)
	file, err := f.d.file()
	if err != nil {
		return nil, err
	}
	rows, err := file.Rows(l.root, rec)
	if err != nil {
		file.Close()
		return nil, err
	}
	events := len(names) - (len(t.cols) - 1)
	return &pageRows{f: f, t: t, file: file, rows: rows, slot: slot[events:], where: slot[where:events]}, nil
}

// next reads the next row the WHERE clause keeps into r, reporting false at the end or an error.
func (p *pageRows) next(r *rowVals) bool {
	for p.rows.Next() {
		row := p.rows.Row()
		if len(p.where) > 0 {
			for i, s := range p.where {
				p.v[i], p.null[i] = 0, true
				if s >= 0 {
					p.v[i], p.null[i] = row.Ints[s], row.Null[s]
				}
			}
			if !p.f.pageWhere(p.t, p.v[:len(p.where)], p.null[:len(p.where)]) {
				continue
			}
		}
		r.v[0], r.null[0] = row.Rowid, false
		for i, s := range p.slot {
			if s < 0 {
				r.v[i+1], r.null[i+1] = 0, true
				continue
			}
			r.v[i+1], r.null[i+1] = row.Ints[s], row.Null[s]
			if i+1 == p.t.text {
				r.text = row.Text[s]
			}
		}
		return true
	}
	return false
}
