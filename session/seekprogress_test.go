package session

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// A seek's reading of the recording before its position for the diagnosis says how far it has got:
// with an index, every chunk before the position, counted as read; without, the time read up to.
func TestSeekProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.xfr")
	p, err := Prepare(Config{Scenario: "llm-train", Topology: "h100x8x2", Steps: 3, Seed: 1, Record: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	r, err := recordings.Open(path, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var end int64
	want := int64(0)
	for _, c := range r.Index() {
		end = max(end, c.MaxEnd)
	}
	from := end / 2
	for _, c := range r.Index() {
		if c.MinStart < from && (c.Type == recordings.ChunkEvents || c.Type == recordings.ChunkEventsZstd) {
			want++
		}
	}
	if want < 2 {
		t.Fatalf("%d chunks before %d ns: the test shows nothing", want, from)
	}
	var prog SeekProgress
	if _, ok := prog.State(); ok {
		t.Fatal("a seek under way before any began")
	}
	prog.begin(from)
	if st, ok := prog.State(); !ok || st.To != from || st.Total != 0 {
		t.Fatalf("begun: %+v, %v; want a seek to %d not yet reading", st, ok, from)
	}
	if err := diagnoseBefore(t.Context(), analysis.New(r.Meta()), r, from, false, &prog); err != nil {
		t.Fatal(err)
	}
	if st, ok := prog.State(); !ok || st.Unit != "chunks" || st.Done != want || st.Total != want {
		t.Errorf("read: %+v, %v; want %d of %d chunks", st, ok, want, want)
	}
	prog.end()
	if st, ok := prog.State(); ok {
		t.Errorf("ended, yet a seek under way: %+v", st)
	}

	// Without an index (a stream, as a live producer sends one): the time read up to, of the position.
	stream := filepath.Join(t.TempDir(), "s.xfr")
	f, err := os.Create(stream)
	if err != nil {
		t.Fatal(err)
	}
	w, err := recordings.NewStreamWriter(stream, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMeta(r.Meta()); err != nil {
		t.Fatal(err)
	}
	var evs [][]timeline.Event // read whole first: the strings go before the events that name them
	for r.Next() {
		evs = append(evs, slices.Clone(r.At()))
	}
	if err := w.WriteStrings(1, r.Strings().All()[1:]); err != nil {
		t.Fatal(err)
	}
	for _, c := range evs {
		if err := w.WriteEvents(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(r.Err(), w.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	bare, err := recordings.Open(stream, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if bare.Indexed() {
		t.Fatal("the stream has an index: the test shows nothing")
	}
	prog.begin(from)
	if err := diagnoseBefore(t.Context(), analysis.New(bare.Meta()), bare, from, false, &prog); err != nil {
		t.Fatal(err)
	}
	if st, ok := prog.State(); !ok || st.Unit != "ns" || st.Total != from || st.Done != from {
		t.Errorf("read without an index: %+v, %v; want %d of %d ns", st, ok, from, from)
	}
}
