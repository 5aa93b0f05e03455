package pagescan

import (
	"fmt"
	"io"
	"os"
	"unsafe"
)

// Source is an SQLite file opened once for the Files that read it, side by side. A file no larger
// than the size its opener allows is read whole, once, into memory that its Files share: a small
// export's tables lie interleaved in its pages, so that a reader of each table through a cache of
// blocks would read most of the file again, and every cache would be memory touched for the first
// time. A larger file is read by each File through a cache of its own, so memory stays bounded.
type Source struct {
	f        *os.File
	name     string
	pageSize int
	usable   int    // page size less the bytes reserved at the end of each page
	pages    uint32 // pages in the file
	data     []byte // the whole file, or nil
	free     func() // releases data
	mapped   bool   // data is the file mapped into memory (Fault)
	utf16    bool   // the file's texts are in UTF-16
}

// OpenSource opens an SQLite file and reads its header, and the whole file when it is at most whole
// bytes long: mapped into memory where the system can (read-only, its pages made present in one
// call: reading it into fresh memory costs a page allocation and a copy for every 4 KiB, and the
// cached pages of a file just written or read are there to map), else read.
func OpenSource(path string, whole int64) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var h [headerSize]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: database header: %w", path, err)
	}
	s, err := parseHeader(h[:], st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.f, s.name = f, path
	if size := st.Size(); size > 0 && size <= whole {
		if data, free, ok := mapWhole(f, int(size)); ok {
			s.data, s.free, s.mapped = data, free, true
			return s, nil
		}
		data := make([]byte, size)
		n, err := f.ReadAt(data, 0)
		if err != nil && err != io.EOF {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		// A file that shrank since its size was read is read as the pages it still holds.
		s.data = data[:n]
		s.pages = uint32(min(int64(n)/int64(s.pageSize), 1<<31))
	}
	return s, nil
}

// Fault is the error of a panic (recovered) that a fault on the Source's mapped file raised: the
// file was cut short since it was mapped (SIGBUS); nil for any other panic. A mapped file's reader
// runs on goroutines that have faults raise panics (debug.SetPanicOnFault) and recover them:
// without, a file cut short while it is read ends the process. Turned on per goroutine rather than
// per read, as a deferred call per row would cost a small export's import a few per cent.
func (s *Source) Fault(r any) error {
	f, ok := r.(interface{ Addr() uintptr })
	if !ok || !s.mapped || len(s.data) == 0 {
		return nil
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(s.data)))
	if a := f.Addr(); a < lo || a-lo >= uintptr(cap(s.data)) {
		return nil
	}
	return fmt.Errorf("%s: the file was cut short while it was read", s.name)
}

// Mapped reports whether the Source maps the file into memory (Fault).
func (s *Source) Mapped() bool { return s.mapped }

// Data is the whole file as the Source holds it in memory (nil unless Whole): what its Files read
// (a Row's texts among it) until the Source is closed.
func (s *Source) Data() []byte { return s.data }

// Whole reports whether the Source holds the whole file in memory.
func (s *Source) Whole() bool { return s.data != nil }

// File returns a new reader of the Source's pages, for one goroutine.
func (s *Source) File() *File {
	f := &File{src: s, name: s.name, pageSize: s.pageSize, usable: s.usable, pages: s.pages, data: s.data}
	if s.data == nil {
		f.cache = newBlockCache(s.f, s.pageSize)
	}
	return f
}

// Close closes the file and releases the memory that held it: its Files must no longer be used,
// nor what they read.
func (s *Source) Close() error {
	if s.free != nil {
		s.free()
		s.data, s.free = nil, nil
	}
	return s.f.Close()
}

// Size is the size of the file in memory (0 unless Whole).
func (s *Source) Size() int64 { return int64(len(s.data)) }
