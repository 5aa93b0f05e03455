package recordings

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// Repair is tested like the salvage path: hand-made torn and damaged files, the exact cut, the exact
// reason, the backup byte for byte, and what the repaired file reads back.
func TestRepair(t *testing.T) {
	evs, s := sample(300)
	data := write(t, evs, s, 50)
	bounds := chunkBoundaries(t, data) // header end, meta end, strings end, 6 events chunks, dropped, outcome, index
	flipped := bytes.Clone(data)
	flipped[bounds[4]+7] ^= 0x40 // inside the third Events chunk (events 100..149)
	trailerStart := int64(len(data) - trailerSize)
	for _, tc := range []struct {
		name       string
		file       []byte
		kept       int64 // where the repaired file ends
		reason     error
		torn       bool
		resync     int64
		events     int // events the repaired file holds
		salvaged   int // events reading the backup with salvage gives
		indexedWas bool
	}{
		{name: "sound", file: data, kept: int64(len(data)), events: 300, indexedWas: true},
		{name: "cut at a chunk boundary", file: data[:bounds[5]], kept: bounds[5], events: 150},
		{name: "torn inside an events chunk", file: data[:bounds[5]+9], kept: bounds[5], reason: io.ErrUnexpectedEOF, torn: true, resync: -1, events: 150},
		{name: "torn inside the trailer", file: data[:len(data)-5], kept: trailerStart, reason: io.ErrUnexpectedEOF, torn: true, resync: -1, events: 300},
		{name: "flipped byte mid-file", file: flipped, kept: bounds[4], reason: ErrChecksum, resync: bounds[5], events: 100, salvaged: 250, indexedWas: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rec.xfr")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := Repair(path)
			if err != nil {
				t.Fatal(err)
			}
			if res.Size != int64(len(tc.file)) || res.Kept != tc.kept || res.Indexed != tc.indexedWas {
				t.Errorf("Repair = size %d kept %d indexed %v; want %d, %d, %v", res.Size, res.Kept, res.Indexed, len(tc.file), tc.kept, tc.indexedWas)
			}
			if !errors.Is(res.Damage, tc.reason) || (tc.reason == nil) != (res.Damage == nil) {
				t.Errorf("damage %v; want %v", res.Damage, tc.reason)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, tc.file[:tc.kept]) {
				t.Errorf("repaired file is %d bytes; want the first %d of the original", len(got), tc.kept)
			}
			backup, berr := os.ReadFile(path + BackupSuffix)
			if tc.kept == int64(len(tc.file)) {
				if res.Backup != "" || !errors.Is(berr, os.ErrNotExist) {
					t.Errorf("nothing cut, yet a backup %q (%v)", res.Backup, berr)
				}
			} else {
				if res.Backup != path+BackupSuffix || !bytes.Equal(backup, tc.file) || res.Torn != tc.torn || res.Resync != tc.resync {
					t.Errorf("backup %q (%d bytes, same %v), torn %v resync %d; want the original, torn %v resync %d",
						res.Backup, len(backup), bytes.Equal(backup, tc.file), res.Torn, res.Resync, tc.torn, tc.resync)
				}
			}
			rec, err := ReadFile(path, Options{})
			if err != nil || !reflect.DeepEqual(rec.Events, evs[:tc.events]) {
				t.Fatalf("repaired file: %v, %d events; want the first %d", err, len(rec.Events), tc.events)
			}
			for _, w := range rec.Warnings {
				if !strings.Contains(w, "not closed cleanly") {
					t.Errorf("repaired file still warns: %s", w)
				}
			}
			if tc.salvaged > 0 {
				rec, err := ReadFile(path+BackupSuffix, Options{Salvage: true})
				want := append(append([]timeline.Event(nil), evs[:100]...), evs[150:]...)
				if err != nil || !reflect.DeepEqual(rec.Events, want) {
					t.Errorf("salvaging the backup: %v, %d events; want %d", err, len(rec.Events), tc.salvaged)
				}
			}
		})
	}
}

// Repair never overwrites an earlier backup, and changes nothing when it cannot make one.
func TestRepairKeepsEarlierBackup(t *testing.T) {
	evs, s := sample(100)
	data := write(t, evs, s, 50)
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.xfr")
	torn := data[:len(data)-30]
	if err := os.WriteFile(path, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+BackupSuffix, []byte("older"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Repair(path)
	want := path + ": nothing was changed: backup " + path + ".bak already exists: move it away first"
	if err == nil || err.Error() != want {
		t.Fatalf("Repair = %v; want %q", err, want)
	}
	got, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + BackupSuffix)
	if !bytes.Equal(got, torn) || string(old) != "older" {
		t.Error("Repair changed files although it could not back up")
	}
}

func TestRepairNotARecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(path, []byte(`{"traceEvents": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(path); !errors.Is(err, ErrNotRecording) {
		t.Errorf("Repair(JSON) = %v; want ErrNotRecording", err)
	}
	if _, err := os.Stat(path + BackupSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Error("a backup was made of a file that is not a recording")
	}
}

// The reader Open returns owns its file: Close closes it (once; a second Close is a no-op).
func TestOpenOwnsFile(t *testing.T) {
	evs, s := sample(10)
	path := filepath.Join(t.TempDir(), "rec.xfr")
	if err := os.WriteFile(path, write(t, evs, s, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := r.r.(*os.File)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("after Close, the file answers Stat with %v; want os.ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
