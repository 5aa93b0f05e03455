package nsys

import (
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// StreamSurveyed imports as Stream does, its survey reading the tables from their pages where it
// can or, with sqlOnly, with SQL alone (as it did before it read pages); it returns how many tables
// the survey read from their pages.
func StreamSurveyed(paths []string, opts Options, sqlOnly bool, begin func(*kineto.Imported) error, emit func([]timeline.Event) error) (*kineto.Imported, int, error) {
	var n int
	opts.sqlSurvey, opts.surveyed = sqlOnly, &n
	im, err := Stream(paths, opts, begin, emit)
	return im, n, err
}

// ReadFilesSurveyed imports as ReadFiles does, with StreamSurveyed's survey.
func ReadFilesSurveyed(paths []string, opts Options, sqlOnly bool) (*kineto.Imported, int, error) {
	var all []timeline.Event
	im, n, err := StreamSurveyed(paths, opts, sqlOnly, func(*kineto.Imported) error { return nil }, func(evs []timeline.Event) error {
		all = append(all, evs...)
		return nil
	})
	if err != nil {
		return nil, n, err
	}
	im.Events = all
	return im, n, nil
}

// Paths says how an import reads its tables: the survey and the events each from the pages (where
// they can) or with SQL alone; and the schema, the small tables and the names (SQLMeta).
type Paths struct{ SQLSurvey, SQLRows, SQLMeta bool }

// ReadFilesPaths imports as ReadFiles does, reading the tables as p says; it returns how many
// tables the survey read from their pages and how many tables' events were read from them.
func ReadFilesPaths(paths []string, opts Options, p Paths) (*kineto.Imported, int, int, error) {
	var all []timeline.Event
	var surveyed, cursors int
	opts.sqlSurvey, opts.sqlRows, opts.sqlMeta, opts.surveyed, opts.cursors = p.SQLSurvey, p.SQLRows, p.SQLMeta, &surveyed, &cursors
	im, err := Stream(paths, opts, func(*kineto.Imported) error { return nil }, func(evs []timeline.Event) error {
		all = append(all, evs...)
		return nil
	})
	if err != nil {
		return nil, surveyed, cursors, err
	}
	im.Events = all
	return im, surveyed, cursors, nil
}

// StreamPaths is Stream reading the tables as p says.
func StreamPaths(paths []string, opts Options, p Paths, begin func(*kineto.Imported) error, emit func([]timeline.Event) error) (*kineto.Imported, error) {
	opts.sqlSurvey, opts.sqlRows, opts.sqlMeta = p.SQLSurvey, p.SQLRows, p.SQLMeta
	return Stream(paths, opts, begin, emit)
}

// StreamCached is StreamSurveyed with every file's pages read through caches, none whole in memory.
func StreamCached(paths []string, opts Options, sqlOnly bool, begin func(*kineto.Imported) error, emit func([]timeline.Event) error) (*kineto.Imported, int, error) {
	opts.cached = true
	return StreamSurveyed(paths, opts, sqlOnly, begin, emit)
}

// SQLiteOpened imports paths as ReadFiles does and returns on how many of them SQLite was opened.
func SQLiteOpened(paths []string) (int, error) {
	var n int
	_, err := ReadFiles(paths, Options{sqlOpened: &n})
	return n, err
}

// ReadFilesStored imports as ReadFiles does (every file's pages read through caches when cached)
// and returns how many tables' events were read from their pages, and how many of those from the
// rows the survey kept.
func ReadFilesStored(paths []string, opts Options, cached bool) (*kineto.Imported, int, int, error) {
	var all []timeline.Event
	var cursors, stored int
	opts.cached, opts.cursors, opts.stored = cached, &cursors, &stored
	im, err := Stream(paths, opts, func(*kineto.Imported) error { return nil }, func(evs []timeline.Event) error {
		all = append(all, evs...)
		return nil
	})
	if err != nil {
		return nil, cursors, stored, err
	}
	im.Events = all
	return im, cursors, stored, nil
}

// ReadFilesByRuns imports as ReadFiles does and returns how many tables' events were read from
// the rows the survey kept, and of those how many by merging their runs.
func ReadFilesByRuns(paths []string, opts Options) (*kineto.Imported, int, int, error) {
	var stored, runs int
	opts.stored, opts.byRuns = &stored, &runs
	im, err := ReadFiles(paths, opts)
	return im, stored, runs, err
}
