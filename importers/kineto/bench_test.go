package kineto

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// syntheticKineto writes a PyTorch profiler trace of n steps: per step a ProfilerStep annotation,
// and 100 × (a CPU op with shapes, a cudaLaunchKernel, its kernel; every tenth a memcpy and its
// launch), as the newer Kineto format writes them.
func syntheticKineto(steps int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":8},"traceEvents":[`)
	ts, corr := int64(1682725898079292), 0
	for s := range steps {
		fmt.Fprintf(&b, `{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":7,"tid":7,"ts":%d,"dur":%d,"args":{"External id":%d}},`+"\n", s, ts, 100*20, s)
		for i := range 100 {
			corr++
			t := ts + int64(i)*20
			fmt.Fprintf(&b, `{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":7,"ts":%d,"dur":8,"args":{"External id":%d,"Input Dims":[[2048,1024],[1024,4096]],"Input type":["float","float"]}},`+"\n", t, corr)
			fmt.Fprintf(&b, `{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":7,"ts":%d,"dur":4,"args":{"External id":%d,"cbid":211,"correlation":%d}},`+"\n", t+2, corr, corr)
			fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":7,"ts":%d.250,"dur":15.5,"args":{"External id":%d,"queued":0,"device":0,"context":1,"stream":7,"correlation":%d,"registers per thread":126,"shared memory":16384,"blocks per SM":4.8,"warps per SM":9.6,"grid":[32,16,1],"block":[128,1,1],"est. achieved occupancy %%":12}},`+"\n", t+6, corr, corr)
			if i%10 == 0 {
				corr++
				fmt.Fprintf(&b, `{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":7,"tid":7,"ts":%d,"dur":3,"args":{"correlation":%d}},`+"\n", t+10, corr)
				fmt.Fprintf(&b, `{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":9,"ts":%d,"dur":6,"args":{"device":0,"context":1,"stream":9,"correlation":%d,"bytes":1048576,"memory bandwidth (GB/s)":174.7}},`+"\n", t+11, corr)
			}
		}
		ts += 100 * 20
	}
	b.WriteString(`{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"python"}}]}`)
	return b.Bytes()
}

// BenchmarkImport measures import throughput (trace events per second) and the bytes allocated per
// trace event, on a synthetic trace and on the real ResNet-50 trace when ../shared/data has it.
// Compare commits with:
//
//	go test -run XXX -bench Import -benchmem -count 5 ./importers/kineto/ | tee new.txt; benchstat old.txt new.txt
func BenchmarkImport(b *testing.B) {
	inputs := []struct {
		name string
		data []byte
	}{{"synthetic", syntheticKineto(300)}}
	if f, err := os.Open(data + "resnet50_v100_worker0.pt.trace.json.gz"); err == nil {
		zr, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		inputs = append(inputs, struct {
			name string
			data []byte
		}{"resnet50", raw})
	}
	for _, in := range inputs {
		events := bytes.Count(in.data, []byte(`"ph"`))
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			var before, after runtimeMem
			before.read()
			for b.Loop() {
				if _, err := Import(in.name+".json", bytes.NewReader(in.data), Options{}); err != nil {
					b.Fatal(err)
				}
			}
			after.read()
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(after.total-before.total)/float64(b.N)/float64(events), "B/event")
		})
	}
}

// runtimeMem reads the bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}

// BenchmarkStreamVsWhole compares, in one run, the streaming import with the importer that held
// every event until the end of its file (legacy_test.go), on writeLargeTrace's trace of 50,000
// units (150,000 events imported, about 10 MB of JSON), in start order and shuffled: events
// imported per CPU second by each (process CPU time, collector included: wall time on a shared
// machine says more about the neighbours), their ratio (stream/whole), and the CPU time the
// streaming import takes before its first event goes out (first-cpu-ms: begin is called). A collection before
// each import keeps the garbage of one out of the other's time. The trace is read from memory, so
// that the figures are the importers', not the disk's:
//
//	go test -run XXX -bench StreamVsWhole -benchtime 5x ./importers/kineto/
func BenchmarkStreamVsWhole(b *testing.B) {
	const units = 50_000
	for _, tc := range []struct {
		name  string
		block int
	}{{"in-order", 1}, {"shuffled", 1 << 20}} {
		var buf bytes.Buffer
		if err := writeLargeTrace(&buf, units, tc.block); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			var whole, streamed, first time.Duration
			events := 0
			for b.Loop() {
				runtime.GC()
				c0 := cpuTime()
				old, err := legacyImport("t.json", bytes.NewReader(data), Options{})
				if err != nil {
					b.Fatal(err)
				}
				whole += cpuTime() - c0
				n := len(old.Events)
				old = nil
				runtime.GC()
				c0 = cpuTime()
				var got []timeline.Event // kept, as Import keeps them
				_, err = stream([]source{readerSource("t.json", bytes.NewReader(data))}, Options{TempDir: dir},
					func(*Imported) error { first += cpuTime() - c0; return nil },
					func(evs []timeline.Event) error { got = append(got, evs...); return nil })
				if err != nil {
					b.Fatal(err)
				}
				streamed += cpuTime() - c0
				if len(got) != n {
					b.Fatalf("%d events streamed, %d whole", len(got), n)
				}
				events = n
			}
			b.ReportMetric(float64(events)*float64(b.N)/whole.Seconds(), "whole-events/cpu-s")
			b.ReportMetric(float64(events)*float64(b.N)/streamed.Seconds(), "stream-events/cpu-s")
			b.ReportMetric(whole.Seconds()/streamed.Seconds(), "stream/whole")
			b.ReportMetric(first.Seconds()*1000/float64(b.N), "first-cpu-ms")
			b.ReportMetric(float64(len(data))*float64(b.N)/streamed.Seconds()/1e6, "stream-MB/cpu-s")
		})
	}
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkThroughput measures the import in the unit its goal is stated in: megabytes of JSON
// (uncompressed) per CPU second (process CPU time, collector included), on the large traces of
// writeLargeTrace (200,000 units, 800,000 trace events, 127 MB; in start order and shuffled) and on
// syntheticKineto's (1,000 steps, 321,000 trace events with the shapes and occupancy args a real
// trace carries, 75 MB), and on the shared ResNet-50 trace (75,718 events, 35 MB, names of up to
// hundreds of bytes) when the checkout has ../shared/data, read from memory:
//
//   - decode: the scanner alone, every event read and handed to a callback that keeps nothing;
//
//   - stream: the whole streaming import (Stream's path: scanner, conversion, sort, output), the
//     events counted and dropped;
//
//   - gunzip: decompressing the same JSON gzipped (compress/gzip's output at the default level),
//     measured apart from the import, with the decompressor the importer uses
//     (klauspost/compress), and gunzip-stdlib with compress/gzip's, the one it used before.
//
//     go test -run XXX -bench Throughput -benchtime 3x -cpu 1 ./importers/kineto/
func BenchmarkThroughput(b *testing.B) {
	traces := []struct {
		name string
		data func() []byte
	}{
		{"large-in-order", func() []byte { return largeTraceBytes(b, 200_000, 1) }},
		{"large-shuffled", func() []byte { return largeTraceBytes(b, 200_000, 1<<20) }},
		{"synthetic", func() []byte { return syntheticKineto(1000) }},
		{"resnet50", func() []byte { return sharedTraceBytes(b, "resnet50_v100_worker0.pt.trace.json.gz") }},
	}
	for _, tr := range traces {
		var data []byte // made by the first sub-benchmark that runs: -bench may select one trace
		report := func(b *testing.B, cpu time.Duration) {
			b.ReportMetric(float64(len(data))*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
			b.SetBytes(int64(len(data)))
		}
		made := func() {
			if data == nil {
				data = tr.data()
			}
			if len(data) == 0 {
				b.Skip("the " + tr.name + " trace is not in " + sharedData)
			}
		}
		b.Run(tr.name+"/decode", func(b *testing.B) {
			made()
			var cpu time.Duration
			for b.Loop() {
				runtime.GC()
				c0 := cpuTime()
				n := 0
				if _, err := decode("t.json", bytes.NewReader(data), Options{}, func(*rawEvent, *header) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
			}
			report(b, cpu)
		})
		b.Run(tr.name+"/stream", func(b *testing.B) {
			made()
			dir := b.TempDir()
			var cpu time.Duration
			for b.Loop() {
				runtime.GC()
				c0 := cpuTime()
				n := 0
				_, err := stream([]source{readerSource("t.json", bytes.NewReader(data))}, Options{TempDir: dir},
					func(*Imported) error { return nil }, func(evs []timeline.Event) error { n += len(evs); return nil })
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
			}
			report(b, cpu)
		})
		b.Run(tr.name+"/gunzip", func(b *testing.B) {
			made()
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write(data)
			zw.Close()
			var cpu time.Duration
			for b.Loop() {
				c0 := cpuTime()
				src, done, _, err := openStream("t.json.gz", bytes.NewReader(gz.Bytes()), DefaultMaxInputBytes)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, src); err != nil {
					b.Fatal(err)
				}
				done()
				cpu += cpuTime() - c0
			}
			report(b, cpu)
		})
		b.Run(tr.name+"/gunzip-stdlib", func(b *testing.B) {
			made()
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write(data)
			zw.Close()
			var cpu time.Duration
			for b.Loop() {
				c0 := cpuTime()
				zr, err := gzip.NewReader(bytes.NewReader(gz.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, zr); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
			}
			report(b, cpu)
		})
	}
}

// sharedData is where the shared real traces are, when this checkout has them.
const sharedData = data

// sharedTraceBytes is a gzipped trace of the shared data, uncompressed, or nothing when the
// checkout does not have it.
func sharedTraceBytes(b testing.TB, name string) []byte {
	f, err := os.Open(sharedData + name)
	if err != nil {
		return nil
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// largeTraceBytes is writeLargeTrace's trace in memory.
func largeTraceBytes(b testing.TB, n, block int) []byte {
	var buf bytes.Buffer
	if err := writeLargeTrace(&buf, n, block); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}
