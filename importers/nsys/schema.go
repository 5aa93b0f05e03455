package nsys

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/importers/nsys/pagescan"
)

// Tables of an Nsight Systems export that the importer reads.
const (
	tableStrings  = "StringIds"
	tableKernel   = "CUPTI_ACTIVITY_KIND_KERNEL"
	tableMemcpy   = "CUPTI_ACTIVITY_KIND_MEMCPY"
	tableMemset   = "CUPTI_ACTIVITY_KIND_MEMSET"
	tableRuntime  = "CUPTI_ACTIVITY_KIND_RUNTIME"
	tableSync     = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
	tableNVTX     = "NVTX_EVENTS"
	tableGPU      = "TARGET_INFO_GPU"
	tableCUDADev  = "TARGET_INFO_CUDA_DEVICE"
	tableStart    = "TARGET_INFO_SESSION_START_TIME"
	tableDetails  = "ANALYSIS_DETAILS"
	tableStreams  = "TARGET_INFO_CUDA_STREAM"
	sqliteMagic   = "SQLite format 3\x00"
	progressEvery = 1 << 16
)

// db is one export, opened read-only: read from its pages (pagescan) where they can be, and with
// SQLite, opened when a read first needs it (sql), where they cannot.
type db struct {
	name   string
	ctx    context.Context
	conn   *sqlite3.Conn              // nil until a read needs SQL
	tables map[string]map[string]bool // table → its columns
	// counted holds rows' answers: the progress's total and the survey's reserve ask for them.
	counted map[string]int64
	pages
}

// open opens path read-only: its pages, and its schema read from them (unless sqlMeta), or with
// SQLite when they cannot be read (SQLite then names what is wrong with the file); the small
// tables and the names are then read with SQL too. A file of at most whole bytes is read into
// memory once, for every reader of its pages.
func open(ctx context.Context, path string, whole int64, sqlMeta bool) (*db, error) {
	d := &db{name: path, ctx: ctx, tables: map[string]map[string]bool{}}
	d.src, d.srcErr = pagescan.OpenSource(path, whole)
	if _, ok := errors.AsType[*pagescan.TruncatedError](d.srcErr); ok {
		return nil, d.srcErr // SQLite would read it, and fail at the first missing page as "malformed"
	}
	if d.srcErr == nil {
		d.storeLeft.Store(d.src.Size())
		d.meta = d.src.File()
		if !sqlMeta && d.readSchemaPages() == nil {
			return d, nil
		}
		d.tables, d.defs = map[string]map[string]bool{}, nil
	}
	if _, err := d.sql(); err != nil {
		d.close()
		return nil, err
	}
	if err := d.readSchema(); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// sql returns the export opened with SQLite, opening it the first time: immutable, so that SQLite
// neither locks nor writes it, and trusts that no one else does (an export is never written again).
func (d *db) sql() (*sqlite3.Conn, error) {
	if d.conn != nil {
		return d.conn, nil
	}
	abs, err := filepath.Abs(d.name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.name, err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro&immutable=1"}
	conn, err := sqlite3.OpenFlags(u.String(), sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		return nil, fmt.Errorf("%s: open SQLite: %w", d.name, err)
	}
	if d.ctx != nil {
		conn.SetInterrupt(d.ctx)
	}
	d.conn = conn
	return conn, nil
}

func (d *db) close() {
	if d.meta != nil {
		d.meta.Close()
	}
	if d.src != nil {
		d.src.Close()
	}
	if d.conn != nil {
		d.conn.Close()
	}
}

// schemaTables are the tables whose columns readSchema reads: those the importer reads. An export
// holds some fifty tables; reading the columns of every one cost a query each.
var schemaTables = []string{tableStrings, tableKernel, tableMemcpy, tableMemset, tableRuntime, tableSync, tableNVTX,
	tableGPU, tableCUDADev, tableStart, tableDetails, tableStreams, enumCopy, enumSync, enumNVTX}

// readSchema lists the tables, and the columns of those the importer reads (schemaTables; the
// others are listed with no columns).
func (d *db) readSchema() error {
	err := d.each("SELECT name FROM sqlite_master WHERE type = 'table'", func(s *sqlite3.Stmt) error {
		d.tables[s.ColumnText(0)] = map[string]bool{}
		return nil
	})
	if err != nil {
		if errors.Is(err, sqlite3.NOTADB) {
			return fmt.Errorf("%s: not an SQLite database (an Nsight Systems report is opened after `nsys export --type sqlite FILE.nsys-rep`)", d.name)
		}
		return fmt.Errorf("%s: reading the SQLite schema: %w", d.name, err)
	}
	var list []string
	for _, t := range schemaTables {
		if d.has(t) {
			list = append(list, quote(t))
		}
	}
	if len(list) == 0 {
		return nil
	}
	// One query for every table's columns (table_info's second column is the column's name).
	q := "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p WHERE m.type = 'table' AND m.name IN (" +
		strings.Join(list, ", ") + ")"
	err = d.each(q, func(s *sqlite3.Stmt) error {
		if cols := d.tables[s.ColumnText(0)]; cols != nil {
			cols[s.ColumnText(1)] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: reading the columns of its tables: %w", d.name, err)
	}
	return nil
}

// quote writes s as an SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// has reports whether the export holds table.
func (d *db) has(table string) bool { _, ok := d.tables[table]; return ok }

// need checks that table exists with the columns cols.
func (d *db) need(table string, cols ...string) error {
	have, ok := d.tables[table]
	if !ok {
		return fmt.Errorf("%s: no table %s: not an Nsight Systems SQLite export, or a damaged one", d.name, table)
	}
	for _, c := range cols {
		if !have[c] {
			return fmt.Errorf("%s: table %s has no column %s: not an Nsight Systems export xfertop can read", d.name, table, c)
		}
	}
	return nil
}

// selectCols builds a SELECT of cols from table: a column the export's version lacks is read as NULL
// (unknown), so that the same query reads every version. A name may list alternatives separated by
// "|", the first present winning (a column renamed between versions).
func (d *db) selectCols(table string, cols []string, where string) string {
	have := d.tables[table]
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pick(have, c))
	}
	b.WriteString(" FROM ")
	b.WriteString(table)
	if where != "" {
		b.WriteString(" WHERE ")
		b.WriteString(where)
	}
	return b.String()
}

// query builds the SELECT of exprs (columns as pick writes them, or expressions) from t, keeping
// t's rows, in start order when sorted and else in the order they are stored.
func (f *fileReader) query(t *table, exprs []string, sorted bool) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	b.WriteString(strings.Join(exprs, ", "))
	b.WriteString(" FROM ")
	b.WriteString(t.name)
	if !sorted {
		// In rowid order, as the survey read it, whatever indexes an export was given.
		b.WriteString(" NOT INDEXED")
	}
	if t.where != nil {
		b.WriteString(" WHERE ")
		b.WriteString(t.where(f))
	}
	if sorted {
		b.WriteString(` ORDER BY "start", rowid`)
	}
	return b.String()
}

// pick returns the first alternative of c present in have, quoted, or NULL; rowid is the row's id.
func pick(have map[string]bool, c string) string {
	if c == "rowid" {
		return c
	}
	for alt := range strings.SplitSeq(c, "|") {
		if have[alt] {
			return `"` + alt + `"`
		}
	}
	return "NULL"
}

// each runs query and calls fn for each row.
func (d *db) each(query string, fn func(s *sqlite3.Stmt) error) error {
	conn, err := d.sql()
	if err != nil {
		return err
	}
	s, _, err := conn.Prepare(query)
	if err != nil {
		return err
	}
	defer s.Close()
	for s.Step() {
		if err := fn(s); err != nil {
			return err
		}
	}
	return s.Err()
}

// rows estimates a table's rows from its largest rowid: an export never deletes, and this costs one
// b-tree descent where count(*) would read the table.
func (d *db) rows(table string) int64 {
	if !d.has(table) {
		return 0
	}
	if n, ok := d.counted[table]; ok {
		return n
	}
	n, ok := d.maxRowidPages(table)
	if !ok {
		_ = d.each("SELECT max(rowid) FROM "+table, func(s *sqlite3.Stmt) error {
			n = s.ColumnInt64(0)
			return nil
		})
	}
	if d.counted == nil {
		d.counted = map[string]int64{}
	}
	d.counted[table] = n
	return n
}

// nullInt reads an integer column that may be NULL.
func nullInt(s *sqlite3.Stmt, col int) (int64, bool) {
	if s.ColumnType(col) == sqlite3.NULL {
		return 0, false
	}
	return s.ColumnInt64(col), true
}
