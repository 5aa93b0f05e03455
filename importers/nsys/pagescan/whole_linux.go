package pagescan

import (
	"os"
	"syscall"
)

// mapWhole maps the n bytes of f read-only, its pages present (MAP_POPULATE), reporting false
// when the system refuses.
func mapWhole(f *os.File, n int) ([]byte, func(), bool) {
	b, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil, false
	}
	return b, func() { _ = syscall.Munmap(b) }, true
}
