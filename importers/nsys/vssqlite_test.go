package nsys_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/timeline"
)

// totalsSQL is the per-GPU totals as SQLite computes them: kernels (count, busy ns) and copies
// (count, bytes, ns) by device. The importer makes an NCCL kernel a collective: both count as kernels.
const totalsSQL = `SELECT deviceId, count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId ORDER BY deviceId;
SELECT deviceId, count(*), sum(bytes), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY deviceId ORDER BY deviceId;`

// totalsEnv names the export a child process of the test binary imports, printing totalsSQL's
// totals as the importer finds them (TestMain).
const totalsEnv = "XFERTOP_NSYS_TOTALS"

// printTotals imports an export as analyze does (a stream, no event kept) and prints its per-GPU
// totals in sqlite3's list format.
func printTotals(path string) error {
	type kern struct{ n, ns int64 }
	type cp struct{ n, bytes, ns int64 }
	kernels, copies := map[int32]*kern{}, map[int32]*cp{}
	_, err := nsys.Stream([]string{path}, nsys.Options{}, func(*kineto.Imported) error { return nil }, func(evs []timeline.Event) error {
		for i := range evs {
			e := &evs[i]
			switch {
			case e.Kind == timeline.KindKernel || e.Kind == timeline.KindCollective: // an NCCL kernel is a collective
				k := kernels[e.Device]
				if k == nil {
					k = &kern{}
					kernels[e.Device] = k
				}
				k.n++
				k.ns += e.End - e.Start
			case e.Kind == timeline.KindMemcpy && timeline.CopyDir(e.Sub) != timeline.CopySet:
				c := copies[e.Device]
				if c == nil {
					c = &cp{}
					copies[e.Device] = c
				}
				c.n++
				c.bytes += e.Bytes
				c.ns += e.End - e.Start
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var out strings.Builder
	for _, d := range slices.Sorted(mapsKeys(kernels)) {
		fmt.Fprintf(&out, "%d|%d|%d\n", d, kernels[d].n, kernels[d].ns)
	}
	for _, d := range slices.Sorted(mapsKeys(copies)) {
		fmt.Fprintf(&out, "%d|%d|%d|%d\n", d, copies[d].n, copies[d].bytes, copies[d].ns)
	}
	_, err = os.Stdout.WriteString(out.String())
	return err
}

func mapsKeys[V any](m map[int32]V) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// childCPU runs cmd and returns its output and the CPU time it took (user and system, start-up
// included).
func childCPU(b *testing.B, cmd *exec.Cmd) (string, time.Duration) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", cmd, err, errb.String())
	}
	return out.String(), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkVsSQLite3 compares an import's CPU time with SQLite's own: the per-GPU totals of
// totalsSQL computed by the sqlite3 command, and by this test binary run again as a process that
// streams the export through the importer (as analyze does) and sums the same totals from its
// events, each a whole process, start-up included, in turn; the two must print the same totals.
// On the synthetic export of 2,000,000 kernels (4.2 M rows, largeExport, stored out of order in
// blocks of 64) and on the 2-GPU sample when ../shared/data has it. import/sqlite3 is the ratio of
// their CPU times:
//
//	go test -run XXX -bench VsSQLite3 -benchtime 3x ./importers/nsys/
func BenchmarkVsSQLite3(b *testing.B) {
	sqlite, err := exec.LookPath("sqlite3")
	if err != nil {
		b.Skip("no sqlite3 command (apt-get install sqlite3)")
	}
	inputs := [][2]string{}
	if p := sharedExportOrEmpty("mfu_2gpu_after.sqlite"); p != "" {
		inputs = append(inputs, [2]string{"mfu_2gpu", p})
	}
	large := filepath.Join(b.TempDir(), "k2000000.sqlite")
	largeExport(b, large, 2_000_000, 64)
	inputs = append(inputs, [2]string{"kernels=2000000", large})
	for _, in := range inputs {
		b.Run(in[0], func(b *testing.B) {
			var imp, sq time.Duration
			for b.Loop() {
				child := exec.Command(os.Args[0], "-test.run=^$")
				child.Env = append(os.Environ(), totalsEnv+"="+in[1], "GOMAXPROCS=1")
				got, d := childCPU(b, child)
				imp += d
				want, d := childCPU(b, exec.Command(sqlite, "-readonly", in[1], totalsSQL))
				sq += d
				if got != want {
					b.Fatalf("the importer's totals:\n%s\nsqlite3's:\n%s", got, want)
				}
			}
			b.ReportMetric(imp.Seconds()*1000/float64(b.N), "import-cpu-ms")
			b.ReportMetric(sq.Seconds()*1000/float64(b.N), "sqlite3-cpu-ms")
			b.ReportMetric(imp.Seconds()/sq.Seconds(), "import/sqlite3")
		})
	}
}
