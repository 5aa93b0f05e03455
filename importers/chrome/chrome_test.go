package chrome

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestWriteGolden: each step of the format in one small export, compared byte for byte with
// testdata/small.json: the metadata, process and thread names, a slice, an instant, an async slice
// (an op overlapping the last one on its stream without nesting) with its end, a send→recv flow
// arrow, and the bandwidth counters.
func TestWriteGolden(t *testing.T) {
	strs := timeline.NewStrings()
	evs := []timeline.Event{
		{Kind: timeline.KindKernel, Start: 1000, End: 5000, Device: 0, Stream: 1, Label: strs.ID("gemm")},
		{Kind: timeline.KindMemcpy, Start: 3000, End: 7000, Bytes: 4096, Device: 0, Stream: 1},
		{Kind: timeline.KindSend, Start: 2000, End: 6000, Bytes: 1 << 20, Device: 0, Peer: 1, Stream: 2, Op: 7},
		{Kind: timeline.KindRecv, Start: 2500, End: 6000, Bytes: 1 << 20, Device: 1, Peer: 0, Stream: 2, Op: 7, Host: 1},
		{Kind: timeline.KindStep, Start: 0, End: 8000, Device: timeline.NoDevice, Aux: 1},
		{Kind: timeline.KindMark, Start: 4000, End: 4000, Device: timeline.NoDevice, Label: strs.ID(`say "hi"`)},
	}
	var buf bytes.Buffer
	if err := Write(&buf, evs, strs, map[string]string{"scenario": "small", "devices": "2"}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "small.json")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("the export differs from %s (go test -update to rewrite it after a deliberate change):\n%s", golden, buf.Bytes())
	}
}

// An emulated op (--fit on shared GPUs: timeline.AuxEmulated) gets no "GB/s", on its slice or in
// its device's counter: its time is no rate of the topology's links. A real op beside it keeps both.
func TestWriteEmulatedNoRate(t *testing.T) {
	strs := timeline.NewStrings()
	for _, emulated := range []bool{false, true} {
		e := timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: 0, End: 6800, Bytes: 1 << 30, Device: 0, Stream: 1,
			Ranks: 8, Op: 1, Peer: timeline.NoDevice}
		if emulated {
			e.Aux = timeline.AuxEmulated
		}
		var buf bytes.Buffer
		if err := Write(&buf, []timeline.Event{e}, strs, nil); err != nil {
			t.Fatal(err)
		}
		if got := bytes.Count(buf.Bytes(), []byte(`GB/s`)); (got == 0) != emulated {
			t.Errorf("emulated %v: %d mentions of GB/s in\n%s", emulated, got, buf.Bytes())
		}
	}
}

// failAfter fails every write after the first n bytes.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, os.ErrClosed
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteError: a failing writer is named.
func TestWriteError(t *testing.T) {
	strs := timeline.NewStrings()
	evs := make([]timeline.Event, 20000)
	for i := range evs {
		evs[i] = timeline.Event{Kind: timeline.KindKernel, Start: int64(i), End: int64(i + 1), Stream: 1}
	}
	if err := Write(&failAfter{n: 100}, evs, strs, nil); err == nil || err.Error() != "write trace: "+os.ErrClosed.Error() {
		t.Errorf("%v, want write trace: %v", err, os.ErrClosed)
	}
}

// A rank that no source of a partial join placed on a host carries timeline.NoHost: its process
// is named as an unknown host, never "host 65535".
func TestWriteUnknownHost(t *testing.T) {
	strs := timeline.NewStrings()
	for _, c := range []struct {
		host uint16
		want string
	}{{1, `"name":"host 1"`}, {timeline.NoHost, `"name":"host unknown"`}} {
		e := timeline.Event{Kind: timeline.KindKernel, Start: 0, End: 1000, Device: 3, Stream: 1, Host: c.host, Peer: timeline.NoDevice}
		var buf bytes.Buffer
		if err := Write(&buf, []timeline.Event{e}, strs, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(buf.Bytes(), []byte(c.want)) || bytes.Contains(buf.Bytes(), []byte("65535\"")) {
			t.Errorf("host %d: want %s, no host 65535, in\n%s", c.host, c.want, buf.Bytes())
		}
	}
}
