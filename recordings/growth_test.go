package recordings

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// readOn reads every block the reader has now, appending its events to got.
func readOn(r *Reader, got []timeline.Event) []timeline.Event {
	for r.Next() {
		got = append(got, r.At()...)
	}
	return got
}

// TestGrowingReader: a reader of a recording still being written reads exactly what was published
// (a chunk written but not published is not read, even though the writer's buffer may hold part of
// it), Grow reads on from where it stopped, SeekTime works within what is published, and labels
// published after the open resolve.
func TestGrowingReader(t *testing.T) {
	evs, s := sample(1000)
	path := filepath.Join(t.TempDir(), "growing.xfr")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGrowth()
	if _, err := OpenGrowing(path, g, Options{}); err == nil {
		t.Fatal("OpenGrowing before anything was published: no error")
	}
	if err := w.WriteMeta(Meta{Source: "nsys", Backend: "nsys", Devices: 8}); err != nil {
		t.Fatal(err)
	}
	if err := w.Publish(g); err != nil {
		t.Fatal(err)
	}
	r, err := OpenGrowing(path, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Meta().Backend != "nsys" || r.Next() || r.Grow() {
		t.Fatalf("after the meta only: meta %+v, a block or more to read", r.Meta())
	}
	// Batches of 100, published after every second one; the last written, not published.
	var got []timeline.Event
	steps := []struct {
		from, to int
		publish  bool
	}{{0, 100, false}, {100, 200, true}, {200, 300, false}, {300, 400, true}, {400, 500, false}}
	published := 0
	for _, st := range steps {
		if st.from == 0 {
			if err := w.WriteStrings(1, s.All()[1:]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteEvents(evs[st.from:st.to]); err != nil {
			t.Fatal(err)
		}
		if !st.publish {
			continue
		}
		if err := w.Publish(g); err != nil {
			t.Fatal(err)
		}
		published = st.to
		if !r.Grow() {
			t.Fatalf("published up to event %d: Grow found nothing", st.to)
		}
		got = readOn(r, got)
		if !slices.Equal(got, evs[:published]) {
			t.Fatalf("published %d events: read %d, not the same", published, len(got))
		}
	}
	if err := w.Flush(); err != nil { // on disk, not published: still not read
		t.Fatal(err)
	}
	if r.Grow() || len(readOn(r, nil)) != 0 || len(r.Warnings()) != 0 {
		t.Fatalf("read past what was published; warnings %v", r.Warnings())
	}
	if st := g.State(); st.Events != int64(published) || st.MaxEnd != evs[published-1].End || st.Ended {
		t.Fatalf("state %+v: want %d events ending at %d", st, published, evs[published-1].End)
	}
	if r.Strings().Lookup(evs[1].Label) != s.Lookup(evs[1].Label) {
		t.Fatalf("label %d = %q; want %q", evs[1].Label, r.Strings().Lookup(evs[1].Label), s.Lookup(evs[1].Label))
	}
	// A second reader seeks within what is published.
	r2, err := OpenGrowing(path, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	at := evs[250].End
	if !r2.SeekTime(at) {
		t.Fatal("SeekTime on a growing recording: no index")
	}
	rest := readOn(r2, nil)
	if len(rest) == 0 || rest[0].End > at || rest[len(rest)-1] != evs[published-1] {
		t.Fatalf("after seeking to %d: %d events", at, len(rest))
	}
	failed := errors.New("disk full")
	g.End(failed)
	g.End(nil) // the first end stands
	if st := g.State(); !st.Ended || !errors.Is(st.Err, failed) {
		t.Fatalf("ended: %+v", st)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGrowingConcurrent: a reader following a writer on another goroutine, waiting on Changed,
// reads every event in order, and stops when the writer ends (run with -race).
func TestGrowingConcurrent(t *testing.T) {
	evs, s := sample(20_000)
	path := filepath.Join(t.TempDir(), "growing.xfr")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGrowth()
	if err := w.WriteMeta(Meta{Source: "nsys"}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStrings(1, s.All()[1:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Publish(g); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		var err error
		for i := 0; i < len(evs) && err == nil; i += 333 {
			if err = w.WriteEvents(evs[i:min(i+333, len(evs))]); err == nil {
				err = w.Publish(g)
			}
		}
		if err == nil {
			err = w.Close()
		}
		g.End(err)
		done <- err
	}()
	r, err := OpenGrowing(path, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []timeline.Event
	for {
		st := g.State()
		got = readOn(r, got)
		if r.Grow() {
			continue
		}
		if st.Ended {
			break
		}
		<-st.Changed
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, evs) || r.Err() != nil || len(r.Warnings()) != 0 {
		t.Fatalf("read %d of %d events; err %v, warnings %v", len(got), len(evs), r.Err(), r.Warnings())
	}
}
