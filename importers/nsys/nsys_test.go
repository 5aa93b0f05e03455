package nsys_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/timeline"
)

// TestOlderSchema: an export with an older version's columns reads: devices through
// TARGET_INFO_CUDA_DEVICE, NCCL kernels of both namings as collectives, a peer copy with its peer,
// launch times by correlation, a stream wait, and NVTX steps and marks.
func TestOlderSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.sqlite")
	writeExport(t, path, oldSchema, oldRows...)
	im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Warnings) != 0 {
		t.Fatalf("warnings: %v", im.Warnings)
	}
	type ev struct {
		Kind          timeline.Kind
		Sub           uint8
		Start, End, Q int64
		Device, Peer  int32
		Stream, Aux   uint32
		Bytes         int64
		Label         string
	}
	var got []ev
	for _, e := range im.Events {
		got = append(got, ev{e.Kind, e.Sub, e.Start, e.End, e.Queued, e.Device, e.Peer, e.Stream, e.Aux, e.Bytes, im.Strings.Lookup(e.Label)})
	}
	const rt, none = timeline.KindRuntime, timeline.NoDevice
	want := []ev{
		{timeline.KindStep, 0, 0, 30000, -1, none, none, 0, 12, 0, "ProfilerStep#12"},
		{rt, 0, 1000, 1500, 1000, none, none, 0, 4242, 0, "cudaLaunchKernel_v7000"},
		{timeline.KindMark, 0, 1000, 9000, -1, none, none, 0, 4242, 0, "forward"},
		{rt, 0, 2000, 2500, 2000, none, none, 0, 4242, 0, "cudaLaunchKernel_v7000"},
		{timeline.KindKernel, 0, 2000, 12000, 1000, 3, none, 7, 0, 0, "gemm<float>(float*)"},
		{rt, 0, 3000, 3500, 3000, none, none, 0, 4242, 0, "cudaLaunchKernel_v7000"},
		{timeline.KindMark, 0, 5000, 5000, -1, none, none, 0, 4242, 0, "checkpoint"},
		{rt, 0, 10000, 10500, 10000, none, none, 0, 4242, 0, "cudaMemcpyAsync_v3020"},
		{timeline.KindEventWait, 0, 11000, 11200, -1, 3, none, 13, 77, 0, ""},
		{timeline.KindCollective, uint8(timeline.CollAllGather), 12000, 20000, 2000, 3, none, 13, 0, 0, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"},
		{timeline.KindCollective, uint8(timeline.CollBroadcast), 12000, 20000, 3000, 5, none, 14, 0, 0, "ncclKernel_Broadcast_RING_LL(x)"},
		{timeline.KindMemcpy, uint8(timeline.CopyP2P), 20000, 21000, 10000, 3, 5, 7, 0, 1 << 20, ""},
		{timeline.KindMemcpy, uint8(timeline.CopyD2H), 21000, 22000, -1, 3, none, 7, 0, 4096, ""},
		{timeline.KindMemcpy, uint8(timeline.CopySet), 22000, 22500, -1, 5, none, 14, 0, 512, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n got %+v\nwant %+v", got, want)
	}
	if im.EpochUnixNs != 1_700_000_000_000_000_000 || im.Devices != 2 || im.Format != "nsys" {
		t.Fatalf("epoch %d, devices %d, format %s", im.EpochUnixNs, im.Devices, im.Format)
	}
	if im.Extra["gpu.3"] != "NVIDIA H100 80GB HBM3" || im.Extra["gpu.5"] == "" {
		t.Fatalf("device names %v", im.Extra)
	}
}

// TestStepRange: --step-range takes another NVTX range as the step, numbered by its #N or counted.
func TestStepRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.sqlite")
	writeExport(t, path, oldSchema, append(oldRows,
		`INSERT INTO NVTX_EVENTS VALUES (5000040000, 5000050000, 59, NULL, NULL, NULL, 'forward, op_id = 3', `+itoa(gtid)+`, NULL, NULL, 0),
		  (5000060000, 5000070000, 59, NULL, NULL, NULL, 'forward#9', `+itoa(gtid)+`, NULL, NULL, 0),
		  (5000060000, 5000070000, 59, NULL, NULL, NULL, 'forwardx', `+itoa(gtid)+`, NULL, NULL, 0)`)...)
	for _, tc := range []struct {
		step string
		want []uint32
	}{
		{"", []uint32{12}},
		{"forward", []uint32{1, 2, 9}},
		{"ProfilerStep#12", []uint32{1}},
	} {
		im, err := nsys.ReadFiles([]string{path}, nsys.Options{StepRange: tc.step})
		if err != nil {
			t.Fatal(err)
		}
		var got []uint32
		for _, e := range im.Events {
			if e.Kind == timeline.KindStep {
				got = append(got, e.Aux)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--step-range %q: steps %v, want %v", tc.step, got, tc.want)
		}
	}
}

// TestSyncTypeColumns: the synchronisation type is read from syncType, or from deprecatedSyncType
// where a version keeps it there.
func TestSyncTypeColumns(t *testing.T) {
	ddl := strings.Replace(oldSchema, "syncType INTEGER NOT NULL, eventId", "deprecatedSyncType INTEGER, syncType INTEGER, eventId", 1)
	rows := append([]string{}, oldRows...)
	rows[8] = `INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (5000011000, 5000011200, 0, 1, 13, 0, ` + itoa(gpid) + `, 2, NULL, 77)`
	path := filepath.Join(t.TempDir(), "new.sqlite")
	writeExport(t, path, ddl, rows...)
	im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range im.Events {
		if e.Kind == timeline.KindEventWait && e.Aux == 77 {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d event waits, want 1", n)
	}
}

// TestBadFiles: a file that is not SQLite, or SQLite that is not an nsys export, or a damaged one,
// is an error naming the file and what is missing.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noKernel := filepath.Join(dir, "nokernel.sqlite")
	writeExport(t, noKernel, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);")
	noStrings := filepath.Join(dir, "nostrings.sqlite")
	writeExport(t, noStrings, "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER);")
	noColumn := filepath.Join(dir, "nocolumn.sqlite")
	writeExport(t, noColumn, strings.Replace(oldSchema, "bytes INTEGER NOT NULL, copyKind", "bytes INTEGER NOT NULL, kind", 1))
	good := filepath.Join(dir, "good.sqlite")
	writeExport(t, good, oldSchema, oldRows...)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte{}, data...)
	for i := 4096; i < len(damaged); i++ { // every page but the first (the schema) overwritten
		damaged[i] = 0xA5
	}
	for _, tc := range []struct{ path, want string }{
		{write("text.sqlite", []byte("hello, this is not a database at all, just some text\n")), "not an SQLite database"},
		{noKernel, "no table CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY or CUPTI_ACTIVITY_KIND_MEMSET"},
		{noStrings, "no table StringIds"},
		{noColumn, "table CUPTI_ACTIVITY_KIND_MEMCPY has no column copyKind"},
		{write("damaged.sqlite", damaged), "damaged.sqlite"},
		// Cut short: the header's page count says by how much, not SQLite's "malformed".
		{write("cut.sqlite", data[:len(data)/2]), fmt.Sprintf("truncated: %d bytes of the %d its header gives", len(data)/2, len(data))},
	} {
		_, err := nsys.ReadFiles([]string{tc.path}, nsys.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(tc.path)) {
			t.Errorf("%s: error %v, want one naming the file and %q", filepath.Base(tc.path), err, tc.want)
		}
		if testing.Verbose() {
			t.Log(err)
		}
	}
}

// TestSeveralFiles: two exports are two hosts, each with its own devices, on one time axis: the
// same capture twice gives every event twice at the same times.
func TestSeveralFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.sqlite")
	writeExport(t, path, oldSchema, oldRows...)
	one, err := nsys.ReadFiles([]string{path}, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	two, err := nsys.ReadFiles([]string{path, path}, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(two.Events) != 2*len(one.Events) || two.Devices != 4 || two.EpochUnixNs != one.EpochUnixNs {
		t.Fatalf("%d events (one file: %d), %d devices", len(two.Events), len(one.Events), two.Devices)
	}
	hosts := map[uint16]map[int32]bool{}
	for i, e := range two.Events {
		if hosts[e.Host] == nil {
			hosts[e.Host] = map[int32]bool{}
		}
		if e.Device >= 0 {
			hosts[e.Host][e.Device] = true
		}
		if i > 0 && e.Start < two.Events[i-1].Start {
			t.Fatal("events out of start order")
		}
	}
	want := map[uint16]map[int32]bool{0: {3: true, 5: true}, 1: {9: true, 11: true}}
	if !reflect.DeepEqual(hosts, want) {
		t.Fatalf("devices by host %v, want %v", hosts, want)
	}
	if two.Extra["gpu.11"] == "" {
		t.Fatalf("device names %v", two.Extra)
	}
}

// TestProgress: progress is told up to every row read, twice: by the survey, then into events.
func TestProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.sqlite")
	writeExport(t, path, oldSchema, oldRows...)
	var last, total int64
	_, err := nsys.ReadFiles([]string{path}, nsys.Options{Progress: func(d, tot int64) { last, total = d, tot }})
	if err != nil {
		t.Fatal(err)
	}
	// runtime 4, kernels 3, copies 2, memset 1, syncs 2, NVTX 3, read twice
	if last != 30 || total != 30 {
		t.Fatalf("progress %d of %d, want 30 of 30", last, total)
	}
	// The survey's rows are told before the first event, however quickly they were read (the
	// console shows the import's progress with its first events).
	last, total = 0, 0
	var atBegin [2]int64
	_, err = nsys.Stream([]string{path}, nsys.Options{Progress: func(d, tot int64) { last, total = d, tot }},
		func(*kineto.Imported) error { atBegin = [2]int64{last, total}; return nil }, func([]timeline.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if atBegin[0] < 14 || atBegin[1] != 30 { // every row but the sync that is no wait
		t.Fatalf("progress %d of %d before the first event, want 14 of 30", atBegin[0], atBegin[1])
	}
}

// TestGraphNodeIDs: a kernel with a graph node id (the first two here) was replayed by a CUDA graph and carries the
// engine's captured mark; one without (NULL, or an export with no such column) does not.
func TestGraphNodeIDs(t *testing.T) {
	ddl := strings.Replace(oldSchema, "shortName INTEGER NOT NULL, gridX INTEGER NOT NULL);", "shortName INTEGER NOT NULL, gridX INTEGER NOT NULL, graphNodeId INTEGER);", 1)
	if ddl == oldSchema {
		t.Fatal("the kernel table's schema changed: update this test")
	}
	rows := append([]string{}, oldRows...)
	for i, r := range rows {
		if strings.Contains(r, "INTO CUPTI_ACTIVITY_KIND_KERNEL") {
			rows[i] = strings.NewReplacer(", 1),", ", 1, 42),", ", 1)", ", 1, NULL)").Replace(r)
		}
	}
	for _, tc := range []struct {
		name     string
		ddl      string
		captured int
	}{{"with graphNodeId", ddl, 2}, {"without the column", oldSchema, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "g.sqlite")
			r := rows
			if tc.ddl == oldSchema {
				r = oldRows
			}
			writeExport(t, path, tc.ddl, r...)
			im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var captured, kernels int
			for _, e := range im.Events {
				if e.Kind == timeline.KindKernel || e.Kind == timeline.KindCollective {
					kernels++
					if e.Captured() {
						captured++
					}
				}
			}
			if kernels != 3 || captured != tc.captured {
				t.Fatalf("%d kernels, %d captured; want 3, %d", kernels, captured, tc.captured)
			}
		})
	}
}
