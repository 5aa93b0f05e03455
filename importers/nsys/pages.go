package nsys

import (
	"fmt"
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

// pageCols names what readPages reads of each row, in this order: start, end, the table's survey
// columns, then those of its WHERE clause; each as the export names it (pick's choice among
// alternatives), or "" where the export lacks it.
func pageCols(t *table, have map[string]bool) []string {
	cols := append([]string{"start", "end"}, t.survey...)
	switch t.name {
	case tableSync:
		cols = append(cols, "syncType", "deprecatedSyncType")
	case tableNVTX:
		cols = append(cols, "eventType")
	}
	for i, c := range cols {
		cols[i] = ""
		if p := pick(have, c); p != "NULL" {
			cols[i] = strings.Trim(p, `"`)
		}
	}
	return cols
}

// readPages surveys the table from its pages, on a File of its own (Files are not shared between
// goroutines), adding the rows read to progress now and then.
func (ts *tableSurvey) readPages(progress *atomic.Int64) error {
	f, t := ts.f, ts.t
	defer func() {
		if progress != nil {
			progress.Add(ts.rows - ts.told)
			ts.told = ts.rows
		}
	}()
	pages, err := pagescan.Open(f.d.name)
	if err != nil {
		return err
	}
	defer pages.Close()
	names := pageCols(t, f.d.tables[t.name])
	// The record columns scanned, and where each name's value is among them (-1: NULL).
	var rec []int
	slot := make([]int, len(names))
	for i, c := range names {
		slot[i] = -1
		if c != "" {
			slot[i] = len(rec)
			rec = append(rec, ts.layout.pos[c])
		}
	}
	where := 2 + len(t.survey) // the first column of the WHERE clause
	isSync, isNVTX := t.name == tableSync, t.name == tableNVTX
	var v [8]int64 // the row's values by name (NULL: 0, with null set)
	var null [8]bool
	var sr surveyRow
	var scanned int64
	return pages.Scan(ts.layout.root, rec, func(r *pagescan.Row) error {
		if scanned++; scanned%progressEvery == 0 {
			if err := f.m.interrupted(); err != nil {
				return err
			}
		}
		for i, s := range slot {
			if s >= 0 {
				v[i], null[i] = r.Ints[s], r.Null[s]
			} else {
				v[i], null[i] = 0, true
			}
		}
		sr.start, sr.end = v[0], v[1]
		// The table's WHERE clause and an NVTX row's end, as its SQL works them out.
		switch {
		case isSync:
			typ, ok := v[where], !null[where]
			if !ok {
				typ, ok = v[where+1], !null[where+1]
			}
			if !ok || !oneOfIDs(typ, f.enums.syncWaits) {
				return nil
			}
		case isNVTX:
			typ := v[where]
			if null[where] || !oneOfIDs(typ, f.enums.nvtxMarks) && !oneOfIDs(typ, f.enums.nvtxRanges) {
				return nil
			}
			if f.isMark(typ) || null[1] {
				sr.end = sr.start
			}
		}
		copy(sr.v[:], v[2:where])
		copy(sr.null[:], null[2:where])
		ts.add(&sr, progress)
		return nil
	})
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
