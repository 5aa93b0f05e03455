package nsys_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/importers/nsys"
	"github.com/xfertop/xfertop/timeline"
)

// syntheticExport writes an export of n kernels and n/10 copies on two devices, each launched by a
// runtime call, in the older schema.
func syntheticExport(b *testing.B, n int) string {
	path := filepath.Join(b.TempDir(), "synthetic.sqlite")
	var k, m, r strings.Builder
	k.WriteString("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ")
	m.WriteString("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES ")
	r.WriteString("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ")
	for i := range n {
		t := 5_000_000_000 + int64(i)*2000
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&r, "%s(%d, %d, 1, %d, %d, 1, 0)", sep, t, t+500, gtid, i+1)
		fmt.Fprintf(&k, "%s(%d, %d, %d, 1, 7, %d, %d, 3, 2, 1)", sep, t+600, t+1900, i%2, i+1, gpid)
		if i%10 == 0 {
			if i > 0 {
				m.WriteString(",")
			}
			fmt.Fprintf(&m, "(%d, %d, %d, 1, 9, 0, %d, 1048576, 1, 0, 2, 0, 0)", t+600, t+1400, i%2, gpid)
		}
	}
	writeExport(b, path, oldSchema, oldRows[0], oldRows[1], oldRows[3], r.String(), k.String(), m.String())
	return path
}

// tableRows counts the rows of the tables the importer reads, with SQL.
func tableRows(b *testing.B, path string) int64 {
	c := query(b, path)
	var n int64
	for _, t := range []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
		"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS"} {
		if len(rows(b, c, "SELECT 1 FROM sqlite_master WHERE name = '"+t+"'")) > 0 {
			n += rows(b, c, "SELECT count(*) FROM "+t)[0][0]
		}
	}
	return n
}

// cpuTime is the CPU time the process has used, every thread's (the collector's too): on a machine
// shared with other work, rows per CPU second say what an import costs where wall time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRows reports rows per wall second and per CPU second since cpu0.
func reportRows(b *testing.B, rows int64, cpu0 time.Duration) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(rows)*float64(b.N)/cpu.Seconds(), "rows/cpu-s")
	}
}

// BenchmarkImport measures rows read per second (each row of the tables read counts once, though
// the survey reads them too) from a synthetic export and from the 2-GPU sample when ../shared/data
// has it, keeping every event (ReadFiles) and keeping none (Stream, as analyze and replay do):
//
//	go test -run XXX -bench 'Import$' -benchmem -cpu 1 ./importers/nsys/
func BenchmarkImport(b *testing.B) {
	inputs := map[string]string{"synthetic": syntheticExport(b, 200_000)}
	if p := sharedExportOrEmpty("mfu_2gpu_after.sqlite"); p != "" {
		inputs["mfu_2gpu"] = p
	}
	for name, path := range inputs {
		n := tableRows(b, path)
		b.Run(name+"/ReadFiles", func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				im, err := nsys.ReadFiles([]string{path}, nsys.Options{})
				if err != nil || len(im.Events) == 0 {
					b.Fatal(err)
				}
			}
			reportRows(b, n, cpu0)
		})
		b.Run(name+"/Stream", func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				events := 0
				_, err := nsys.Stream([]string{path}, nsys.Options{}, func(*kineto.Imported) error { return nil },
					func(evs []timeline.Event) error { events += len(evs); return nil })
				if err != nil || events == 0 {
					b.Fatal(err)
				}
			}
			reportRows(b, n, cpu0)
		})
	}
}
