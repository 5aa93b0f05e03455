package nsystest

import (
	"fmt"
	"strconv"

	"github.com/ncruces/go-sqlite3"
)

// The tables of a synthetic export, with the columns of an older Nsight Systems (2024.1): no
// greenContextId, mangledName, copyCount or deprecatedSyncType, NVTX names only as registered
// strings. Only what the importer reads, and a few columns it does not.
const OldSchema = `
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
	GPID = 4242 << 24
	GTID = GPID + 7
)

// OldRows fills OldSchema: a process whose CUDA device 0 is GPU 3 and device 1 GPU 5. Each call
// returns a new slice, for callers that append to it.
func OldRows() []string {
	return []string{
		`INSERT INTO StringIds VALUES (1,'cudaLaunchKernel_v7000'),(2,'gemm'),(3,'gemm<float>(float*)'),
	  (4,'ncclDevKernel_AllGather_RING_LL'),(5,'ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
	  (6,'cudaMemcpyAsync_v3020'),(7,'ProfilerStep#12'),(8,'forward'),(9,'ncclKernel_Broadcast_RING_LL(x)')`,
		`INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '', 5000000000)`,
		`INSERT INTO TARGET_INFO_GPU VALUES (3, 'NVIDIA H100 80GB HBM3', '0000:1b:00.0'), (5, 'NVIDIA H100 80GB HBM3', '0000:2b:00.0')`,
		`INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (3, 0, 4242, 'GPU-a'), (5, 1, 4242, 'GPU-b')`,
		// launches at 5.000001 s (corr 1), 5.000002 (2), 5.000003 (3), 5.000010 (4, a copy)
		`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (5000001000, 5000001500, 1, ` + itoa(GTID) + `, 1, 1, 0),
	  (5000002000, 5000002500, 1, ` + itoa(GTID) + `, 2, 1, 0), (5000003000, 5000003500, 1, ` + itoa(GTID) + `, 3, 1, 0),
	  (5000010000, 5000010500, 1, ` + itoa(GTID) + `, 4, 6, 0)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000002000, 5000012000, 0, 1, 7, 1, ` + itoa(GPID) + `, 3, 2, 1),
	  (5000012000, 5000020000, 0, 1, 13, 2, ` + itoa(GPID) + `, 5, 4, 1),
	  (5000012000, 5000020000, 1, 1, 14, 3, ` + itoa(GPID) + `, 9, 9, 1)`,
		// a peer copy from device 0 to device 1, and a D2H copy
		`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (5000020000, 5000021000, 0, 1, 7, 4, ` + itoa(GPID) + `, 1048576, 10, 2, 2, 0, 1),
	  (5000021000, 5000022000, 0, 1, 7, 0, ` + itoa(GPID) + `, 4096, 2, 2, 0, 0, 0)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (5000022000, 5000022500, 1, 1, 14, 0, ` + itoa(GPID) + `, 0, 512)`,
		// a stream wait (kept), a stream synchronize (a host call: left to the runtime calls)
		`INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (5000011000, 5000011200, 0, 1, 13, 0, ` + itoa(GPID) + `, 2, 77),
	  (5000023000, 5000024000, 0, 1, 7, 0, ` + itoa(GPID) + `, 3, 0)`,
		// a step (push/pop range), a range, a mark
		`INSERT INTO NVTX_EVENTS VALUES (5000000000, 5000030000, 59, NULL, NULL, NULL, NULL, ` + itoa(GTID) + `, NULL, 7, 0),
	  (5000001000, 5000009000, 59, NULL, NULL, NULL, NULL, ` + itoa(GTID) + `, NULL, 8, 0),
	  (5000005000, NULL, 34, NULL, NULL, NULL, 'checkpoint', ` + itoa(GTID) + `, NULL, NULL, 0)`,
	}
}

// WriteLarge writes, with SQL alone, an export of n kernels on 8 GPUs and 4 streams, each launched
// by a runtime call, a copy for every 10 kernels and an NVTX step for every 1,000: about 2.1 n rows.
// Kernels are stored as Nsight stores them, in the order their buffers were flushed: out of start
// order within each block of block rows (1: in order; above the reorder buffer: far out of order).
func WriteLarge(path string, n, block int) error {
	if n <= 0 || block <= 0 || n%block != 0 {
		return fmt.Errorf("%d kernels are not whole blocks of %d", n, block)
	}
	// j is the position in start order of the kernel stored i-th: blocks of block rows reversed.
	j := fmt.Sprintf("(i - i %% %[1]d + (%[1]d - 1 - i %% %[1]d))", block)
	gen := func(rows int) string {
		return fmt.Sprintf("WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < %d) ", rows-1)
	}
	rows := OldRows()
	g := strconv.FormatInt(GPID, 10)
	stmts := []string{
		"PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF",
		rows[0], rows[1], rows[2],
		`INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242, 'a'), (1, 1, 4242, 'b'), (2, 2, 4242, 'c'), (3, 3, 4242, 'd'),
		  (4, 4, 4242, 'e'), (5, 5, 4242, 'f'), (6, 6, 4242, 'g'), (7, 7, 4242, 'h')`,
		gen(n) + `INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 5000000000 + i * 2000 - 1500, 5000000000 + i * 2000 - 1000, 1, ` +
			strconv.FormatInt(GTID, 10) + `, i + 1, 1, 0 FROM s`,
		gen(n) + `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 5000000000 + ` + j + ` * 2000, 5000000000 + ` + j + ` * 2000 + 1300, ` +
			j + ` % 8, 1, 7 + ` + j + ` % 4, ` + j + ` + 1, ` + g + `, CASE WHEN ` + j + ` % 50 = 0 THEN 5 ELSE 3 END, CASE WHEN ` + j + ` % 50 = 0 THEN 4 ELSE 2 END, 1 FROM s`,
		gen(n/10) + `INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY SELECT 5000000000 + i * 20000 + 300, 5000000000 + i * 20000 + 1700, i % 8, 1, 20, 0, ` +
			g + `, 1048576, 1 + i % 2, 0, 0, i % 8, i % 8 FROM s`,
		gen(max(n/1000, 1)) + `INSERT INTO NVTX_EVENTS SELECT 5000000000 + i * 2000000 - 1700, 5000000000 + (i + 1) * 2000000 - 1700, 59, NULL, NULL, NULL, ` +
			`'ProfilerStep#' || i, ` + strconv.FormatInt(GTID, 10) + `, NULL, NULL, 0 FROM s`,
	}
	return Write(path, OldSchema, stmts...)
}

// LargeRows is how many rows WriteLarge writes for n kernels (and how many events they import as).
func LargeRows(n int) int { return n + n + n/10 + max(n/1000, 1) }

// Write creates an SQLite file at path from DDL and rows.
func Write(path, ddl string, inserts ...string) error {
	c, err := sqlite3.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Exec(ddl); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	for _, q := range inserts {
		if err := c.Exec(q); err != nil {
			return fmt.Errorf("%.200s: %w", q, err)
		}
	}
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
