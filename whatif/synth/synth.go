package synth

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
)

// Shape is the shape of a synthetic PyTorch profiler trace: ranks × steps, each step a host
// launching ops kernels on a compute stream (every eighth an all-reduce on a communication
// stream, matched across ranks), a copy to the host, and a synchronisation at the step's end.
type Shape struct {
	Ranks, Steps, Ops int
	Seed              uint64
	// Unmarked leaves out the ProfilerStep#N ranges: the steps are to be inferred from the
	// kernels' sequence, which repeats.
	Unmarked bool
}

// event is one event of a synthetic trace, as written.
type event struct {
	cat, name    string
	ts, dur      int64
	corr         int
	gpu          bool
	comm         int // the all-reduce's index in its step, for its end; -1 for none
	bytes, ranks int
	stream       int
	annotation   bool
}

// Write writes one PyTorch profiler trace per rank into ws (ws[r] for rank r), a step at a
// time: durations come from the seed, so every rank (and every run) sees the same job. The GPU
// runs behind the host, so each step's last kernels run into the next step's host time, as in
// real traces.
func Write(ws []io.Writer, sh Shape) error {
	bws := make([]*bufio.Writer, len(ws))
	for r, w := range ws {
		bws[r] = bufio.NewWriterSize(w, 1<<16)
		fmt.Fprintf(bws[r], `{"schemaVersion":1,"distributedInfo":{"rank":%d,"world_size":%d},"traceEvents":[`, r, sh.Ranks)
	}
	rng := rand.New(rand.NewPCG(sh.Seed, 1))
	host, gpu, comm, corr := make([]int64, sh.Ranks), make([]int64, sh.Ranks), make([]int64, sh.Ranks), make([]int, sh.Ranks)
	for r := range host {
		host[r] = 100 + int64(r)*3
	}
	first := make([]bool, sh.Ranks)
	for step := range sh.Steps {
		durs := make([]int64, sh.Ops)
		for i := range durs {
			durs[i] = 8 + rng.Int64N(40)
		}
		gap, syncEarly := 20+rng.Int64N(30), rng.Int64N(200)
		evs := make([][]event, sh.Ranks)
		commEnd := make([]int64, sh.Ops/8+1)
		for r := range evs {
			stepStart := host[r]
			add := func(e event) { evs[r] = append(evs[r], e) }
			for i := range sh.Ops {
				corr[r]++
				launch := host[r]
				add(event{cat: "cuda_runtime", name: "cudaLaunchKernel", ts: launch, dur: 4, corr: corr[r], comm: -1})
				host[r] += 6
				if i%8 == 7 {
					start := max(launch+5, comm[r], gpu[r])
					commEnd[i/8] = max(commEnd[i/8], start+30)
					add(event{cat: "kernel", name: "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
						ts: start, corr: corr[r], gpu: true, comm: i / 8, stream: 13, ranks: sh.Ranks})
					continue
				}
				start := max(launch+5, gpu[r])
				gpu[r] = start + durs[i]
				add(event{cat: "kernel", name: fmt.Sprintf("gemm_%d", i%5), ts: start, dur: durs[i], corr: corr[r], gpu: true, comm: -1, stream: 7})
			}
			corr[r]++
			copyStart := max(host[r]+5, gpu[r])
			add(event{cat: "cuda_runtime", name: "cudaMemcpyAsync", ts: host[r], dur: 3, corr: corr[r], comm: -1})
			add(event{cat: "gpu_memcpy", name: "Memcpy DtoH (Device -> Pinned)", ts: copyStart, dur: 6, corr: corr[r], gpu: true, comm: -1, stream: 7, bytes: 4096})
			gpu[r] = copyStart + 6
			host[r] += 8
			corr[r]++
			wait := max(2, gpu[r]-host[r]-syncEarly)
			add(event{cat: "cuda_runtime", name: "cudaStreamSynchronize", ts: host[r], dur: wait, corr: corr[r], comm: -1})
			host[r] += wait + gap
			if !sh.Unmarked {
				add(event{cat: "user_annotation", name: fmt.Sprintf("ProfilerStep#%d", step), ts: stepStart - 1, dur: host[r] - stepStart, comm: -1, annotation: true})
			}
		}
		for r := range evs {
			comm[r] = commEnd[len(commEnd)-1]
			for _, e := range evs[r] {
				if e.comm >= 0 {
					e.dur = commEnd[e.comm] - e.ts
					comm[r] = max(comm[r], commEnd[e.comm])
				}
				if first[r] {
					bws[r].WriteString(",")
				}
				first[r] = true
				bws[r].WriteString("\n")
				writeEv(bws[r], r, e)
			}
		}
	}
	for _, bw := range bws {
		bw.WriteString("\n]}\n")
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// writeEv writes one event of rank r as the PyTorch profiler does.
func writeEv(w *bufio.Writer, r int, e event) {
	if !e.gpu {
		fmt.Fprintf(w, `{"ph":"X","cat":%q,"name":%q,"pid":%d,"tid":%d,"ts":%d,"dur":%d`, e.cat, e.name, 1000+r, 1000+r, e.ts, e.dur)
		if !e.annotation {
			fmt.Fprintf(w, `,"args":{"correlation":%d}`, e.corr)
		}
		w.WriteString("}")
		return
	}
	fmt.Fprintf(w, `{"ph":"X","cat":%q,"name":%q,"pid":%d,"tid":%d,"ts":%d,"dur":%d,"args":{"device":%d,"stream":%d,"correlation":%d`,
		e.cat, e.name, r, e.stream, e.ts, e.dur, r, e.stream, e.corr)
	if e.comm >= 0 {
		fmt.Fprintf(w, `,"In msg nelems":1048576,"Out msg nelems":1048576,"Group size":%d,"dtype":"Float"`, e.ranks)
	}
	if e.bytes > 0 {
		fmt.Fprintf(w, `,"bytes":%d`, e.bytes)
	}
	w.WriteString("}}")
}
