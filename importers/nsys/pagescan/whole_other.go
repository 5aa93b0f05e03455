//go:build !linux

package pagescan

import "os"

// mapWhole reports false: the file is read into memory instead.
func mapWhole(*os.File, int) ([]byte, func(), bool) { return nil, nil, false }
