package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/importers/nsys/nsystest"
	"github.com/xfertop/xfertop/probes/ncclprof/fold"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// TestConvertSameBytes: converting the same input again gives the same bytes, for every kind of
// input convert writes a recording from, whatever GOMAXPROCS and however much later: a Kineto
// trace and an Nsight Systems export of many chunks, a directory of per-rank recordings, Flight
// Recorder dumps. The last conversion of each starts over a second after the first, so that a
// time of writing in the file (the outcome's imported_at, once) would show.
func TestConvertSameBytes(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "big.json")
	writeConvertTrace(t, trace, 12_000)
	export := filepath.Join(dir, "big.sqlite")
	if err := nsystest.WriteLarge(export, 20_000, 100); err != nil {
		t.Fatal(err)
	}
	ranks := filepath.Join(dir, "ranks")
	writeChunkedRanks(t, ranks, 20_000, 997)
	inputs := []struct {
		name string
		in   string
		min  int // chunks of events the recording must span, so that where chunks end is tested
	}{
		{"kineto", trace, 4},
		{"nsys", export, 4},
		{"ranks", ranks, 4},
		{"flight recorder", filepath.Join("..", "..", "importers", "flightrecorder", "testdata", "hang"), 1},
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			var first []byte
			began := time.Now()
			for i, procs := range []int{1, 4, 2} {
				if i == 2 {
					// Over a second after the first began: a wall-clock time in the file differs.
					time.Sleep(time.Until(began.Add(1100 * time.Millisecond)))
				}
				runtime.GOMAXPROCS(procs)
				out := filepath.Join(t.TempDir(), "out.xfr")
				if code, stdout, errs := runCLI(t, "convert", in.in, out); code != exitOK {
					t.Fatalf("convert %s: status %d\n%s%s", in.in, code, stdout, errs)
				}
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = data
					if n := eventChunks(t, out); n < in.min {
						t.Fatalf("%s converts to %d chunks of events; the test needs at least %d", in.in, n, in.min)
					}
					continue
				}
				if !bytes.Equal(data, first) {
					t.Errorf("conversion %d (GOMAXPROCS %d) differs from the first (GOMAXPROCS 1) at byte %d of %d",
						i+1, procs, firstDiff(first, data), len(first))
				}
			}
		})
	}
}

// TestConvertRanksChunking: the per-rank recordings of one job, written by a recorder that cut
// its chunks elsewhere (as a live one cuts them by the clock), merge into the same file.
func TestConvertRanksChunking(t *testing.T) {
	var first []byte
	dir := filepath.Join(t.TempDir(), "ranks") // one name: the merge's source names the directory
	for _, chunk := range []int{997, 64, 8192, 20_000} {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		writeChunkedRanks(t, dir, 20_000, chunk)
		out := filepath.Join(t.TempDir(), "job.xfr")
		if code, stdout, errs := runCLI(t, "convert", dir, out); code != exitOK {
			t.Fatalf("convert %s: status %d\n%s%s", dir, code, stdout, errs)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
		} else if !bytes.Equal(data, first) {
			t.Errorf("ranks written in chunks of %d merge into a file that differs from those in chunks of 997 at byte %d",
				chunk, firstDiff(first, data))
		}
	}
}

// TestRecordingSinkBatches: however an importer cuts its events into batches, and however far its
// label table has grown at each (a recording's grows as its chunks are read), the recording
// written is the same, and reads back as the events with their labels.
func TestRecordingSinkBatches(t *testing.T) {
	const n, nLabels = 3*recordings.DefaultBatch + 1234, 40
	labels := make([]string, 0, nLabels)
	evs := make([]timeline.Event, n)
	for i := range evs {
		evs[i] = timeline.Event{Kind: timeline.KindKernel, Start: int64(i) * 1000, End: int64(i)*1000 + 700, Device: int32(i % 8),
			Peer: -1, Queued: -1, Stream: uint32(7 + i%4), Op: uint64(i)}
		if i%4 == 0 {
			evs[i].Label = uint32(1 + i*nLabels/n) // labels 1..40, each first used further on
		}
	}
	for id := 1; id <= nLabels; id++ {
		labels = append(labels, fmt.Sprintf("kernel %d", id))
	}
	splits := []struct {
		name  string
		sizes []int // batch sizes, repeated
		grow  bool  // the table grows with the batches, not whole from the start
	}{
		{"one batch", []int{n}, false},
		{"chunks", []int{recordings.DefaultBatch}, false},
		{"small", []int{1000}, true},
		{"odd", []int{1, 8191, 8193, 3, 20_000}, true},
		{"ones", []int{1}, true},
	}
	var first []byte
	for _, sp := range splits {
		strs := timeline.NewStrings()
		added := 0
		grow := func(upTo int) {
			for ; added < upTo; added++ {
				strs.ID(labels[added])
			}
		}
		if !sp.grow {
			grow(len(labels))
		}
		path := filepath.Join(t.TempDir(), "out.xfr")
		s := &recordingSink{path: path}
		if err := s.Begin(&importers.Header{Format: importers.FormatTrace, Meta: timeline.Meta{Source: "test"}, Strings: strs}); err != nil {
			t.Fatal(err)
		}
		batch := make([]timeline.Event, 0, n)
		for i, k := 0, 0; i < n; k++ {
			size := min(sp.sizes[k%len(sp.sizes)], n-i)
			batch = append(batch[:0], evs[i:i+size]...)
			for j := range batch {
				grow(int(batch[j].Label))
			}
			if err := s.Events(batch); err != nil {
				t.Fatal(err)
			}
			clear(batch) // the slice is the importer's again once Events returns
			i += size
		}
		grow(len(labels))
		if err := s.close(&importers.Result{}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
			rec, err := recordings.ReadFile(path, recordings.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rec.Events, evs) || !slices.Equal(rec.Strings.All()[1:], labels) {
				t.Fatalf("%s: read back %d events and labels %q; want the %d written and %q", sp.name, len(rec.Events),
					rec.Strings.All()[1:], n, labels)
			}
		} else if !bytes.Equal(data, first) {
			t.Errorf("%s: the recording differs from one batch's at byte %d", sp.name, firstDiff(first, data))
		}
	}
}

// firstDiff is the offset of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// eventChunks counts the chunks of events in the recording at path, from its index.
func eventChunks(t *testing.T, path string) int {
	t.Helper()
	r, err := recordings.Open(path, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for _, e := range r.Index() {
		if e.Events > 0 {
			n++
		}
	}
	return n
}

// writeConvertTrace writes a PyTorch profiler trace of units units, each a CPU op, its kernel
// launch, the kernel and a copy; the kernels' names change every 500 units, so that labels are
// first used all along the trace.
func writeConvertTrace(t *testing.T, path string, units int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprint(w, `{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":8},"traceEvents":[`)
	const t0 = int64(1682725898079292)
	for u := range units {
		ts, corr := t0+int64(u)*20, u+1
		if u > 0 {
			fmt.Fprint(w, ",\n")
		}
		fmt.Fprintf(w, `{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":7,"ts":%d,"dur":8,"args":{"External id":%d}},`, ts, corr)
		fmt.Fprintf(w, `{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":7,"ts":%d,"dur":4,"args":{"correlation":%d}},`, ts+2, corr)
		fmt.Fprintf(w, `{"ph":"X","cat":"kernel","name":"sgemm_%d","pid":0,"tid":7,"ts":%d,"dur":12,"args":{"device":0,"stream":7,"correlation":%d}},`,
			u/500, ts+6, corr)
		fmt.Fprintf(w, `{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":9,"ts":%d,"dur":3,"args":{"device":0,"stream":9,"bytes":65536}}`, ts+11)
	}
	fmt.Fprint(w, "]}\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeChunkedRanks writes two ranks' recordings into dir, n collectives each on communicators
// named as they first appear, in chunks of chunk events with each label written just before the
// chunk that first uses it.
func writeChunkedRanks(t *testing.T, dir string, n, chunk int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for rank := range 2 {
		w, err := recordings.Create(filepath.Join(dir, fmt.Sprintf("rank%d-h-%d.xfr", rank, 10+rank)))
		if err != nil {
			t.Fatal(err)
		}
		meta := recordings.Meta{Source: "nccl profiler plugin", Backend: "nccl", Topology: "unknown", IdleMode: timeline.IdleEngine,
			EpochUnixNs: 5e9, Extra: map[string]string{"nccl.host": "h", "nccl.pid": fmt.Sprint(10 + rank), "nccl.rank": fmt.Sprint(rank)}}
		if err := w.WriteMeta(meta); err != nil {
			t.Fatal(err)
		}
		evs := make([]timeline.Event, 0, n)
		for seq := range n {
			comm := uint32(1 + seq/2000)
			start := int64(seq)*1e5 + int64(rank)*1e3
			evs = append(evs, timeline.Event{Kind: timeline.KindCollective, Sub: uint8(timeline.CollAllReduce), Start: start,
				End: start + 5e4, Bytes: 1 << 20, Op: fold.CollOpID(uint64(comm), "AllReduce", uint64(seq)), Device: int32(rank), Peer: -1,
				Ranks: 2, Comm: comm, Stream: 1, Queued: -1, Label: comm})
		}
		written := uint32(0)
		for i := 0; i < len(evs); i += chunk {
			part := evs[i:min(i+chunk, len(evs))]
			var labels []string
			for ; written < part[len(part)-1].Label; written++ {
				labels = append(labels, fmt.Sprintf("comm %d", written+1))
			}
			if err := w.WriteStrings(written-uint32(len(labels))+1, labels); err != nil {
				t.Fatal(err)
			}
			if err := w.WriteEvents(part); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteOutcome([][2]string{{"ended", ""}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// An input without events converts to nothing: status 4 as analyze gives it (the help's "an input
// without events"), and no recording left behind that every reader would then refuse.
func TestConvertNoEvents(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"empty-array.json": "[]", "no-events.json": `{"traceEvents": []}`} {
		in, out := filepath.Join(dir, name), filepath.Join(dir, name+".xfr")
		if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runCLI(t, "convert", in, out)
		if code != exitData || !strings.Contains(errs, "no events") {
			t.Errorf("%s: exit %d, %q; want 4 saying no events", name, code, errs)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: %s left behind (%v)", name, out, err)
		}
	}
}
