package pagescan

import (
	"fmt"
	"io"
	"os"
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
}

// OpenSource opens an SQLite file and reads its header, and the whole file when it is at most whole
// bytes long.
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
	if st.Size() <= whole {
		data := make([]byte, st.Size())
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

// Close closes the file; its Files must no longer be used.
func (s *Source) Close() error { return s.f.Close() }
