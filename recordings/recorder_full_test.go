package recordings

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// fullDisk takes room bytes, then fails as a full file system does: the write that crosses the
// limit is cut short and returns ENOSPC, and so does every later one.
type fullDisk struct {
	buf  bytes.Buffer
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	n := min(len(p), d.room-d.buf.Len())
	d.buf.Write(p[:n])
	if n < len(p) {
		return n, &os.PathError{Op: "write", Path: "full.xfr", Err: syscall.ENOSPC}
	}
	return n, nil
}

// record emits evs through a recorder writing to d in batches of 100 (no time-based flush, a queue
// long enough never to drop, so the bytes depend on the events only) and closes it.
func recordTo(t *testing.T, d *fullDisk, evs []timeline.Event, s *timeline.Strings) (*Recorder, error) {
	t.Helper()
	w, err := NewWriter("full.xfr", d)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := newRecorder(w, s, Meta{Source: "sim"}, 100, len(evs), recorderConfig{every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		rec.Emit(&evs[i])
	}
	return rec, rec.Close([][2]string{{"ended", ""}})
}

// A disk that fills up mid-recording: the recorder says so (Failed, Err, Close's error, all
// ENOSPC), writes nothing after the failure, and the file holds every chunk completed before it:
// exactly the bytes a roomy disk would have had up to that point, read back as those chunks' events
// with a torn tail.
func TestRecorderDiskFull(t *testing.T) {
	evs, s := sample(3000)
	roomy := &fullDisk{room: 1 << 30}
	if _, err := recordTo(t, roomy, evs, s); err != nil {
		t.Fatal(err)
	}
	whole := roomy.buf.Bytes()
	bounds := chunkBoundaries(t, whole)
	tests := []struct {
		name string
		room int
		// duringRun: the failure comes while events are written (the session can stop the run),
		// not only at Close (outcome, index, trailer).
		duringRun bool
	}{
		{"nothing fits (/dev/full)", 0, true},
		{"inside the header", 5, true},
		{"on a chunk boundary", int(bounds[len(bounds)/2]), true},
		{"inside a chunk", int(bounds[len(bounds)/3]) + 7, true},
		{"inside the index", len(whole) - trailerSize - 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &fullDisk{room: tc.room}
			rec, err := recordTo(t, d, evs, s)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Close = %v; want ENOSPC", err)
			}
			select {
			case <-rec.Failed():
				if !tc.duringRun {
					t.Error("Failed is closed, though every event was written")
				}
				if !errors.Is(rec.Err(), syscall.ENOSPC) {
					t.Errorf("Err = %v; want ENOSPC", rec.Err())
				}
			default:
				if tc.duringRun {
					t.Error("Failed is not closed after a failed write")
				}
			}
			got := d.buf.Bytes()
			if !bytes.Equal(got, whole[:len(got)]) || len(got) != tc.room {
				t.Fatalf("the file holds %d bytes that are not the first %d of the full recording", len(got), tc.room)
			}
			// The events to expect: those of every chunk that ends within the room.
			complete := int64(headerSize)
			for _, b := range bounds {
				if b <= int64(tc.room) {
					complete = b
				}
			}
			var want []timeline.Event
			if complete > headerSize {
				r, err := ReadAll("whole", whole[:complete], Options{})
				if err != nil {
					t.Fatal(err)
				}
				want = r.Events
			}
			if tc.room < headerSize {
				if _, err := ReadAll("full.xfr", got, Options{}); !errors.Is(err, ErrNotRecording) {
					t.Errorf("a file cut inside its header: %v", err)
				}
				return
			}
			r, err := ReadAll("full.xfr", got, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Events) != len(want) || (len(want) > 0 && !reflect.DeepEqual(r.Events, want)) {
				t.Errorf("read %d events; the complete chunks hold %d", len(r.Events), len(want))
			}
			if !reflect.DeepEqual(r.Events, evs[:len(r.Events)]) {
				t.Error("the events read back are not the first ones emitted")
			}
			if complete < int64(tc.room) && (len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "torn tail")) {
				t.Errorf("warnings %v; want a torn tail", r.Warnings)
			}
		})
	}
}
