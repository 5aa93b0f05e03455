package kineto

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"testing"
)

// writeLargeTrace writes a PyTorch profiler trace of n units, four events each: a CPU op, its
// cudaLaunchKernel, the kernel (6 µs after the op; every 50th an NCCL all-reduce), and either a
// ProfilerStep annotation (every 1,000th unit) or a host-to-device copy. The events are written
// shuffled within blocks of block events (block 1: in start order), by an affine permutation, so
// that the trace is written without holding it.
func writeLargeTrace(w io.Writer, n, block int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(`{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":8},"traceEvents":[` + "\n")
	total := 4 * n
	const t0 = int64(1682725898079292)
	for lo := 0; lo < total; lo += block {
		size := min(block, total-lo)
		a := 2*(size/3) + 1 // odd; coprime with size when size is a power of two, else checked below
		for gcd(a, size) != 1 {
			a += 2
		}
		for i := range size {
			j := lo + (a*i+size/2)%size
			u, slot := j/4, j%4
			t := t0 + int64(u)*20
			corr := u + 1
			if lo+i > 0 {
				bw.WriteString(",\n")
			}
			switch slot {
			case 0:
				fmt.Fprintf(bw, `{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":7,"ts":%d,"dur":8,"args":{"External id":%d}}`, t, corr)
			case 1:
				fmt.Fprintf(bw, `{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":7,"ts":%d,"dur":4,"args":{"correlation":%d}}`, t+2, corr)
			case 2:
				name := "ampere_sgemm_128x64_nn"
				if u%50 == 0 {
					name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
				}
				fmt.Fprintf(bw, `{"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":7,"ts":%d.250,"dur":12.5,"args":{"device":0,"stream":7,"correlation":%d,"In msg nelems":1024,"dtype":"Float","Group size":8}}`, name, t+6, corr)
			default:
				if u%1000 == 0 {
					fmt.Fprintf(bw, `{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":7,"tid":7,"ts":%d,"dur":20000}`, u/1000, t)
				} else {
					fmt.Fprintf(bw, `{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":9,"ts":%d,"dur":3,"args":{"device":0,"stream":9,"bytes":65536}}`, t+11)
				}
			}
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// largeTrace writes writeLargeTrace's trace to a file in dir.
func largeTrace(t testing.TB, dir string, n, block int) string {
	t.Helper()
	path := fmt.Sprintf("%s/trace%d-%d.json", dir, n, block)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeLargeTrace(f, n, block); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
