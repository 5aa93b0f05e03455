package recordings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// sample returns a small, varied set of events and their string table.
func sample(n int) ([]timeline.Event, *timeline.Strings) {
	s := timeline.NewStrings()
	labels := []uint32{0, s.ID("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), s.ID("step"), s.ID("Memcpy HtoD (Pinned -> Device)")}
	evs := make([]timeline.Event, n)
	for i := range evs {
		t := int64(i) * 1_337
		evs[i] = timeline.Event{Kind: timeline.Kind(1 + i%22), Start: t, End: t + int64(i%7)*100, Queued: t - int64(i%3)*50,
			Bytes: int64(i) * 4096, Op: uint64(i / 2), Device: int32(i % 16), Peer: int32(i%5) - 1, Stream: uint32(i % 9),
			Group: uint32(i % 4), Comm: uint32(i % 3), Barrier: uint32(i % 2), Label: labels[i%len(labels)], Aux: uint32(i % 11),
			Host: uint16(i % 2), Ranks: uint16(i % 17), Sub: uint8(i % 6), Status: uint8(i % 3), Priority: -int8(i % 4)}
		if i%13 == 0 {
			evs[i].Queued = -1
		}
	}
	return evs, s
}

// write builds a complete recording in memory: meta, strings, events in chunks of per, drops, outcome.
// Events are compressed unless opts say otherwise.
func write(t testing.TB, evs []timeline.Event, s *timeline.Strings, per int, opts ...WriterOption) []byte {
	var buf bytes.Buffer
	w, err := NewWriter("mem", &buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMeta(Meta{Source: "sim", Scenario: "pipeline", Backend: "sim", Topology: "h100x8x2", Devices: 16, Seed: 3,
		Knobs: map[string]string{"d2d_priority": "high"}, EpochUnixNs: 1_700_000_000_000_000_000}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStrings(1, s.All()[1:]); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(evs); i += per {
		if err := w.WriteEvents(evs[i:min(i+per, len(evs))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteDropped(5); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteOutcome([][2]string{{"ended", ""}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	evs, s := sample(1000)
	data := write(t, evs, s, 128)
	rec, err := ReadAll("mem", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.Events, evs) {
		for i := range evs {
			if rec.Events[i] != evs[i] {
				t.Fatalf("event %d = %+v\nwant %+v", i, rec.Events[i], evs[i])
			}
		}
	}
	if !reflect.DeepEqual(rec.Strings.All(), s.All()) || rec.Dropped != 5 || len(rec.Warnings) != 0 {
		t.Errorf("strings %v dropped %d warnings %v", rec.Strings.All(), rec.Dropped, rec.Warnings)
	}
	if rec.Meta.Scenario != "pipeline" || rec.Meta.Devices != 16 || rec.Meta.Knobs["d2d_priority"] != "high" || rec.Meta.EpochUnixNs != 1_700_000_000_000_000_000 {
		t.Errorf("meta %+v", rec.Meta)
	}
}

// chunkBoundaries returns the offset where each chunk starts, and the end of the last.
func chunkBoundaries(t *testing.T, data []byte) []int64 {
	out := []int64{headerSize}
	off := int64(headerSize)
	for off < int64(len(data))-trailerSize {
		length, n := binary.Uvarint(data[off+1:])
		off += 1 + int64(n) + int64(length) + 4
		out = append(out, off)
	}
	return out
}

// A recording cut at any byte opens and yields every complete chunk before the cut, with a warning
// saying how much was lost.
func TestTruncatedAnywhere(t *testing.T) {
	t.Run("compressed", func(t *testing.T) { testTruncatedAnywhere(t) })
	t.Run("uncompressed", func(t *testing.T) { testTruncatedAnywhere(t, WithoutCompression()) })
}

func testTruncatedAnywhere(t *testing.T, opts ...WriterOption) {
	evs, s := sample(300)
	data := write(t, evs, s, 50, opts...)
	bounds := chunkBoundaries(t, data)
	isBoundary := map[int64]bool{}
	for _, b := range bounds {
		isBoundary[b] = true
	}
	for cut := 0; cut < len(data); cut++ {
		rec, err := ReadAll("cut.xfr", data[:cut], Options{})
		if cut < headerSize {
			if !errors.Is(err, ErrNotRecording) {
				t.Fatalf("cut at %d: err %v; want ErrNotRecording", cut, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		// Events from complete Events chunks before the cut: chunk i (after meta and strings) holds
		// events [50(i), 50(i+1)).
		complete := 0
		for i, b := range bounds[1:] {
			if b <= int64(cut) && i >= 2 && i-2 < 6 {
				complete = min(300, (i-1)*50)
			}
		}
		if len(rec.Events) != complete || (complete > 0 && !reflect.DeepEqual(rec.Events, evs[:complete])) {
			t.Fatalf("cut at %d: %d events; want the %d of complete chunks", cut, len(rec.Events), complete)
		}
		torn := !isBoundary[int64(cut)] && cut < len(data)
		hasTorn := len(rec.Warnings) > 0 && strings.Contains(strings.Join(rec.Warnings, "\n"), "torn tail at byte offset")
		if torn && !hasTorn && cut < len(data)-trailerSize {
			t.Fatalf("cut at %d (inside a chunk): warnings %v; want a torn-tail warning", cut, rec.Warnings)
		}
		if cut < len(data) && len(rec.Warnings) == 0 {
			t.Fatalf("cut at %d: no warning that data was lost", cut)
		}
	}
	if rec, err := ReadAll("whole.xfr", data, Options{}); err != nil || len(rec.Warnings) != 0 {
		t.Errorf("whole file: %v %v", err, rec.Warnings)
	}
}

// A flipped byte in the middle is a CorruptionError naming the file and the chunk's offset; with
// salvage the damaged chunk is skipped and everything else is read.
func TestFlippedByte(t *testing.T) {
	evs, s := sample(300)
	data := write(t, evs, s, 50)
	bounds := chunkBoundaries(t, data)
	// Damage the third Events chunk (events 100..149), which starts at bounds[4].
	at := bounds[4]
	for _, pos := range []int64{at, at + 1, at + 5, bounds[5] - 1} {
		bad := bytes.Clone(data)
		bad[pos] ^= 0x40
		_, err := ReadAll("bad.xfr", bad, Options{})
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.Offset != at || ce.File != "bad.xfr" {
			t.Fatalf("flip at %d: err %v; want CorruptionError at offset %d", pos, err, at)
		}
		// The error says what and where, and nothing about command-line flags: the command adds those.
		if want := fmt.Sprintf("bad.xfr: corrupt recording at byte offset %d: checksum mismatch", at); err.Error() != want || !errors.Is(err, ErrChecksum) {
			t.Fatalf("flip at %d: err %q; want %q wrapping ErrChecksum", pos, err, want)
		}
		rec, err := ReadAll("bad.xfr", bad, Options{Salvage: true})
		if err != nil {
			t.Fatalf("salvage, flip at %d: %v", pos, err)
		}
		want := append(append([]timeline.Event(nil), evs[:100]...), evs[150:]...)
		if !reflect.DeepEqual(rec.Events, want) {
			t.Fatalf("salvage, flip at %d: %d events; want %d (all but the damaged chunk)", pos, len(rec.Events), len(want))
		}
		if len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "skipped") {
			t.Fatalf("salvage warnings %v", rec.Warnings)
		}
	}
}

func TestVersionAndMagic(t *testing.T) {
	evs, s := sample(10)
	data := write(t, evs, s, 10)
	newer := bytes.Clone(data)
	binary.LittleEndian.PutUint16(newer[8:], Version+1)
	_, err := ReadAll("new.xfr", newer, Options{})
	if want := fmt.Sprintf("recorded by a newer xfertop (format version %d; this xfertop reads up to %d)", Version+1, Version); !errors.Is(err, ErrNewerVersion) || !strings.Contains(err.Error(), want) {
		t.Errorf("newer version: %v", err)
	}
	if _, err := ReadAll("x.json", []byte(`{"traceEvents": []}`), Options{}); !errors.Is(err, ErrNotRecording) {
		t.Errorf("JSON file: %v", err)
	}
}

// A file that ends inside the header says so, naming the file and what a recording starts with;
// one whose first bytes are not the magic's says it is not a recording. Both are ErrNotRecording.
func TestShortHeader(t *testing.T) {
	const starts = `a recording starts with "XFERTOP\x00" and its format version)`
	tests := []struct {
		data string
		want string
	}{
		{"", `r.xfr: the file is empty (0 bytes; a recording starts with a 16-byte header, "XFERTOP\x00" and its format version)`},
		{"XFERT", "r.xfr: truncated recording header (5 bytes of 16; " + starts},
		{Magic + "\x02\x00\x00", "r.xfr: truncated recording header (11 bytes of 16; " + starts},
		{"hello", `r.xfr: not an xfertop recording (its first bytes are "hello")`},
	}
	for _, tc := range tests {
		_, err := ReadAll("r.xfr", []byte(tc.data), Options{})
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrNotRecording) {
			t.Errorf("ReadAll(%q) = %v;\nwant %s", tc.data, err, tc.want)
		}
	}
}

// A length field claiming gigabytes is damage, not an allocation.
func TestHugeLength(t *testing.T) {
	data := append(header(Version), byte(ChunkEvents))
	data = binary.AppendUvarint(data, 1<<40)
	data = append(data, make([]byte, 32)...)
	rec, err := ReadAll("huge.xfr", data, Options{})
	if err != nil || len(rec.Events) != 0 || len(rec.Warnings) == 0 {
		t.Errorf("huge length: %v, %d events, warnings %v", err, len(rec.Events), rec.Warnings)
	}
}

func TestSeekTime(t *testing.T) {
	evs, s := sample(1000)
	data := write(t, evs, s, 100)
	r, err := NewReader("mem", bytesReaderAt(data), int64(len(data)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Indexed() {
		t.Fatal("a closed recording has an index")
	}
	if !r.SeekTime(evs[550].Start) {
		t.Fatal("SeekTime")
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	first := r.At()[0]
	if first != evs[500] {
		t.Errorf("after seeking to event 550's time, first event = %+v; want event 500 (start of its chunk)", first)
	}
	if r.Strings().Len() != s.Len() || r.Meta().Scenario != "pipeline" {
		t.Error("seeking skipped the meta or strings")
	}
}

// The recorder writes everything a producer emits, strings included, and the file reads back.
func TestRecorder(t *testing.T) {
	evs, s := sample(20_000)
	path := filepath.Join(t.TempDir(), "rec.xfr")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecorder(w, s, Meta{Source: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		rec.Emit(&evs[i])
	}
	if err := rec.Close([][2]string{{"ended", "because"}}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got.Events))+got.Dropped != int64(len(evs)) {
		t.Fatalf("%d events + %d dropped; want %d", len(got.Events), got.Dropped, len(evs))
	}
	if got.Dropped == 0 && !reflect.DeepEqual(got.Events, evs) {
		t.Error("events differ")
	}
	// A live recording is compressed by default.
	if data, _ := os.ReadFile(path); binary.LittleEndian.Uint16(data[8:]) != Version || !slices.Contains(chunkTypes(t, data), ChunkEventsZstd) {
		t.Errorf("recorder wrote format version %d, chunk types %v; want version %d with compressed events", binary.LittleEndian.Uint16(data[8:]), chunkTypes(t, data), Version)
	}
	if !reflect.DeepEqual(got.Strings.All(), s.All()) || got.Outcome[0][1] != "because" {
		t.Errorf("strings %v outcome %v", got.Strings.All(), got.Outcome)
	}
}

// With a writer that cannot keep up, Emit still never blocks: whole batches are dropped, counted,
// and the count is in the file. Strings survive a dropped batch.
func TestRecorderDropsWhenBehind(t *testing.T) {
	evs, s := sample(5000)
	path := filepath.Join(t.TempDir(), "slow.xfr")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	slow := &slowWriter{f: f, delay: 20 * time.Millisecond}
	w, err := NewWriter(path, slow)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := newRecorder(w, s, Meta{Source: "sim"}, 100, 1, recorderConfig{every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	for i := range evs {
		rec.Emit(&evs[i])
	}
	emitting := time.Since(begin)
	if err := rec.Close(nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := ReadFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Dropped() == 0 || got.Dropped != rec.Dropped() {
		t.Errorf("dropped: recorder says %d, file says %d; want the same, non-zero", rec.Dropped(), got.Dropped)
	}
	if int64(len(got.Events))+got.Dropped != int64(len(evs)) {
		t.Errorf("%d written + %d dropped != %d emitted", len(got.Events), got.Dropped, len(evs))
	}
	if got.Strings.Len() != s.Len() {
		t.Errorf("strings lost with dropped batches: %d of %d", got.Strings.Len(), s.Len())
	}
	// 50 batches through a writer taking 20 ms per write would take a second if Emit waited.
	if emitting > 500*time.Millisecond {
		t.Logf("emitting took %v", emitting)
	}
}

// A Lossless recorder whose writer is stuck makes Emit wait instead of dropping: once the writer
// goes on, every event is in the file, however long it was stuck. The writer here stays stuck
// until Emit has waited, or, for a recorder that drops, until every event was emitted (and whole
// batches were dropped): no timing decides the outcome.
func TestRecorderLosslessWaits(t *testing.T) {
	evs, s := sample(5000)
	var buf bytes.Buffer
	gate := &gatedWriter{w: &buf, open: make(chan struct{})}
	w, err := NewWriter("gated", gate)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := newRecorder(w, s, Meta{Source: "sim"}, 100, 1, recorderConfig{every: time.Hour, lossless: true})
	if err != nil {
		t.Fatal(err)
	}
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		for i := range evs {
			rec.Emit(&evs[i])
		}
	}()
	for waiting := false; !waiting; {
		select {
		case <-emitted:
			waiting = true
		default:
			waiting = rec.Waits() > 0
			runtime.Gosched()
		}
	}
	close(gate.open)
	<-emitted
	if err := rec.Close(nil); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll("gated", buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Dropped() != 0 || got.Dropped != 0 || rec.Waits() == 0 {
		t.Errorf("lossless recorder behind a stuck writer: dropped %d (file says %d), waited %d times; want 0 dropped and some waits",
			rec.Dropped(), got.Dropped, rec.Waits())
	}
	if !reflect.DeepEqual(got.Events, evs) {
		t.Errorf("lossless recorder wrote %d events; want the %d emitted, as emitted", len(got.Events), len(evs))
	}
}

// gatedWriter holds every write until open is closed.
type gatedWriter struct {
	w    io.Writer
	open chan struct{}
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.open
	return g.w.Write(p)
}

type slowWriter struct {
	f     *os.File
	delay time.Duration
}

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(s.delay)
	return s.f.Write(p)
}

// What a killed process leaves behind: without Close, the events emitted more than a flush interval
// ago are already in the file and read back (with the warning that the recording was not closed).
func TestRecorderFlushesWhileRunning(t *testing.T) {
	evs, s := sample(300)
	path := filepath.Join(t.TempDir(), "live.xfr")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecorder(w, s, Meta{Source: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		rec.Emit(&evs[i])
	}
	time.Sleep(2 * DefaultFlushEvery)
	got, err := ReadFile(path, Options{}) // the recorder is still open, as in a process about to be killed
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != len(evs) || len(got.Warnings) == 0 || !strings.Contains(got.Warnings[0], "not closed cleanly") {
		t.Errorf("read %d of %d events from the open recording; warnings %v", len(got.Events), len(evs), got.Warnings)
	}
	_ = rec.Close(nil)
}

// FlushEvery sets when a partial batch reaches the file: within a short period it does, with a
// period longer than the run only Close writes it (so chunk boundaries follow the events alone).
func TestRecorderFlushEvery(t *testing.T) {
	evs, s := sample(10)
	for _, tc := range []struct {
		every   time.Duration
		flushes bool
	}{{time.Millisecond, true}, {time.Hour, false}} {
		path := filepath.Join(t.TempDir(), "flush.xfr")
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := NewRecorder(w, s, Meta{Source: "sim"}, FlushEvery(tc.every))
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		before := fi.Size() // the meta chunk, flushed with the first batch at the latest
		for i := range evs {
			rec.Emit(&evs[i])
		}
		grew, polls := false, 10 // an hour-long period must not fire within these 100 ms
		if tc.flushes {
			polls = 100 // up to 1 s for the flusher goroutine to run on a busy machine
		}
		for range polls {
			time.Sleep(10 * time.Millisecond)
			if fi, _ := os.Stat(path); fi.Size() > before {
				grew = true
				break
			}
		}
		if grew != tc.flushes {
			t.Errorf("FlushEvery(%v): partial batch in the file before Close = %v; want %v", tc.every, grew, tc.flushes)
		}
		if err := rec.Close(nil); err != nil {
			t.Fatal(err)
		}
	}
}

// WriteRecording's bytes depend only on the recording's content, not on how the file it was read
// from was chunked: this is what keeps the shipped samples reproducible.
func TestWriteRecordingCanonical(t *testing.T) {
	evs, s := sample(20_000)
	var canon [][]byte
	for _, per := range []int{50, 999, 20_000} {
		rec, err := ReadAll("mem", write(t, evs, s, per), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w, err := NewWriter("canon", &buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteRecording(w, rec); err != nil {
			t.Fatal(err)
		}
		canon = append(canon, buf.Bytes())
		again, err := ReadAll("canon", buf.Bytes(), Options{})
		if err != nil || !reflect.DeepEqual(again.Events, evs) || again.Dropped != 5 || !reflect.DeepEqual(again.Outcome, rec.Outcome) {
			t.Fatalf("chunks of %d: rewritten recording reads back as %d events, dropped %d, err %v", per, len(again.Events), again.Dropped, err)
		}
	}
	for i := 1; i < len(canon); i++ {
		if !bytes.Equal(canon[i], canon[0]) {
			t.Errorf("rewriting a recording chunked differently gave different bytes (%d vs %d)", len(canon[i]), len(canon[0]))
		}
	}
}

// Times before the session's 0 are times: an op queued, started and ended before it (a rank that
// ran before the console attached) reads back as it was written; only a Queued of −1 is unknown.
func TestEventsBeforeTimeZero(t *testing.T) {
	evs := []timeline.Event{
		{Kind: timeline.KindCollective, Start: -12_000_000, End: -11_500_000, Queued: -12_100_000, Device: 0, Peer: -1},
		{Kind: timeline.KindCollective, Start: -11_000_000, End: -10_000_000, Queued: -1, Device: 1, Peer: -1},
		{Kind: timeline.KindSend, Start: -2, End: 5, Queued: -3, Device: 0, Peer: 1},
		{Kind: timeline.KindRecv, Start: 10, End: 20, Queued: -2, Device: 1, Peer: 0},
	}
	got, err := decodeEvents(nil, appendEvents(nil, evs))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, evs) {
		t.Errorf("read back\n%+v\nwrote\n%+v", got, evs)
	}
}

// A graph launch (kind 24) and the ops it replayed (Aux bit 31) survive a recording unchanged.
func TestRoundTripGraphMarks(t *testing.T) {
	s := timeline.NewStrings()
	evs := []timeline.Event{
		{Kind: timeline.KindGraphLaunch, Start: 10, End: 2_510, Device: 3, Peer: -1, Op: 7, Aux: 41, Label: s.ID("step")},
		{Kind: timeline.KindKernel, Start: 3_000, End: 4_000, Queued: 2_510, Device: 3, Peer: -1, Stream: 2, Aux: timeline.AuxCaptured},
		{Kind: timeline.KindCollective, Start: 4_000, End: 9_000, Queued: 2_510, Device: 3, Peer: -1, Stream: 5, Sub: uint8(timeline.CollAllReduce),
			Aux: timeline.AuxCaptured | timeline.PackNCCL(timeline.AlgoRing, timeline.ProtoLL, 16)},
	}
	rec, err := ReadAll("mem", write(t, evs, s, 8), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.Events, evs) {
		t.Fatalf("read back %+v\nwant %+v", rec.Events, evs)
	}
	if !rec.Events[1].Captured() || !rec.Events[2].Captured() || rec.Events[0].Captured() || rec.Events[2].AlgoProto() != "Ring_LL" {
		t.Errorf("marks lost: %+v", rec.Events)
	}
	if rec.Events[0].Kind.String() != "graph_launch" {
		t.Errorf("kind 24 is named %q", rec.Events[0].Kind)
	}
}

// An op of unknown time (Aux bit 26, timeline.AuxTimeUnknown) survives a recording, beside a
// collective's NCCL choice and the sequence mark, and an op without the bit reads as one of known
// time: recordings made before the bit read as they did.
func TestRoundTripUnknownTime(t *testing.T) {
	s := timeline.NewStrings()
	evs := []timeline.Event{
		{Kind: timeline.KindCollective, Start: 4_000, End: 4_000, Queued: 4_000, Device: 1, Peer: -1, Stream: 5, Sub: uint8(timeline.CollAllReduce),
			Aux: timeline.AuxTimeUnknown | timeline.AuxSeqOp | timeline.PackNCCL(timeline.AlgoRing, timeline.ProtoLL, 16)},
		{Kind: timeline.KindSend, Start: 5_000, End: 5_000, Device: 1, Peer: 0, Stream: 5, Bytes: 1 << 15, Aux: timeline.AuxTimeUnknown},
		{Kind: timeline.KindSend, Start: 6_000, End: 6_000, Device: 1, Peer: 0, Stream: 5, Bytes: 1 << 15},
	}
	rec, err := ReadAll("mem", write(t, evs, s, 8), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.Events, evs) {
		t.Fatalf("read back %+v\nwant %+v", rec.Events, evs)
	}
	if !rec.Events[0].TimeUnknown() || !rec.Events[1].TimeUnknown() || rec.Events[2].TimeUnknown() || rec.Events[0].AlgoProto() != "Ring_LL" {
		t.Errorf("marks lost: %+v", rec.Events)
	}
}
