package nsys_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/timeline"
)

// GPU ops of every table, with whether each is compute (a kernel not NCCL's) or communication (an
// NCCL kernel, as HTA counts communication), and its launch time.
const opsSQL = `
WITH rt AS (SELECT correlationId AS corr, globalTid >> 24 AS proc, min(start) AS launched
            FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1, 2),
ops AS (
  SELECT k.start, k.end, k.deviceId AS dev, k.streamId AS stream, k.correlationId AS corr, k.globalPid >> 24 AS proc,
         s.value NOT LIKE 'ncclDevKernel%' AND s.value NOT LIKE 'ncclKernel%' AS compute,
         s.value LIKE 'ncclDevKernel%' OR s.value LIKE 'ncclKernel%' AS comm
  FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
  UNION ALL SELECT start, end, deviceId, streamId, correlationId, globalPid >> 24, 0, 0 FROM CUPTI_ACTIVITY_KIND_MEMCPY
  %MEMSET%)
SELECT ops.start AS start, ops.end AS "end", dev, stream, compute, coalesce(rt.launched, -1) AS launched, comm
FROM ops LEFT JOIN rt ON rt.corr = ops.corr AND rt.proc = ops.proc`

// union returns the total length of the union of intervals.
func union(ivs [][2]int64) int64 {
	slices.SortFunc(ivs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	var total, end int64 = 0, math.MinInt64
	for _, iv := range ivs {
		s := max(iv[0], end)
		if iv[1] > s {
			total += iv[1] - s
		}
		end = max(end, iv[1])
	}
	return total
}

// TestNumbersAgainstSQL: the report of a real export (the per-GPU temporal breakdown, overlap,
// copies by kind and size class, collectives, idle gaps by HTA's causes) has the values worked out
// here from the export with SQL, not from xfertop's events.
func TestNumbersAgainstSQL(t *testing.T) {
	for _, name := range []string{"mfu_2gpu_after.sqlite", "mock.sqlite"} {
		t.Run(name, func(t *testing.T) {
			path := sharedExport(t, name)
			im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			an := analysis.New(timeline.Meta{IdleMode: timeline.IdleHTA, Devices: im.Devices})
			for i := range im.Events {
				an.Emit(&im.Events[i])
			}
			res := an.Result(im.Strings)
			c := query(t, path)
			checkBreakdown(t, c, res)
			checkCopies(t, c, res)
			checkIdle(t, c, res)
			checkCollectives(t, c, res)
		})
	}
}

func memsetPart(c *sqlite3.Conn) string {
	s, _, err := c.Prepare("SELECT 1 FROM CUPTI_ACTIVITY_KIND_MEMSET")
	if err != nil {
		return ""
	}
	s.Close()
	return "UNION ALL SELECT start, end, deviceId, streamId, correlationId, globalPid >> 24, 0, 0 FROM CUPTI_ACTIVITY_KIND_MEMSET"
}

func opsQuery(c *sqlite3.Conn) string { return strings.Replace(opsSQL, "%MEMSET%", memsetPart(c), 1) }

// checkBreakdown: per device, span = last end − first start of its ops, busy = |∪ ops|, compute =
// |∪ compute kernels|, idle = span − busy, communication = |∪ NCCL kernels|, overlap =
// |∪ compute ∩ ∪ communication|.
func checkBreakdown(t *testing.T, c *sqlite3.Conn, res *analysis.Result) {
	type dev struct {
		lo, hi           int64
		all, comp, comms [][2]int64
	}
	devs := map[int64]*dev{}
	for _, r := range rows(t, c, opsQuery(c)) {
		d := devs[r[2]]
		if d == nil {
			d = &dev{lo: math.MaxInt64, hi: math.MinInt64}
			devs[r[2]] = d
		}
		iv := [2]int64{r[0], r[1]}
		d.lo, d.hi = min(d.lo, r[0]), max(d.hi, r[1])
		d.all = append(d.all, iv)
		if r[4] == 1 {
			d.comp = append(d.comp, iv)
		}
		if r[6] == 1 {
			d.comms = append(d.comms, iv)
		}
	}
	if len(res.Breakdown.Devices) != len(devs) {
		t.Fatalf("%d devices in the report, %d in the export", len(res.Breakdown.Devices), len(devs))
	}
	var idle int64
	for _, got := range res.Breakdown.Devices {
		d := devs[int64(got.Device)]
		if d == nil {
			t.Fatalf("device %d is not in the export", got.Device)
		}
		span, busy, comp, comm := d.hi-d.lo, union(d.all), union(d.comp), union(d.comms)
		overlap := comp + comm - union(append(d.comp, d.comms...)) // |A ∩ B| = |A| + |B| − |A ∪ B|
		idle += span - busy
		if got.SpanNs != span || got.BusyNs != busy || got.IdleNs != span-busy || got.ComputeNs != comp ||
			got.NonCompNs != busy-comp || got.CommNs != comm || got.OverlapNs != overlap {
			t.Errorf("device %d: span %d busy %d idle %d compute %d non-compute %d comm %d overlap %d; SQL: %d %d %d %d %d %d %d",
				got.Device, got.SpanNs, got.BusyNs, got.IdleNs, got.ComputeNs, got.NonCompNs, got.CommNs, got.OverlapNs,
				span, busy, span-busy, comp, busy-comp, comm, overlap)
		}
		t.Logf("device %d: span %d ns, idle %.2f%%, compute %.2f%%, overlap %d ns", got.Device, span,
			100*float64(span-busy)/float64(span), 100*float64(comp)/float64(span), overlap)
	}
	if res.Breakdown.IdleNs != idle {
		t.Errorf("idle total %d, SQL %d", res.Breakdown.IdleNs, idle)
	}
}

// nextPow2 is the size class of n bytes: the power of two it is at most.
func nextPow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// checkCopies: copies by kind (count, bytes, summed durations, GB/s = bytes / durations) and by
// size class, from copyKind.
func checkCopies(t *testing.T, c *sqlite3.Conn, res *analysis.Result) {
	const kindSQL = `SELECT CASE copyKind WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 10 THEN 4 ELSE 3 END, bytes, end - start
	                 FROM CUPTI_ACTIVITY_KIND_MEMCPY`
	q := kindSQL
	if memsetPart(c) != "" {
		q += " UNION ALL SELECT 5, bytes, end - start FROM CUPTI_ACTIVITY_KIND_MEMSET"
	}
	kinds := map[string]*agg{}
	sizes := map[sizeKey]*agg{}
	for _, r := range rows(t, c, q) {
		k := timeline.CopyDir(r[0]).String()
		for _, a := range []*agg{get(kinds, k), get(sizes, sizeKey{k, nextPow2(r[1])})} {
			a.n++
			a.bytes += r[1]
			a.ns += r[2]
		}
	}
	for k, want := range kinds {
		got := res.Transfers.ByKind[k]
		gbps := roundRate(float64(want.bytes) / float64(want.ns))
		if got.Count != want.n || got.Bytes != want.bytes || got.BusyNs != want.ns || (want.bytes > 0 && (got.GBps == nil || *got.GBps != gbps)) {
			t.Errorf("%s: %d copies, %d B, %d ns, %v GB/s; SQL %d, %d B, %d ns, %.2f GB/s", k, got.Count, got.Bytes, got.BusyNs, deref(got.GBps),
				want.n, want.bytes, want.ns, gbps)
		}
	}
	if n := len(res.Transfers.BySize); n != len(sizes) {
		t.Errorf("%d size rows, SQL %d", n, len(sizes))
	}
	for _, row := range res.Transfers.BySize {
		want := sizes[sizeKey{row.Kind, row.SizeClass}]
		if want == nil || row.Count != want.n || row.Bytes != want.bytes || row.BusyNs != want.ns {
			t.Errorf("%s ≤ %d B: %+v, SQL %+v", row.Kind, row.SizeClass, row.Stats, want)
		}
	}
}

type agg struct{ n, bytes, ns int64 }

type sizeKey struct {
	kind  string
	class int64
}

// get returns m[k], added when absent.
func get[K comparable](m map[K]*agg, k K) *agg {
	if m[k] == nil {
		m[k] = &agg{}
	}
	return m[k]
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkIdle: per stream, in start order, each op's start − the previous op's end (HTA's gap) is host
// wait when the op was launched after the previous one ended, kernel wait under 30 µs, other else.
func checkIdle(t *testing.T, c *sqlite3.Conn, res *analysis.Result) {
	q := `WITH o AS (` + opsQuery(c) + `),
	g AS (SELECT *, LAG("end") OVER (PARTITION BY dev, stream ORDER BY start, "end") AS prev FROM o)
	SELECT CASE WHEN launched >= 0 AND launched > prev THEN 0 WHEN start - prev < 30000 THEN 1 ELSE 2 END AS cause,
	       sum(start - prev)
	FROM g WHERE prev IS NOT NULL AND start != prev GROUP BY cause`
	want := map[string]int64{"host_wait": 0, "kernel_wait": 0, "other": 0}
	names := []string{"host_wait", "kernel_wait", "other"}
	for _, r := range rows(t, c, q) {
		want[names[r[0]]] = r[1]
	}
	for k, v := range want {
		if got := res.StreamIdle.ByCause[k]; got != v {
			t.Errorf("idle %s: %d ns, SQL %d", k, got, v)
		}
	}
	t.Logf("stream gaps by cause: %v", want)
}

// checkCollectives: each NCCL kernel is one collective part; Nsight records no message size, so
// bandwidths stay unknown.
func checkCollectives(t *testing.T, c *sqlite3.Conn, res *analysis.Result) {
	r := rows(t, c, `SELECT count(*), coalesce(sum(k.end - k.start), 0) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
	                 WHERE s.value LIKE 'ncclDevKernel%' OR s.value LIKE 'ncclKernel%'`)[0]
	var n, ns int64
	for _, row := range res.Collectives.Rows {
		n += row.Count
		ns += row.TimeNs
		if row.AlgBW != nil || row.BusBW != nil {
			t.Errorf("%s: bandwidth %v/%v without a known size", row.Op, deref(row.AlgBW), deref(row.BusBW))
		}
	}
	if n != r[0] || ns != r[1] {
		t.Errorf("collectives: %d taking %d ns; SQL %d taking %d ns", n, ns, r[0], r[1])
	}
}

// roundRate rounds a rate as the analysis does: two decimals, three significant digits below 1.
func roundRate(x float64) float64 {
	if x >= 1 || x == 0 {
		return math.Round(x*100) / 100
	}
	scale := math.Pow(10, 2-math.Floor(math.Log10(x)))
	return math.Round(x*scale) / scale
}
