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
