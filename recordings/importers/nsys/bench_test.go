package nsys_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/recordings/importers/nsys"
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

// BenchmarkImport measures rows read per second (kernels, copies and their runtime calls) from a
// synthetic export and from the 2-GPU sample when ../shared/data has it:
//
//	go test -run XXX -bench Import -benchmem -cpu 1 ./recordings/importers/nsys/
func BenchmarkImport(b *testing.B) {
	inputs := map[string]string{"synthetic": syntheticExport(b, 200_000)}
	if p := sharedExportOrEmpty("mfu_2gpu_after.sqlite"); p != "" {
		inputs["mfu_2gpu"] = p
	}
	for name, path := range inputs {
		b.Run(name, func(b *testing.B) {
			var rows int64
			b.ReportAllocs()
			for b.Loop() {
				im, err := nsys.ReadFiles([]string{path}, nsys.Options{Progress: func(done, _ int64) { rows = done }})
				if err != nil || len(im.Events) == 0 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
