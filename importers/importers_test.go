package importers

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/recordings"
)

// TestDetect: the format is told by the content where it says one, else by the name; an empty
// file, an Nsight Systems report and other binary files get a message saying what to do.
func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name string
		head string
		want Format
		err  error
	}{
		{"run.xfr", recordings.Magic + "\x01\x02", FormatRecording, nil},
		{"run.json", recordings.Magic, FormatRecording, nil},
		{"run.sqlite", sqliteMagic + "\x10\x00", FormatNsys, nil},
		{"renamed.json", sqliteMagic, FormatNsys, nil},
		{"trace.json.gz", "\x1f\x8b\x08\x00", FormatTrace, nil},
		{"trace.json", "  \n{\"traceEvents\": []}", FormatTrace, nil},
		{"trace.sqlite", "{\"traceEvents\": []}", FormatTrace, nil},
		{"notes.txt", "hello", FormatTrace, nil}, // text: the JSON reader names the first bad byte
		{"blank.json", " \n", FormatTrace, nil},
		{"empty", "", FormatUnknown, ErrEmpty},
		{"empty.json", "", FormatUnknown, ErrEmpty},
		// A recording is told by the beginning of its magic when that is all the file holds, or by
		// its name when the content is no other format's: the recording reader says what is wrong.
		{"empty.xfr", "", FormatRecording, nil},
		{"cut.bin", recordings.Magic[:5], FormatRecording, nil},
		{"cut.json", "X", FormatRecording, nil},
		{"RUN.XFR", "hello", FormatRecording, nil},
		{"garbage.xfr", "\x00\x01binary", FormatRecording, nil},
		{"renamed.xfr", "{\"traceEvents\": []}", FormatTrace, nil},
		{"renamed.xfr", sqliteMagic, FormatNsys, nil},
		{"XFERTOP notes.txt", "XFERTOP, but text", FormatTrace, nil},
		{"run.nsys-rep", "\x00\x01\x02\xffQDSTRM", FormatUnknown, ErrNsysReport},
		{"RUN.QDREP", "\x89\x00binary", FormatUnknown, ErrNsysReport},
		{"text.nsys-rep", "hello, this is text\n", FormatUnknown, ErrNsysReport},
		{"image.png", "\x89PNG\r\n\x1a\n\x00\x00", FormatUnknown, ErrUnknownFormat},
		// NCCL Inspector's logs are JSON too: told by their record bodies, before a trace.
		{"node0-pid1.log", `{"header":{"id":"0x1","rank":0},"metadata":{"inspector_output_format_version":"v4.0"}}`, FormatInspector, nil},
		{"dump.log", `{"coll_perf":{"coll":"AllReduce"}}`, FormatInspector, nil},
		{"m.prom", "# HELP nccl_bus_bandwidth_gbs x\n", FormatInspector, nil},
		// ncclras's default output, text: told by its header and sections, whatever the name.
		{"ras-status.txt", "NCCL version 2.28.9+cuda13.0\nCUDA runtime version 13000, driver version 13000\n\nJob summary\n===========\n", FormatRAS, nil},
		{"status.json", "NCCL version 2.28.9\n\nJob summary\n", FormatRAS, nil},
		{"notes.txt", "NCCL version 2.28.9 is what we ran\n", FormatTrace, nil},
		{"ras.json", "{\n  \"nccl_version\": \"2.28.7\",\n  \"cuda_runtime_version\": 12090,\n  \"communicators\": [", FormatRAS, nil},
		// PyTorch's Flight Recorder: a pickle (torch's protocol 2), or JSON naming a dump's fields.
		{"nccl_trace_rank_0", "\x80\x02}q\x00(X\x07\x00\x00\x00version", FormatFlightRecorder, nil},
		{"fr_rank_1.json", "{\n \"comm_lib_version\": \"2.27.5\",\n \"entries\": [", FormatFlightRecorder, nil},
	} {
		got, err := DetectBytes(tc.name, []byte(tc.head))
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestReadRefusesMixedFormats: files of several formats, or a recording, are not imported together.
func TestReadRefusesMixedFormats(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "a.json")
	db := filepath.Join(dir, "b.sqlite")
	rec := filepath.Join(dir, "c.xfr")
	for p, data := range map[string]string{trace: `{"traceEvents":[]}`, db: sqliteMagic, rec: recordings.Magic} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Read([]string{trace, db}, Options{}); err == nil {
		t.Error("a trace and an export imported together")
	}
	if _, err := Read([]string{rec}, Options{}); err == nil {
		t.Error("a recording imported")
	}
}
