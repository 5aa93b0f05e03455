package kineto

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
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

// peakSampler samples the live heap after a collection, every gcEvery calls, for its peak.
type peakSampler struct {
	peak, calls, gcEvery uint64
	sample               []metrics.Sample
}

func newPeakSampler(gcEvery uint64) *peakSampler {
	return &peakSampler{gcEvery: gcEvery, sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
}

func (p *peakSampler) tick() {
	if p.calls++; p.calls%p.gcEvery != 0 {
		return
	}
	runtime.GC()
	metrics.Read(p.sample)
	p.peak = max(p.peak, p.sample[0].Value.Uint64())
}

// largeSizes are the numbers of units of the large traces: XFERTOP_KINETO_LARGE, or def.
func largeSizes(t testing.TB, def ...int) []int {
	env := os.Getenv("XFERTOP_KINETO_LARGE")
	if env == "" {
		return def
	}
	var sizes []int
	for f := range strings.SplitSeq(env, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			t.Fatalf("XFERTOP_KINETO_LARGE: %q is not a number of units (4 events each)", f)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// TestMemoryFlat: the live heap an import needs does not grow with the trace: ten times the events,
// shuffled so that they are sorted by the external merge sort, about the same peak of live heap,
// sampled after a collection every 4 MiB read and every batch handed on (an import that held
// its events would need ten times the memory). By default the traces are of 8 and 80 MB, and the
// reorder buffer and the table of correlations are made 8 times smaller, and merges take 4 runs at
// a time, so that both traces fill them; XFERTOP_KINETO_LARGE=100000,1000000 compares traces of about 80 and 800 MB with the
// import's own sizes.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes traces of about 8 and 80 MB (not under -short or -race)")
	}
	sizes := largeSizes(t, 10_000, 100_000)
	opts := Options{reorder: reorderItems / 8, corrKeep: corrKeep / 8, fanIn: 4}
	if os.Getenv("XFERTOP_KINETO_LARGE") != "" {
		opts = Options{}
	}
	dir := t.TempDir()
	peaks := make([]uint64, len(sizes))
	for i, n := range sizes {
		path := largeTrace(t, dir, n, 1<<20)
		st, _ := os.Stat(path)
		p := newPeakSampler(1)
		batches := newPeakSampler(1)
		events := 0
		runtime.GC()
		opts.TempDir, opts.Progress = dir, func(int64, int64) { p.tick() }
		_, err := Stream([]string{path}, opts,
			func(*Imported) error { return nil },
			func(evs []timeline.Event) error { events += len(evs); batches.tick(); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if want := 3 * n; events != want { // the CPU ops are not imported
			t.Fatalf("%d units: %d events, want %d", n, events, want)
		}
		peaks[i] = max(p.peak, batches.peak)
		t.Logf("%d events (%.0f MiB of JSON): peak live heap %.1f MiB", events, float64(st.Size())/(1<<20), float64(peaks[i])/(1<<20))
		os.Remove(path)
	}
	if last := peaks[len(peaks)-1]; float64(last) > 1.25*float64(peaks[0]) {
		t.Fatalf("the live heap grows with the trace: %d bytes for %d times the events of %d bytes", last, sizes[len(sizes)-1]/sizes[0], peaks[0])
	}
}
