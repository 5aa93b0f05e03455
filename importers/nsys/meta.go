package nsys

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/importers/nsys/pagescan"
)

// An import reads the little an export holds besides its activity rows (the schema, the session's
// start, the ENUM tables, the devices, the names in StringIds) from its pages too, so that SQLite,
// whose opening and statements cost a small export several times what its rows do, is opened only
// for a read the pages cannot serve: each such read falls back to SQL, which then reads the table
// as before, or names what is wrong with it.

// pages is what a db reads from its file's pages.
type pages struct {
	src    *pagescan.Source // nil when the file's pages cannot be read (srcErr tells why)
	srcErr error
	meta   *pagescan.File       // the importer's own reader (one goroutine): schema, small tables, names
	defs   map[string]*tableDef // by table the importer reads, its CREATE TABLE; nil when SQL read the schema
	roots  map[string]uint32    // by table, its b-tree's root page
	// indexed marks the tables with an index: SQLite may read such a table in the index's order.
	indexed map[string]bool
	strings *pagescan.Cursor // StringIds by id, once opened
	noPages bool             // StringIds cannot be read by id from its pages
	// storeLeft is what the survey's row stores of the file may still take (rowstore.go): as much
	// as the file held in memory.
	storeLeft atomic.Int64
}

// file returns a new reader of the export's pages, for one goroutine.
func (p *pages) file() (*pagescan.File, error) {
	if p.src == nil {
		return nil, p.srcErr
	}
	return p.src.File(), nil
}

// readSchemaPages reads the tables from sqlite_master's pages, and the columns of those the
// importer reads (schemaTables) from their CREATE TABLE statements; an error leaves the schema to
// SQL.
func (d *db) readSchemaPages() error {
	c, err := d.meta.Rows(1, []pagescan.Column{{Pos: 0, Text: true}, {Pos: 1, Text: true}, {Pos: 2, Text: true}, {Pos: 3}, {Pos: 4, Text: true}})
	if err != nil {
		return err
	}
	c.Overflow = true // a CREATE TABLE with its comments may be longer than a page
	d.roots, d.indexed = map[string]uint32{}, map[string]bool{}
	stmts := map[string]string{}
	for c.Next() {
		r := c.Row()
		switch name := string(r.Text[1]); string(r.Text[0]) {
		case "table":
			d.tables[name] = map[string]bool{}
			if !r.Null[3] && r.Ints[3] > 0 && r.Ints[3] <= math.MaxUint32 {
				d.roots[name] = uint32(r.Ints[3])
			}
			if slices.Contains(schemaTables, name) {
				stmts[name] = string(r.Text[4])
			}
		case "index":
			d.indexed[string(r.Text[2])] = true
		}
	}
	if err := c.Err(); err != nil {
		return err
	}
	d.defs = map[string]*tableDef{}
	for name, stmt := range stmts {
		def, err := parseCreateTable(stmt)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		d.defs[name] = def
		for _, col := range def.cols {
			d.tables[name][col] = true
		}
	}
	return nil
}

// maxRowidPages is a table's largest rowid read from its pages, when they can be read.
func (d *db) maxRowidPages(table string) (int64, bool) {
	if d.defs == nil || d.roots[table] == 0 {
		return 0, false
	}
	n, err := d.meta.MaxRowid(d.roots[table])
	return n, err == nil
}

// metaRow is a row of a small table, read from its pages or with SQL.
type metaRow interface {
	// int reads column i, an integer, reporting false for a NULL.
	int(i int) (int64, bool)
	// text reads column i as text ("" for a NULL).
	text(i int) string
}

type stmtRow struct{ s *sqlite3.Stmt }

func (r stmtRow) int(i int) (int64, bool) { return nullInt(r.s, i) }
func (r stmtRow) text(i int) string       { return r.s.ColumnText(i) }

// pageRow is a pagescan row with, for each column asked for, where its value is in it: a record
// column, the rowid (-2) or none (-1, NULL).
type pageRow struct {
	r    *pagescan.Row
	slot []int
}

func (r pageRow) int(i int) (int64, bool) {
	switch s := r.slot[i]; s {
	case -1:
		return 0, false
	case -2:
		return r.r.Rowid, true
	default:
		return r.r.Ints[s], !r.r.Null[s]
	}
}

func (r pageRow) text(i int) string {
	if s := r.slot[i]; s >= 0 {
		return string(r.r.Text[s])
	}
	return ""
}

// recordColumns is where columns of a table are read from its pages: for each of cols (those named
// in text are texts), its place in a row (pageRow's slot), and the record columns to read. A column
// whose value a record may not hold (a key other than the rowid, one with a default) refuses it.
func (d *db) recordColumns(table string, cols []string, text map[string]bool) ([]pagescan.Column, []int, error) {
	def := d.defs[table]
	if def == nil || d.roots[table] == 0 {
		return nil, nil, fmt.Errorf("%s: %w", table, pagescan.ErrUnsupported)
	}
	var rec []pagescan.Column
	slot := make([]int, len(cols))
	for i, c := range cols {
		pos := slices.Index(def.cols, c)
		switch {
		case pos < 0:
			slot[i] = -1
		case c == def.alias:
			slot[i] = -2
		case def.pk[c] || def.dflt[c]:
			return nil, nil, fmt.Errorf("%s: column %s is a key or has a default: %w", table, c, pagescan.ErrUnsupported)
		default:
			slot[i] = len(rec)
			rec = append(rec, pagescan.Column{Pos: pos, Text: text[c]})
		}
	}
	return rec, slot, nil
}

// read reads the columns cols of a small table (those in text as texts; a column the table lacks
// is NULL) in a full scan's order, calling fn with each row: from its pages where they can serve
// it, else with SQL (query, or a SELECT of cols), after reset has undone what fn did with the rows
// read from the pages.
func (d *db) read(table string, cols []string, text map[string]bool, query string, fn func(r metaRow), reset func()) error {
	if err := d.readPages(table, cols, text, fn); err == nil {
		return nil
	}
	reset()
	if query == "" {
		query = d.selectCols(table, cols, "")
	}
	return d.each(query, func(s *sqlite3.Stmt) error {
		fn(stmtRow{s})
		return nil
	})
}

// readPages is read's reading of the pages. A table with an index is left to SQL, whose full scan
// may read it in the index's order.
func (d *db) readPages(table string, cols []string, text map[string]bool, fn func(r metaRow)) error {
	if d.indexed[table] {
		return pagescan.ErrUnsupported
	}
	rec, slot, err := d.recordColumns(table, cols, text)
	if err != nil {
		return err
	}
	c, err := d.meta.Rows(d.roots[table], rec)
	if err != nil {
		return err
	}
	c.Overflow = true
	for c.Next() {
		fn(pageRow{c.Row(), slot})
	}
	return c.Err()
}

// stringPages looks up a StringIds id in its pages (id is its rowid), reporting false when they
// cannot tell (SQL then looks it up).
func (d *db) stringPages(id int64) (string, bool) {
	if d.strings == nil {
		if d.noPages {
			return "", false
		}
		def := d.defs[tableStrings]
		if def == nil || def.alias != "id" {
			d.noPages = true
			return "", false
		}
		rec, slot, err := d.recordColumns(tableStrings, []string{"value"}, map[string]bool{"value": true})
		if err != nil || slot[0] < 0 {
			d.noPages = true
			return "", false
		}
		if d.strings, err = d.meta.Rows(d.roots[tableStrings], rec); err != nil {
			d.noPages = true
			return "", false
		}
		d.strings.Overflow = true
	}
	found, err := d.strings.Find(id)
	if err != nil {
		return "", false
	}
	if !found {
		return "", true
	}
	return string(d.strings.Row().Text[0]), true
}
