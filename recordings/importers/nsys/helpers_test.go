package nsys_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

// sharedExport is the path of an export in ../shared/data/nsys beside the repository, or "" with
// the test skipped when that directory is absent (it is not part of the project).
func sharedExport(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	p := filepath.Join(root, "..", "shared", "data", "nsys", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is absent (the sample Nsight Systems exports live outside the project): %v", p, err)
	}
	return p
}

// sharedExportOrEmpty is sharedExport's path, or "" when it is absent.
func sharedExportOrEmpty(name string) string {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "data", "nsys", name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// query opens an export read-only for the test's own SQL.
func query(t testing.TB, path string) *sqlite3.Conn {
	t.Helper()
	c, err := sqlite3.OpenFlags("file:"+path+"?immutable=1", sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rows runs q and returns its rows as int64s (NULL as -1).
func rows(t testing.TB, c *sqlite3.Conn, q string) [][]int64 {
	t.Helper()
	s, _, err := c.Prepare(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer s.Close()
	var out [][]int64
	for s.Step() {
		r := make([]int64, s.ColumnCount())
		for i := range r {
			if s.ColumnType(i) == sqlite3.NULL {
				r[i] = -1
			} else {
				r[i] = s.ColumnInt64(i)
			}
		}
		out = append(out, r)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// The tables of a synthetic export, with the columns of an older Nsight Systems (2024.1): no
// greenContextId, mangledName, copyCount or deprecatedSyncType, NVTX names only as registered
// strings. Only what the importer reads, and a few columns it does not.
const oldSchema = `
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, systemClockNs INTEGER);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation TEXT);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, uuid TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, dstDeviceId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
`

// Process 4242 on host 0 (globalPid = pid << 24), thread 7.
const (
	gpid = 4242 << 24
	gtid = gpid + 7
)

// oldRows fills oldSchema: a process whose CUDA device 0 is GPU 3 and device 1 GPU 5.
var oldRows = []string{
	`INSERT INTO StringIds VALUES (1,'cudaLaunchKernel_v7000'),(2,'gemm'),(3,'gemm<float>(float*)'),
	  (4,'ncclDevKernel_AllGather_RING_LL'),(5,'ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
	  (6,'cudaMemcpyAsync_v3020'),(7,'ProfilerStep#12'),(8,'forward'),(9,'ncclKernel_Broadcast_RING_LL(x)')`,
	`INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '', 5000000000)`,
	`INSERT INTO TARGET_INFO_GPU VALUES (3, 'NVIDIA H100 80GB HBM3', '0000:1b:00.0'), (5, 'NVIDIA H100 80GB HBM3', '0000:2b:00.0')`,
	`INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (3, 0, 4242, 'GPU-a'), (5, 1, 4242, 'GPU-b')`,
	// launches at 5.000001 s (corr 1), 5.000002 (2), 5.000003 (3), 5.000010 (4, a copy)
	`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (5000001000, 5000001500, 1, ` + itoa(gtid) + `, 1, 1, 0),
	  (5000002000, 5000002500, 1, ` + itoa(gtid) + `, 2, 1, 0), (5000003000, 5000003500, 1, ` + itoa(gtid) + `, 3, 1, 0),
	  (5000010000, 5000010500, 1, ` + itoa(gtid) + `, 4, 6, 0)`,
	`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000002000, 5000012000, 0, 1, 7, 1, ` + itoa(gpid) + `, 3, 2, 1),
	  (5000012000, 5000020000, 0, 1, 13, 2, ` + itoa(gpid) + `, 5, 4, 1),
	  (5000012000, 5000020000, 1, 1, 14, 3, ` + itoa(gpid) + `, 9, 9, 1)`,
	// a peer copy from device 0 to device 1, and a D2H copy
	`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (5000020000, 5000021000, 0, 1, 7, 4, ` + itoa(gpid) + `, 1048576, 10, 2, 2, 0, 1),
	  (5000021000, 5000022000, 0, 1, 7, 0, ` + itoa(gpid) + `, 4096, 2, 2, 0, 0, 0)`,
	`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (5000022000, 5000022500, 1, 1, 14, 0, ` + itoa(gpid) + `, 0, 512)`,
	// a stream wait (kept), a stream synchronize (a host call: left to the runtime calls)
	`INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (5000011000, 5000011200, 0, 1, 13, 0, ` + itoa(gpid) + `, 2, 77),
	  (5000023000, 5000024000, 0, 1, 7, 0, ` + itoa(gpid) + `, 3, 0)`,
	// a step (push/pop range), a range, a mark
	`INSERT INTO NVTX_EVENTS VALUES (5000000000, 5000030000, 59, NULL, NULL, NULL, NULL, ` + itoa(gtid) + `, NULL, 7, 0),
	  (5000001000, 5000009000, 59, NULL, NULL, NULL, NULL, ` + itoa(gtid) + `, NULL, 8, 0),
	  (5000005000, NULL, 34, NULL, NULL, NULL, 'checkpoint', ` + itoa(gtid) + `, NULL, NULL, 0)`,
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// writeExport creates an SQLite file at path from DDL and rows.
func writeExport(t testing.TB, path, ddl string, inserts ...string) {
	t.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec(ddl); err != nil {
		t.Fatalf("schema: %v", err)
	}
	for _, q := range inserts {
		if err := c.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
