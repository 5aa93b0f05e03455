package nsys_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/timeline"
)

// The schemas of testdata: the exact columns, types and constraints of the tables xfertop reads, as
// two versions of Nsight Systems export them (each file names its sources):
//
//   - schema-2024.sql: NVIDIA's SQLite Schema Reference of July 2024 (Nsight Systems User Guide), as
//     published in github.com/chenbobby/cuda_lab, nsys_go/events/schema.sql (commit 63b63f8).
//   - schema-2026.sql: the real exports in ../shared/data/nsys (Nsight Systems 2026.2, export schema
//     3.25.0; 2026.1, 3.24.14, for the device tables).
//
// Between them, for the tables read: TARGET_INFO_SESSION_START_TIME gained systemClockNs (2024 has
// only ANALYSIS_DETAILS' startTime on the timestamps' clock); TARGET_INFO_CUDA_DEVICE (each
// process's CUDA device → GPU) appeared; CUPTI_ACTIVITY_KIND_SYNCHRONIZATION's syncType gained
// deprecatedSyncType beside it; kernels, copies and syncs gained greenContextId, copies copyCount,
// NVTX_EVENTS binaryData: columns move, and the importer reads them by name.
var schemaVersions = []string{"schema-2024.sql", "schema-2026.sql"}

// row is one row to insert, by column name: a column the version lacks is left out; a NOT NULL column
// not given is 0 (or ”).
type row struct {
	table string
	cols  map[string]any
}

// insert writes rows into c, whatever the order and set of the version's columns.
func insert(t *testing.T, c *sqlite3.Conn, rows []row) {
	t.Helper()
	for _, r := range rows {
		info := map[string][2]string{} // column → type, notnull
		s, _, err := c.Prepare("SELECT name, type, \"notnull\" FROM pragma_table_info('" + r.table + "')")
		if err != nil {
			t.Fatal(err)
		}
		for s.Step() {
			info[s.ColumnText(0)] = [2]string{s.ColumnText(1), s.ColumnText(2)}
		}
		s.Close()
		if len(info) == 0 {
			continue // a table this version does not have
		}
		var names, values []string
		for col, ti := range info {
			v, given := r.cols[col]
			switch {
			case given:
				if str, ok := v.(string); ok {
					v = "'" + strings.ReplaceAll(str, "'", "''") + "'"
				}
			case ti[1] == "1" && ti[0] == "TEXT":
				v = "''"
			case ti[1] == "1":
				v = 0
			default:
				continue
			}
			names, values = append(names, `"`+col+`"`), append(values, fmt.Sprint(v))
		}
		q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", r.table, strings.Join(names, ", "), strings.Join(values, ", "))
		if err := c.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// versionCapture is one capture in rows by column name: a process with two GPUs, a launch and a
// kernel, an NCCL kernel, a peer copy and a copy to the host, a memset, a stream wait, a step, a
// range and a mark. enum numbers the kinds (by their names in the ENUM tables).
func versionCapture(enum func(table, name string, id int64) int64) []row {
	var rows []row
	add := func(table string, cols map[string]any) { rows = append(rows, row{table, cols}) }
	for id, v := range []string{"", "cudaLaunchKernel_v7000", "gemm", "gemm<float>(float*)", "ncclDevKernel_AllGather_RING_LL",
		"ncclDevKernel_AllGather_RING_LL(args)", "cudaMemcpyAsync_v3020", "ProfilerStep#12"} {
		if id > 0 {
			add("StringIds", map[string]any{"id": id, "value": v})
		}
	}
	for _, e := range []struct {
		table, name string
		id          int64
	}{
		{"ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_HTOD", 1}, {"ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_DTOH", 2},
		{"ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_DTOD", 8}, {"ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_PTOP", 10},
		{"ENUM_CUPTI_SYNC_TYPE", "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", 1},
		{"ENUM_CUPTI_SYNC_TYPE", "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", 2},
		{"ENUM_CUPTI_SYNC_TYPE", "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", 3},
		{"ENUM_NSYS_EVENT_TYPE", "NvtxMark", 34}, {"ENUM_NSYS_EVENT_TYPE", "NvtxPushPopRange", 59},
		{"ENUM_NSYS_EVENT_TYPE", "NvtxtMark", 65}, {"ENUM_NSYS_EVENT_TYPE", "NvtxDomainCreate", 75},
	} {
		add(e.table, map[string]any{"id": enum(e.table, e.name, e.id), "name": e.name, "label": e.name})
	}
	add("TARGET_INFO_SESSION_START_TIME", map[string]any{"utcEpochNs": int64(1_700_000_000_000_000_000), "systemClockNs": 5_000_000_000})
	add("ANALYSIS_DETAILS", map[string]any{"globalVid": 1, "duration": 40_000, "startTime": 5_000_000_000, "stopTime": 5_000_040_000})
	add("META_DATA_EXPORT", map[string]any{"name": "EXPORT_SCHEMA_VERSION", "value": "test"})
	for gpu, name := range []string{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"} {
		add("TARGET_INFO_GPU", map[string]any{"vmId": 0, "id": gpu, "name": name, "cuDevice": gpu})
		add("TARGET_INFO_CUDA_DEVICE", map[string]any{"gpuId": gpu, "cudaId": gpu, "pid": 4242})
	}
	copyKind := func(name string, id int64) int64 { return enum("ENUM_CUDA_MEMCPY_OPER", name, id) }
	syncType := func(name string, id int64) int64 { return enum("ENUM_CUPTI_SYNC_TYPE", name, id) }
	nvtx := func(name string, id int64) int64 { return enum("ENUM_NSYS_EVENT_TYPE", name, id) }
	gpuRow := func(start, end, dev, stream, corr int64) map[string]any {
		return map[string]any{"start": start, "end": end, "deviceId": dev, "contextId": 1, "streamId": stream, "correlationId": corr, "globalPid": int64(gpid)}
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	add("CUPTI_ACTIVITY_KIND_RUNTIME", map[string]any{"start": 5_000_001_000, "end": 5_000_001_500, "eventClass": 1, "globalTid": int64(gtid), "correlationId": 1, "nameId": 1})
	add("CUPTI_ACTIVITY_KIND_RUNTIME", map[string]any{"start": 5_000_002_000, "end": 5_000_002_500, "eventClass": 1, "globalTid": int64(gtid), "correlationId": 2, "nameId": 1})
	add("CUPTI_ACTIVITY_KIND_RUNTIME", map[string]any{"start": 5_000_010_000, "end": 5_000_010_500, "eventClass": 1, "globalTid": int64(gtid), "correlationId": 3, "nameId": 6})
	add("CUPTI_ACTIVITY_KIND_KERNEL", with(gpuRow(5_000_002_000, 5_000_012_000, 0, 7, 1), "demangledName", 3, "shortName", 2, "mangledName", 3))
	add("CUPTI_ACTIVITY_KIND_KERNEL", with(gpuRow(5_000_012_000, 5_000_020_000, 1, 13, 2), "demangledName", 5, "shortName", 4))
	add("CUPTI_ACTIVITY_KIND_MEMCPY", with(gpuRow(5_000_020_000, 5_000_021_000, 0, 7, 3), "bytes", 1<<20,
		"copyKind", copyKind("CUDA_MEMCPY_KIND_PTOP", 10), "srcDeviceId", 0, "dstDeviceId", 1))
	add("CUPTI_ACTIVITY_KIND_MEMCPY", with(gpuRow(5_000_021_000, 5_000_022_000, 0, 7, 0), "bytes", 4096,
		"copyKind", copyKind("CUDA_MEMCPY_KIND_DTOH", 2), "srcDeviceId", 0, "dstDeviceId", 0))
	add("CUPTI_ACTIVITY_KIND_MEMSET", with(gpuRow(5_000_022_000, 5_000_022_500, 1, 13, 0), "value", 0, "bytes", 512))
	add("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", with(gpuRow(5_000_011_000, 5_000_011_200, 0, 13, 0),
		"syncType", syncType("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", 2), "eventId", 77))
	add("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", with(gpuRow(5_000_023_000, 5_000_024_000, 0, 7, 0),
		"syncType", syncType("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", 3), "eventId", 0))
	add("NVTX_EVENTS", map[string]any{"start": 5_000_000_000, "end": 5_000_030_000, "eventType": nvtx("NvtxPushPopRange", 59), "globalTid": int64(gtid), "textId": 7})
	add("NVTX_EVENTS", map[string]any{"start": 5_000_001_000, "end": 5_000_009_000, "eventType": nvtx("NvtxPushPopRange", 59), "globalTid": int64(gtid),
		"text": "aten::mm, seq = 4, op_id = 17"})
	add("NVTX_EVENTS", map[string]any{"start": 5_000_005_000, "eventType": nvtx("NvtxMark", 34), "globalTid": int64(gtid), "text": "checkpoint"})
	add("NVTX_EVENTS", map[string]any{"start": 5_000_000_500, "eventType": nvtx("NvtxDomainCreate", 75), "globalTid": int64(gtid), "text": "a domain"})
	return rows
}

// writeVersion writes the capture in the tables of a schema of testdata.
func writeVersion(t *testing.T, path, schema string, enum func(table, name string, id int64) int64) {
	t.Helper()
	ddl, err := os.ReadFile(filepath.Join("testdata", schema))
	if err != nil {
		t.Fatal(err)
	}
	writeExport(t, path, string(ddl))
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	insert(t, c, versionCapture(enum))
}

func sameEnum(_, _ string, id int64) int64 { return id }

// TestSchemaVersions: a capture written in the tables of Nsight Systems 2024 and of 2026, and in
// 2026's with its kinds numbered otherwise in the ENUM tables, imports to the same events, on the
// same wall clock.
func TestSchemaVersions(t *testing.T) {
	const rt, none = timeline.KindRuntime, timeline.NoDevice
	type ev struct {
		Kind          timeline.Kind
		Sub           uint8
		Start, End, Q int64
		Device, Peer  int32
		Stream, Aux   uint32
		Bytes         int64
		Label         string
	}
	want := []ev{
		{timeline.KindStep, 0, 0, 30000, -1, none, none, 0, 12, 0, "ProfilerStep#12"},
		{rt, 0, 1000, 1500, 1000, none, none, 0, 4242, 0, "cudaLaunchKernel_v7000"},
		{timeline.KindMark, 0, 1000, 9000, -1, none, none, 0, 4242, 0, "aten::mm"},
		{rt, 0, 2000, 2500, 2000, none, none, 0, 4242, 0, "cudaLaunchKernel_v7000"},
		{timeline.KindKernel, 0, 2000, 12000, 1000, 0, none, 7, 0, 0, "gemm<float>(float*)"},
		{timeline.KindMark, 0, 5000, 5000, -1, none, none, 0, 4242, 0, "checkpoint"},
		{rt, 0, 10000, 10500, 10000, none, none, 0, 4242, 0, "cudaMemcpyAsync_v3020"},
		{timeline.KindEventWait, 0, 11000, 11200, -1, 0, none, 13, 77, 0, ""},
		{timeline.KindCollective, uint8(timeline.CollAllGather), 12000, 20000, 2000, 1, none, 13, 0, 0, "ncclDevKernel_AllGather_RING_LL(args)"},
		{timeline.KindMemcpy, uint8(timeline.CopyP2P), 20000, 21000, 10000, 0, 1, 7, 0, 1 << 20, ""},
		{timeline.KindMemcpy, uint8(timeline.CopyD2H), 21000, 22000, -1, 0, none, 7, 0, 4096, ""},
		{timeline.KindMemcpy, uint8(timeline.CopySet), 22000, 22500, -1, 1, none, 13, 0, 512, ""},
	}
	renumber := func(table, _ string, id int64) int64 {
		if table == "ENUM_CUDA_MEMCPY_OPER" || table == "ENUM_CUPTI_SYNC_TYPE" || table == "ENUM_NSYS_EVENT_TYPE" {
			return 1000 + id
		}
		return id
	}
	for _, tc := range []struct {
		name, schema string
		enum         func(table, name string, id int64) int64
	}{
		{"2024", "schema-2024.sql", sameEnum},
		{"2026", "schema-2026.sql", sameEnum},
		{"2026 renumbered", "schema-2026.sql", renumber},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v.sqlite")
			writeVersion(t, path, tc.schema, tc.enum)
			im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Warnings) != 0 {
				t.Fatalf("warnings: %v", im.Warnings)
			}
			var got []ev
			for _, e := range im.Events {
				got = append(got, ev{e.Kind, e.Sub, e.Start, e.End, e.Queued, e.Device, e.Peer, e.Stream, e.Aux, e.Bytes, im.Strings.Lookup(e.Label)})
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("events:\n got %+v\nwant %+v", got, want)
			}
			if im.EpochUnixNs != 1_700_000_000_000_000_000 || im.Devices != 2 || im.Extra["gpu.1"] != "NVIDIA H100 80GB HBM3" {
				t.Fatalf("epoch %d, devices %d, names %v", im.EpochUnixNs, im.Devices, im.Extra)
			}
		})
	}
}

// TestSchemaMissing: an export of either version without a table or column xfertop needs is an
// error naming the file, the table and the column.
func TestSchemaMissing(t *testing.T) {
	for _, schema := range schemaVersions {
		ddl, err := os.ReadFile(filepath.Join("testdata", schema))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, from, to, want string
		}{
			{"no StringIds", "CREATE TABLE StringIds", "CREATE TABLE Strings", "no table StringIds"},
			{"no shortName", "shortName INTEGER", "baseName INTEGER", "table CUPTI_ACTIVITY_KIND_KERNEL has no column shortName"},
			{"no copyKind", "copyKind INTEGER", "kind INTEGER", "table CUPTI_ACTIVITY_KIND_MEMCPY has no column copyKind"},
			{"no streamId", "streamId INTEGER NOT NULL,\n  correlationId INTEGER,\n  globalPid INTEGER,\n  value",
				"stream INTEGER NOT NULL,\n  correlationId INTEGER,\n  globalPid INTEGER,\n  value", "table CUPTI_ACTIVITY_KIND_MEMSET has no column streamId"},
			{"no eventType", "eventType INTEGER NOT NULL,\n  rangeId", "type INTEGER NOT NULL,\n  rangeId", "table NVTX_EVENTS has no column eventType"},
		} {
			changed := strings.Replace(string(ddl), tc.from, tc.to, 1)
			if changed == string(ddl) {
				t.Fatalf("%s: %s: %q is not in the schema", schema, tc.name, tc.from)
			}
			path := filepath.Join(t.TempDir(), strings.ReplaceAll(tc.name, " ", "-")+".sqlite")
			writeExport(t, path, changed)
			_, err := nsys.ReadFiles([]string{path}, nsys.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: %s: error %v, want one naming the file and %q", schema, tc.name, err, tc.want)
			}
		}
	}
}
