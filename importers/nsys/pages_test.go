package nsys_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
	"github.com/xfertop/xfertop/timeline"
)

// TestSurveyFromPages: the survey, and then the cursors, read the tables from their pages where they
// can, and the import is the one SQL alone makes (the same events, names, warnings, devices, GPU
// names and time 0), with the survey from the pages and the events with SQL, and with both from the
// pages: exports of both schema versions, large ones stored in and out of start order (a table far
// out of it is sorted by SQLite), the real samples, several files; and odd databases (WAL mode, a
// freelist, a name on overflow pages, columns in another order, a column with a default or
// generated, a value of another type than the pages are read for, an index) are read from their
// pages where that reads what SQL reads, else with SQL, to the same import; and so are the schema,
// the small tables (the session's start, the GPUs, the devices, the ENUMs) and the names (a name on
// overflow pages, a table with an index, a value of another type, a column with a default), read
// with SQL (SQLMeta) or from the pages.
func TestSurveyFromPages(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, write func(path string)) []string {
		path := filepath.Join(dir, name)
		write(path)
		return []string{path}
	}
	old := func(extra ...string) func(string) {
		return func(path string) { writeExport(t, path, oldSchema, append(nsystest.OldRows(), extra...)...) }
	}
	large := func(n, block int) func(string) {
		return func(path string) {
			if err := nsystest.WriteLarge(path, n, block); err != nil {
				t.Fatal(err)
			}
		}
	}
	version := func(schema string) func(string) {
		return func(path string) { writeVersion(t, path, schema, sameEnum) }
	}
	const all = 6 // the activity tables of the old schema
	type tc struct {
		name   string
		paths  []string
		pages  int    // tables surveyed from their pages (-1: some)
		warn   string // in a warning
		sorted int    // of those, tables whose rows SQLite sorts (their events with SQL; -1: some or none)
	}
	cases := []tc{
		{"old schema", file("old.sqlite", old()), all, "", 0},
		{"2024", file("v2024.sqlite", version("schema-2024.sql")), 6, "", 0},
		{"2026", file("v2026.sqlite", version("schema-2026.sql")), 6, "", 0},
		{"large, in start order", file("in.sqlite", large(4096, 1)), all, "", 0},
		{"large, blocks of 64", file("b64.sqlite", large(4096, 64)), all, "", 0},
		{"large, reversed", file("rev.sqlite", large(1<<15, 1<<15)), all, "", 1},
		{"a real start", file("real.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000030000.5, 5000031000, 1, 1, 14, 9, 0, 3, 2, 1)`)), all - 1, "", 0},
		{"a text device", file("text.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (5000030000, 5000031000, 'x', 1, 14, 0, 0, 0, 512)`)), all - 1, "", 0},
		{"an out-of-range time", file("far.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (9000000000000000000, 9000000000000000001, 1, 0, 9, 1, 0)`)), all, "", 0},
		{"a start 100 h later", file("later.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (365000000000000, 365000000001000, 1, 1, 14, 9, 0, 3, 2, 1)`)), all,
			"1 event starts more than 24 h from the capture's other events: left out", 0},
		{"a start 100 h later, and a real", file("later-real.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (365000000000000, 365000000001000, 1, 1, 14, 9, 0, 3, 2, 1)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (5000030000.5, 5000031000, 1, 1, 14, 0, 0, 0, 512)`)), all - 1, "1 event starts more than 24 h from the capture's other events: left out", 0},
		{"a covering index by start, descending", file("index.sqlite", old(`CREATE INDEX k ON CUPTI_ACTIVITY_KIND_KERNEL(start DESC, end, deviceId, streamId, correlationId, globalPid, demangledName, shortName)`)), all, "", 0},
		// Odd databases: read from their pages where that reads what SQL reads, else with SQL.
		{"WAL mode", file("wal.sqlite", old("PRAGMA journal_mode = WAL")), 0, "", 0},
		{"an NVTX name on overflow pages", file("overflow.sqlite", old(`INSERT INTO NVTX_EVENTS VALUES (5000003000, 5000004000, 59, NULL, NULL, NULL, printf('%.*c', 9000, 'n'), `+
			itoa(nsystest.GTID)+`, NULL, NULL, 0)`)), all - 1, "", 0},
		{"a freelist", file("free.sqlite", old(manyKernels, `DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid > 100`)), all, "", 0},
		{"columns in another order, and one more", file("order.sqlite", old(reorderKernels...)), all, "", 0},
		{"an event column added with a default", file("default.sqlite", old(`ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN graphNodeId INTEGER DEFAULT 7`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000030000, 5000031000, 1, 1, 14, 9, 0, 3, 2, 1, NULL)`)), all - 1, "", 0},
		{"a generated column", file("generated.sqlite", old(`ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME ADD COLUMN mid INTEGER GENERATED ALWAYS AS ((start + end) / 2) VIRTUAL`)), all - 1, "", 0},
		{"a text name in an integer column", file("textname.sqlite", old(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000030000, 5000031000, 1, 1, 14, 9, 0, 'x3', 2, 1)`)), all - 1, "", 0},
		{"a blob NVTX name", file("blobname.sqlite", old(`INSERT INTO NVTX_EVENTS VALUES (5000003000, 5000004000, 59, NULL, NULL, NULL, x'6e616d65', `+
			itoa(nsystest.GTID)+`, NULL, NULL, 0)`)), all - 1, "", 0},
		// The schema, the small tables and the names, read from their pages where that reads what
		// SQL reads, else with SQL.
		{"a kernel name on overflow pages", file("longname.sqlite", old(`INSERT INTO StringIds VALUES (90001, printf('%.*c', 9000, 'k'))`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000030000, 5000031000, 1, 1, 14, 9, 0, 90001, 90001, 1)`)), all, "", 0},
		{"an index on the GPUs", file("gpuindex.sqlite", old(`CREATE INDEX g ON TARGET_INFO_GPU(name DESC)`, `INSERT INTO TARGET_INFO_GPU VALUES (3, 'B', '')`)), all, "", 0},
		{"a blob GPU name", file("gpublob.sqlite", old(`INSERT INTO TARGET_INFO_GPU VALUES (5, x'4750552d58', '')`)), all, "", 0},
		{"a real session start", file("startreal.sqlite", old(`UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + 0.5`)), all, "", 0},
		{"a device mapping with a default", file("devdefault.sqlite", old(`ALTER TABLE TARGET_INFO_CUDA_DEVICE ADD COLUMN extra INTEGER DEFAULT 1`)), all, "", 0},
		{"a generated column in the strings", file("strgen.sqlite", old(`ALTER TABLE StringIds ADD COLUMN n INTEGER GENERATED ALWAYS AS (length(value)) VIRTUAL`)), all, "", 0},
	}
	for _, c := range cases {
		if strings.Contains(c.name, "freelist") || strings.Contains(c.name, "another order") {
			if n := rows(t, query(t, c.paths[0]), "PRAGMA freelist_count")[0][0]; n == 0 {
				t.Fatalf("%s: no page on the freelist", c.name)
			}
		}
	}
	two := append(append([]string{}, cases[0].paths...), cases[4].paths...)
	cases = append(cases, tc{"two files", two, 2 * all, "", 0})
	for _, name := range []string{"mfu_2gpu_after.sqlite", "mock.sqlite"} {
		if p := sharedExportOrEmpty(name); p != "" {
			cases = append(cases, tc{name, []string{p}, -1, "", -1})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, n, m, err := nsys.ReadFilesPaths(c.paths, nsys.Options{}, nsys.Paths{SQLSurvey: true, SQLRows: true, SQLMeta: true})
			if err != nil || n != 0 || m != 0 {
				t.Fatalf("with SQL: %v, %d tables surveyed and %d read from pages", err, n, m)
			}
			for _, p := range []nsys.Paths{{SQLSurvey: true, SQLRows: true}, {SQLRows: true, SQLMeta: true}, {SQLRows: true}, {}} {
				got, n, m, err := nsys.ReadFilesPaths(c.paths, nsys.Options{}, p)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%+v: %d tables surveyed from their pages, %d tables' events read from them", p, n, m)
				if p.SQLSurvey {
					if n != 0 || m != 0 {
						t.Errorf("%+v: %d tables surveyed from their pages and %d read from them, want none", p, n, m)
					}
					sameImport(t, fmt.Sprintf("from pages (%+v)", p), got, want)
					continue
				}
				if c.pages >= 0 && n != c.pages || c.pages < 0 && n == 0 {
					t.Errorf("%+v: %d tables surveyed from their pages, want %d", p, n, c.pages)
				}
				wantRows := n - c.sorted
				if p.SQLRows {
					wantRows = 0
				}
				if c.sorted >= 0 && m != wantRows || c.sorted < 0 && !p.SQLRows && m == 0 {
					t.Errorf("%+v: %d tables' events read from their pages, want %d", p, m, wantRows)
				}
				if c.warn != "" && !strings.Contains(strings.Join(got.Warnings, "\n"), c.warn) {
					t.Errorf("warnings %q: want one saying %q", got.Warnings, c.warn)
				}
				if len(got.Events) == 0 {
					t.Fatalf("%+v: no events", p)
				}
				sameImport(t, fmt.Sprintf("from pages (%+v)", p), got, want)
			}
		})
	}
}

// sameImport fails the test unless got is the import want is: the same events, names, warnings,
// devices, GPU names and time 0.
func sameImport(t testing.TB, what string, got, want *kineto.Imported) {
	t.Helper()
	if !reflect.DeepEqual(got.Events, want.Events) || !reflect.DeepEqual(got.Warnings, want.Warnings) ||
		got.Devices != want.Devices || got.EpochUnixNs != want.EpochUnixNs || !reflect.DeepEqual(got.Extra, want.Extra) ||
		!reflect.DeepEqual(got.Strings, want.Strings) {
		for i := range min(len(got.Events), len(want.Events)) {
			if got.Events[i] != want.Events[i] {
				t.Logf("event %d: %+v, with SQL %+v", i, got.Events[i], want.Events[i])
				break
			}
		}
		t.Fatalf("%s: %d events, %d devices, epoch %d, warnings %v, extra %v\nwith SQL: %d events, %d devices, epoch %d, warnings %v, extra %v",
			what, len(got.Events), got.Devices, got.EpochUnixNs, got.Warnings, got.Extra, len(want.Events), want.Devices, want.EpochUnixNs, want.Warnings, want.Extra)
	}
}

// manyKernels adds 3,000 kernels to the old schema's export, in start order.
const manyKernels = `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 2999)
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 5000100000 + i * 1000, 5000100000 + i * 1000 + 700, i % 2, 1, 7, NULL, 0, 3, 2, 1 FROM s`

// reorderKernels rebuilds the old schema's kernel table with its columns in another order and a
// text column first (the dropped table's pages go to the freelist).
var reorderKernels = []string{
	manyKernels,
	`ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k_old`,
	`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (note TEXT, shortName INTEGER NOT NULL, gridX INTEGER, globalPid INTEGER,
	  demangledName INTEGER NOT NULL, correlationId INTEGER, streamId INTEGER NOT NULL, contextId INTEGER NOT NULL,
	  deviceId INTEGER NOT NULL, end INTEGER NOT NULL, start INTEGER NOT NULL)`,
	`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (note, shortName, gridX, globalPid, demangledName, correlationId, streamId, contextId, deviceId, end, start)
	  SELECT 'note ' || rowid, shortName, gridX, globalPid, demangledName, correlationId, streamId, contextId, deviceId, end, start FROM k_old`,
	`DROP TABLE k_old`,
}

// TestDamagedPages: an export whose table has a damaged page is refused with an error naming the
// file and the page, whether SQL then reads the table or fails too, never imported from a misread.
func TestDamagedPages(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.sqlite")
	writeExport(t, good, oldSchema, append(nsystest.OldRows(), manyKernels)...)
	c := query(t, good)
	root := rows(t, c, "SELECT rootpage FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'")[0][0]
	if n := rows(t, c, "PRAGMA page_count")[0][0]; root < 2 || root > n {
		t.Fatalf("root page %d of %d", root, n)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	data[(root-1)*4096] = 0x07 // the kernel table's root: not a b-tree page type
	bad := filepath.Join(dir, "bad.sqlite")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []nsys.Paths{{}, {SQLRows: true}} {
		_, _, _, err := nsys.ReadFilesPaths([]string{bad}, nsys.Options{}, p)
		if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), fmt.Sprintf("page %d", root)) {
			t.Errorf("%+v: %v; want an error naming %s and page %d", p, err, bad, root)
		}
	}
}

// eventsDigest imports paths with Stream, reading the tables as p says, and returns a digest of
// every event in the order handed on, how many there were, and the description.
func eventsDigest(t *testing.T, paths []string, p nsys.Paths) ([32]byte, int, *kineto.Imported) {
	t.Helper()
	h := sha256.New()
	n := 0
	im, err := nsys.StreamPaths(paths, nsys.Options{}, p, func(*kineto.Imported) error { return nil }, func(evs []timeline.Event) error {
		n += len(evs)
		return binary.Write(h, binary.LittleEndian, evs)
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, n, im
}

// TestPagesAgreeLarge: the export of BenchmarkVsSQLite3, 2,000,000 kernels (4.2 M rows, stored out
// of start order in blocks of 64), imports from its pages to the events SQL alone imports, in the
// same order (a digest of each stream), with the same description.
func TestPagesAgreeLarge(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes an export of 4.2 million rows (not under -short or -race)")
	}
	path := filepath.Join(t.TempDir(), "k2000000.sqlite")
	largeExport(t, path, 2_000_000, 64)
	want, wantN, wantIm := eventsDigest(t, []string{path}, nsys.Paths{SQLSurvey: true, SQLRows: true})
	got, gotN, gotIm := eventsDigest(t, []string{path}, nsys.Paths{})
	if gotN != largeRows(2_000_000) || got != want || gotN != wantN {
		t.Fatalf("from the pages: %d events, digest %x; with SQL: %d events, digest %x; want %d events", gotN, got, wantN, want, largeRows(2_000_000))
	}
	if !reflect.DeepEqual(gotIm.Warnings, wantIm.Warnings) || gotIm.Devices != wantIm.Devices || gotIm.EpochUnixNs != wantIm.EpochUnixNs ||
		!reflect.DeepEqual(gotIm.Strings, wantIm.Strings) || !reflect.DeepEqual(gotIm.Extra, wantIm.Extra) {
		t.Fatalf("descriptions differ: from the pages %+v, with SQL %+v", gotIm, wantIm)
	}
}

// TestSQLiteOnlyWhenNeeded: an export whose schema, small tables, names and activity tables its
// pages can serve is imported without opening SQLite (its opening and statements cost a small
// export more than its rows); one with a table they cannot serve opens it for that read.
func TestSQLiteOnlyWhenNeeded(t *testing.T) {
	dir := t.TempDir()
	old := func(name string, extra ...string) string {
		path := filepath.Join(dir, name)
		writeExport(t, path, oldSchema, append(nsystest.OldRows(), extra...)...)
		return path
	}
	version := func(name, schema string) string {
		path := filepath.Join(dir, name)
		writeVersion(t, path, schema, sameEnum)
		return path
	}
	cases := []struct {
		name string
		path string
		sql  bool
	}{
		{"old schema", old("old.sqlite"), false},
		{"2024", version("v2024.sqlite", "schema-2024.sql"), false},
		{"2026", version("v2026.sqlite", "schema-2026.sql"), false},
		{"a kernel name on overflow pages", old("longname.sqlite", `INSERT INTO StringIds VALUES (90001, printf('%.*c', 9000, 'k'))`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000030000, 5000031000, 1, 1, 14, 9, 0, 90001, 90001, 1)`), false},
		{"an index on the GPUs", old("gpuindex.sqlite", `CREATE INDEX g ON TARGET_INFO_GPU(name DESC)`), true},
		{"a blob GPU name", old("gpublob.sqlite", `INSERT INTO TARGET_INFO_GPU VALUES (5, x'4750552d58', '')`), true},
		{"a real start", old("real.sqlite", `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000030000.5, 5000031000, 1, 1, 14, 9, 0, 3, 2, 1)`), true},
	}
	if p := sharedExportOrEmpty("mfu_2gpu_after.sqlite"); p != "" {
		cases = append(cases, struct {
			name string
			path string
			sql  bool
		}{"mfu_2gpu_after.sqlite", p, false})
	}
	for _, c := range cases {
		n, err := nsys.SQLiteOpened([]string{c.path})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := n > 0; got != c.sql {
			t.Errorf("%s: SQLite opened %v, want %v", c.name, got, c.sql)
		}
	}
}

// TestFileCutShortWhileRead: an export read whole (mapped into memory) that is cut short while
// its events are read fails with an error naming it, never crashes the process.
func TestFileCutShortWhileRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.sqlite")
	if err := nsystest.WriteLarge(path, 4096, 1); err != nil {
		t.Fatal(err)
	}
	_, err := nsys.Stream([]string{path}, nsys.Options{}, func(*kineto.Imported) error {
		return os.Truncate(path, 4096) // after the survey, before the first events are handed on
	}, func([]timeline.Event) error { return nil })
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("%v; want an error naming %s", err, path)
	}
	t.Log(err)
}
