package flightrecorder

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// containerPickle is a well-formed dump made of containers only, n of them: its entries, or an
// unused field of one entry, a list of n empty dicts, lists or tuples, pushed in batches of 1,000
// as a pickler does (MARK … APPENDS), or lists nested two deep. The costliest input per byte a
// dump can be: each one-byte opcode makes a container.
func containerPickle(shape string, n int) []byte {
	var b bytes.Buffer
	b.Write([]byte{opProto, 2, opEmptyDict, opMark})
	str := func(s string) {
		b.WriteByte(opBinUnicode)
		binary.Write(&b, binary.LittleEndian, uint32(len(s)))
		b.WriteString(s)
	}
	items := func(op byte, n int) {
		b.WriteByte(opEmptyList)
		for i := 0; i < n; i += 1000 {
			b.WriteByte(opMark)
			for range min(1000, n-i) {
				b.WriteByte(op)
			}
			b.WriteByte(opAppends)
		}
	}
	str("entries")
	switch shape {
	case "dicts":
		items(opEmptyDict, n)
	case "lists":
		items(opEmptyList, n)
	case "tuples":
		items(opEmptyTuple, n)
	case "nested": // lists of 10 empty lists
		b.WriteByte(opEmptyList)
		for i := 0; i < n; i += 1000 {
			b.WriteByte(opMark)
			for range min(1000, n-i) / 10 {
				b.Write([]byte{opEmptyList, opMark, opEmptyList, opEmptyList, opEmptyList, opEmptyList, opEmptyList, opEmptyList, opEmptyList, opEmptyList, opEmptyList, opAppends})
			}
			b.WriteByte(opAppends)
		}
	case "frames", "sizes": // one entry whose frames (not read) or input_sizes (read) hold the containers
		b.WriteByte(opEmptyList)
		b.WriteByte(opEmptyDict)
		b.WriteByte(opMark)
		str("profiling_name")
		str("nccl:all_reduce")
		str("collective_seq_id")
		b.Write([]byte{opBinInt1, 1})
		str("state")
		str("completed")
		if shape == "frames" {
			str("frames")
			items(opEmptyDict, n)
		} else {
			str("input_sizes")
			items(opEmptyList, n)
		}
		b.WriteByte(opSetItems)
		b.WriteByte(opAppend)
	}
	str("pg_config")
	b.WriteByte(opEmptyDict)
	b.Write([]byte{opSetItems, opStop})
	return b.Bytes()
}

// containerShapes are containerPickle's shapes: entries of empty dicts, lists or tuples (a
// well-formed pickle, refused as a dump: no entry has a name), lists of ten empty lists, and one
// good entry whose frames (a field the importer does not read) or input_sizes (one it reads)
// hold them.
var containerShapes = []string{"dicts", "lists", "tuples", "nested", "frames", "sizes"}

// decodeCost decodes b as the importer does and returns the bytes it allocated, and the most
// heap it had in use (sampled every millisecond, the GC running as it does), per input byte.
func decodeCost(b []byte) (alloc, peak float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h := watchHeap()
	d, _ := decode(b, newRankSets()) // an error (no entry has a name) is the input's, its cost counted too
	p := h.end()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(d)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(b)), float64(p-before.HeapInuse) / float64(len(b))
}

// heapPeak samples the heap in use until end.
type heapPeak struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

func watchHeap() *heapPeak {
	h := &heapPeak{stop: make(chan struct{})}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
		for {
			metrics.Read(sample)
			h.peak = max(h.peak, sample[0].Value.Uint64()+sample[1].Value.Uint64())
			select {
			case <-h.stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return h
}

func (h *heapPeak) end() uint64 {
	close(h.stop)
	h.done.Wait()
	return h.peak
}

// BenchmarkContainerPickle decodes container-only dumps of 1,000,000 containers (about 1 MB) as
// the importer does and reports the bytes allocated, and the peak heap in use, per byte of input.
// Old (a *pdict or *plist a container, lists regrown by append, the whole tree copied into plain
// values) against new, alloc-B/input-B and peak-B/input-B: dicts 217/169 → 18/18, lists and
// tuples 281/152-163 → 18/18, nested 84/81 → 18/19, frames 193/144 → 18/18, sizes 145/105 → 34/34.
//
//	go test ./importers/flightrecorder -run '^$' -bench ContainerPickle -benchtime 3x
func BenchmarkContainerPickle(b *testing.B) {
	for _, shape := range containerShapes {
		b.Run(shape, func(b *testing.B) {
			in := containerPickle(shape, 1_000_000)
			var alloc, peak float64
			for b.Loop() {
				a, p := decodeCost(in)
				alloc, peak = max(alloc, a), max(peak, p)
			}
			b.ReportMetric(alloc, "alloc-B/input-B")
			b.ReportMetric(peak, "peak-B/input-B")
		})
	}
}

// A dump of 100,000 containers and nothing else costs at most 40 bytes allocated per byte of it
// (for a million: about 18, and 34 where the importer reads the field that holds them, against
// 145-281 before empty containers took no allocation, lists grew by chunks, and fields the
// importer does not read were left out unvisited), and still decodes as it did: entries of empty
// containers are refused; one good entry is read whatever its frames, its 100,000 input sizes
// noted as more than a collective has.
func TestContainerPickleBounded(t *testing.T) {
	for _, shape := range containerShapes {
		in := containerPickle(shape, 100_000)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d, err := decode(in, newRankSets())
		runtime.ReadMemStats(&after)
		if perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(in)); perByte > 40 {
			t.Errorf("%s: %.1f bytes allocated per input byte; want at most 40", shape, perByte)
		}
		switch shape {
		case "frames", "sizes":
			if err != nil || len(d.entries) != 1 || d.entries[0].profiling != "nccl:all_reduce" {
				t.Errorf("%s: %v, %+v; want the one entry read", shape, err, d)
			} else if shape == "sizes" && (d.entries[0].inSizes != nil || len(d.notes) != 1 || !strings.Contains(d.notes[0], "100000 tensors, more than 64")) {
				t.Errorf("sizes: %d input sizes, notes %q; want them unknown, 100000 tensors being more than a collective has", len(d.entries[0].inSizes), d.notes)
			}
		default:
			if err == nil || !strings.Contains(err.Error(), "none of its") {
				t.Errorf("%s: %v; want the entries refused", shape, err)
			}
		}
	}
}
