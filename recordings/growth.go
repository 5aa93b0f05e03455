package recordings

import (
	"fmt"
	"os"
	"sync"
)

// Growth is what a Writer has published of a recording it is still writing, for readers on other
// goroutines that follow it: a replay that plays an import while the import writes it. What is
// published is whole chunks on disk (Writer.Publish flushes first) and their index, so a reader
// never meets a torn chunk and can seek within what is there. It is safe for concurrent use.
type Growth struct {
	mu      sync.Mutex
	st      GrowthState
	changed chan struct{}
}

// GrowthState is a Growth at one moment.
type GrowthState struct {
	Size   int64        // bytes of whole chunks on disk, from the start of the file
	Index  []IndexEntry // the chunks in those bytes; the writer never changes them again
	Events int64        // events in those chunks
	MaxEnd int64        // when the last of those events ends (ns)
	Ended  bool         // the writer is done: nothing more will be published
	Err    error        // why the writer stopped early, if it did
	// Changed is closed at the next change, for a reader that waits for more.
	Changed <-chan struct{}
}

// NewGrowth returns a Growth with nothing published yet.
func NewGrowth() *Growth { return &Growth{changed: make(chan struct{})} }

// State returns what is published now.
func (g *Growth) State() GrowthState {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.st
	s.Changed = g.changed
	return s
}

// End says that nothing more will be published: err is why the writer stopped early (nil when
// the recording is complete). Readers that reach the end of what was published stop there.
func (g *Growth) End(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.st.Ended {
		return
	}
	g.st.Ended, g.st.Err = true, err
	g.notify()
}

func (g *Growth) publish(size int64, index []IndexEntry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range index[len(g.st.Index):] {
		if e.Type == ChunkEvents || e.Type == ChunkEventsZstd {
			g.st.Events += int64(e.Events)
			g.st.MaxEnd = max(g.st.MaxEnd, e.MaxEnd)
		}
	}
	g.st.Size, g.st.Index = size, index
	g.notify()
}

// notify wakes the readers waiting for a change; g.mu is held.
func (g *Growth) notify() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Publish flushes what was written and publishes it to g: readers following g may read it now.
// A stream writer keeps no index, and publishes nothing.
func (w *Writer) Publish(g *Growth) error {
	if w.stream {
		return fmt.Errorf("publish %s: a stream keeps no index", w.name)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The writer only appends to its index: the entries published are never written again, so
	// readers share them without a copy.
	g.publish(w.off, w.index[:len(w.index):len(w.index)])
	return nil
}

// OpenGrowing opens a recording that a Writer is still writing, as far as g has published it;
// Grow reads on as more is published. The reader seeks within the published chunks (SeekTime). It
// needs something published (the header and the Meta chunk, which a writer writes first).
func OpenGrowing(path string, g *Growth, opts Options) (*Reader, error) {
	st := g.State()
	if st.Size == 0 {
		return nil, fmt.Errorf("open recording %s: nothing written yet", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open recording: %w", err)
	}
	r, err := NewReader(path, f, st.Size, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file, r.growth = f, g
	r.index = st.Index
	return r, nil
}

// Grow extends a reader opened by OpenGrowing to what its writer has published since; it reports
// whether there is more to read.
func (r *Reader) Grow() bool {
	if r.growth == nil {
		return false
	}
	st := r.growth.State()
	if st.Size <= r.size {
		return false
	}
	r.size, r.end, r.index = st.Size, st.Size, st.Index
	return true
}
