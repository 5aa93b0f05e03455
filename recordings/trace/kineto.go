package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// Imported is a trace file (or several, one per rank) turned into events.
type Imported struct {
	Events      []timeline.Event
	Strings     *timeline.Strings
	Source      string // the file names
	Format      string // "kineto", "chrome" or "xfertop-chrome"
	Devices     int
	EpochUnixNs int64 // wall-clock time of time 0 (the earliest timestamp)
	// Exported is set for a Chrome trace written by xfertop: it carries the recorded session's
	// description, so the events round-trip with their meaning.
	Exported map[string]string
}

// Options select what is imported.
type Options struct {
	// LikeHTA keeps only what Holistic Trace Analysis analyses by default: GPU ops launched (by
	// correlation) by the CPU during a ProfilerStep#N, the last step excluded.
	LikeHTA bool
}

type rawEvent struct {
	Ph   string          `json:"ph"`
	Cat  string          `json:"cat"`
	Name string          `json:"name"`
	Pid  json.RawMessage `json:"pid"`
	Tid  json.RawMessage `json:"tid"`
	Ts   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	ID   json.RawMessage `json:"id"`
	Args rawArgs         `json:"args"`
}

type rawArgs struct {
	Device      *int64       `json:"device"`
	Stream      *int64       `json:"stream"`
	Correlation *int64       `json:"correlation"`
	Bytes       *int64       `json:"bytes"`
	InNelems    *json.Number `json:"In msg nelems"`
	OutNelems   *json.Number `json:"Out msg nelems"`
	GroupSize   *int64       `json:"Group size"`
	DType       string       `json:"dtype"`
	Xfertop     *xfrArgs     `json:"xfertop"`
	Name        string       `json:"name"` // metadata events
}

type rawTrace struct {
	TraceEvents     []rawEvent           `json:"traceEvents"`
	DistributedInfo *struct{ Rank *int } `json:"distributedInfo"`
	Metadata        map[string]string    `json:"xfertopMetadata"`
}

// ReadFiles imports one or more trace files (.json or .json.gz); several files are the ranks of one
// job (each file's distributedInfo.rank, or its position, gives its device).
func ReadFiles(paths []string, opts Options) (*Imported, error) {
	var traces []*rawTrace
	for _, p := range paths {
		t, err := readFile(p)
		if err != nil {
			return nil, err
		}
		traces = append(traces, t)
	}
	im, err := convert(traces, paths, opts)
	if err != nil {
		return nil, err
	}
	im.Source = strings.Join(paths, ",")
	return im, nil
}

func readFile(path string) (*rawTrace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	return Decode(path, f)
}

// Decode reads one trace from r, gunzipping it if it starts with the gzip magic.
func Decode(name string, r io.Reader) (*rawTrace, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", name, err)
		}
		defer gz.Close()
		r = gz
	} else {
		r = br
	}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var t rawTrace
	if err := dec.Decode(&t); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case asErr(err, &se):
			return nil, fmt.Errorf("%s: not valid JSON at byte offset %d: %v", name, se.Offset, err)
		case asErr(err, &te):
			return nil, fmt.Errorf("%s: at byte offset %d: field %s has a %s where a %v belongs", name, te.Offset, te.Field, te.Value, te.Type)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: the JSON ends before it is complete (is the file truncated?)", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if t.TraceEvents == nil {
		return nil, fmt.Errorf("%s: no traceEvents array: not a Chrome or PyTorch profiler trace", name)
	}
	return &t, nil
}

var (
	ncclName  = regexp.MustCompile(`^nccl(?:Dev)?Kernel_([A-Za-z]+)`)
	stepName  = regexp.MustCompile(`^ProfilerStep#(\d+)$`)
	dtypeSize = map[string]int64{"Float": 4, "float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Int": 4, "Long": 8, "Byte": 1, "Char": 1, "Bool": 1, "Float8_e4m3fn": 1}
)

func gpuCategory(cat string) (timeline.Kind, bool) {
	switch cat {
	case "Kernel", "kernel":
		return timeline.KindKernel, true
	case "Memcpy", "gpu_memcpy", "Memset", "gpu_memset":
		return timeline.KindMemcpy, true
	}
	return 0, false
}

func isRuntime(cat string) bool {
	return cat == "Runtime" || cat == "cuda_runtime" || cat == "cuda_driver"
}

// copyDir reads a Kineto memcpy name such as "Memcpy HtoD (Pinned -> Device)".
func copyDir(name, cat string) timeline.CopyDir {
	if strings.HasPrefix(cat, "Memset") || cat == "gpu_memset" {
		return timeline.CopySet
	}
	switch {
	case strings.Contains(name, "HtoD"):
		return timeline.CopyH2D
	case strings.Contains(name, "DtoH"):
		return timeline.CopyD2H
	case strings.Contains(name, "DtoD"):
		return timeline.CopyD2D
	case strings.Contains(name, "PtoP"):
		return timeline.CopyP2P
	}
	return timeline.CopyD2D
}

// NCCLOp recognises NCCL kernels by name (ncclKernel_* in older releases, ncclDevKernel_* in newer).
func NCCLOp(name string) (timeline.CollOp, bool) {
	m := ncclName.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	switch strings.ToLower(m[1]) {
	case "allreduce":
		return timeline.CollAllReduce, true
	case "allgather":
		return timeline.CollAllGather, true
	case "reducescatter":
		return timeline.CollReduceScatter, true
	case "broadcast":
		return timeline.CollBroadcast, true
	case "reduce":
		return timeline.CollReduce, true
	case "alltoall":
		return timeline.CollAllToAll, true
	case "sendrecv", "send", "recv":
		return timeline.CollSendRecv, true
	}
	return timeline.CollSendRecv, true
}

func numberNs(n json.Number) (int64, bool) {
	if n == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return int64(math.Round(f * 1000)), true
}

func rawInt(m json.RawMessage) (int64, bool) {
	s := strings.Trim(string(bytes.TrimSpace(m)), `"`)
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Kineto names GPU threads "stream 7".
		if f := strings.Fields(s); len(f) == 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return v, true
			}
		}
		return 0, false
	}
	return v, true
}

type step struct {
	n          int
	start, end int64
}

func convert(traces []*rawTrace, names []string, opts Options) (*Imported, error) {
	im := &Imported{Strings: timeline.NewStrings(), Format: "kineto"}
	// The earliest timestamp of all files is time 0.
	base := int64(math.MaxInt64)
	for _, t := range traces {
		for i := range t.TraceEvents {
			if ts, ok := numberNs(t.TraceEvents[i].Ts); ok && t.TraceEvents[i].Ph != "M" {
				base = min(base, ts)
			}
		}
	}
	if base == math.MaxInt64 {
		base = 0
	}
	im.EpochUnixNs = base // Kineto timestamps are µs since the Unix epoch
	devices := map[int32]bool{}
	for fi, t := range traces {
		if t.Metadata != nil {
			im.Format, im.Exported = "xfertop-chrome", t.Metadata
			if err := convertExported(im, t, base); err != nil {
				return nil, fmt.Errorf("%s: %w", names[fi], err)
			}
			continue
		}
		rank := int32(fi)
		if t.DistributedInfo != nil && t.DistributedInfo.Rank != nil {
			rank = int32(*t.DistributedInfo.Rank)
		}
		if !hasGPU(t) {
			convertGeneric(im, t, base, devices)
			continue
		}
		multi := len(traces) > 1
		launches := map[int64]int64{} // correlation → runtime ts
		var steps []step
		for i := range t.TraceEvents {
			e := &t.TraceEvents[i]
			if e.Ph != "X" {
				continue
			}
			ts, ok := numberNs(e.Ts)
			if !ok {
				continue
			}
			if isRuntime(e.Cat) && e.Args.Correlation != nil {
				launches[*e.Args.Correlation] = ts - base
			}
			if m := stepName.FindStringSubmatch(e.Name); m != nil {
				dur, _ := numberNs(e.Dur)
				n, _ := strconv.Atoi(m[1])
				steps = append(steps, step{n: n, start: ts - base, end: ts - base + dur})
			}
		}
		sort.Slice(steps, func(i, j int) bool { return steps[i].start < steps[j].start })
		inStep := func(t int64) (int, bool) {
			k := sort.Search(len(steps), func(i int) bool { return steps[i].end > t })
			if k < len(steps) && steps[k].start <= t {
				return k, true
			}
			return 0, false
		}
		for _, s := range steps {
			im.Events = append(im.Events, timeline.Event{Kind: timeline.KindStep, Start: s.start, End: s.end, Queued: -1,
				Device: timeline.NoDevice, Peer: timeline.NoDevice, Aux: uint32(s.n), Label: im.Strings.ID(fmt.Sprintf("ProfilerStep#%d", s.n))})
		}
		for i := range t.TraceEvents {
			e := &t.TraceEvents[i]
			if e.Ph != "X" {
				continue
			}
			kind, gpu := gpuCategory(e.Cat)
			runtime := isRuntime(e.Cat)
			if !gpu && !runtime {
				continue
			}
			ts, ok := numberNs(e.Ts)
			if !ok {
				continue
			}
			dur, _ := numberNs(e.Dur)
			ev := timeline.Event{Kind: kind, Start: ts - base, End: ts - base + max(dur, 0), Queued: -1, Peer: timeline.NoDevice,
				Label: im.Strings.ID(e.Name)}
			dev := rank
			if !multi && e.Args.Device != nil {
				dev = int32(*e.Args.Device)
			}
			ev.Device = dev
			if e.Args.Correlation != nil {
				ev.Op = uint64(*e.Args.Correlation)
			}
			if runtime {
				pid, _ := rawInt(e.Pid)
				ev.Kind, ev.Queued, ev.Aux = timeline.KindRuntime, ev.Start, uint32(pid)
				ev.Device = timeline.NoDevice
				if multi {
					ev.Device = rank
				}
				im.Events = append(im.Events, ev)
				continue
			}
			if q, ok := launches[int64(ev.Op)]; ok && e.Args.Correlation != nil {
				ev.Queued = q
			}
			if opts.LikeHTA {
				k, ok := inStep(ev.Queued)
				if ev.Queued < 0 || !ok || k == len(steps)-1 {
					continue
				}
			}
			if e.Args.Stream != nil {
				ev.Stream = uint32(*e.Args.Stream)
			} else if tid, ok := rawInt(e.Tid); ok {
				ev.Stream = uint32(tid)
			}
			if ev.Stream == 0 {
				ev.Stream = 1 << 31 // the default stream; 0 means "no stream" in events
			}
			switch kind {
			case timeline.KindMemcpy:
				ev.Sub = uint8(copyDir(e.Name, e.Cat))
				if e.Args.Bytes != nil {
					ev.Bytes = *e.Args.Bytes
				}
			case timeline.KindKernel:
				if op, ok := NCCLOp(e.Name); ok {
					ev.Kind, ev.Sub = timeline.KindCollective, uint8(op)
					ev.Bytes = ncclBytes(&e.Args)
					if e.Args.GroupSize != nil {
						ev.Ranks = uint16(*e.Args.GroupSize)
					}
				}
			}
			devices[ev.Device] = true
			im.Events = append(im.Events, ev)
		}
	}
	if im.Format != "xfertop-chrome" {
		im.Devices = len(devices)
		sort.SliceStable(im.Events, func(i, j int) bool { return im.Events[i].Start < im.Events[j].Start })
	}
	return im, nil
}

func hasGPU(t *rawTrace) bool {
	for i := range t.TraceEvents {
		if _, ok := gpuCategory(t.TraceEvents[i].Cat); ok {
			return true
		}
	}
	return false
}

// convertGeneric imports a Chrome trace from a tool xfertop does not know: every complete slice
// becomes a kernel on a track, one device per process and one stream per thread, so the timeline and
// the idle analyses still apply.
func convertGeneric(im *Imported, t *rawTrace, base int64, devices map[int32]bool) {
	im.Format = "chrome"
	pids, tids := map[string]int32{}, map[string]uint32{}
	for i := range t.TraceEvents {
		e := &t.TraceEvents[i]
		if e.Ph != "X" {
			continue
		}
		ts, ok := numberNs(e.Ts)
		if !ok {
			continue
		}
		dur, _ := numberNs(e.Dur)
		pk, tk := string(e.Pid), string(e.Pid)+"/"+string(e.Tid)
		if _, ok := pids[pk]; !ok {
			pids[pk] = int32(len(pids))
		}
		if _, ok := tids[tk]; !ok {
			tids[tk] = uint32(len(tids) + 1)
		}
		dev := pids[pk]
		devices[dev] = true
		im.Events = append(im.Events, timeline.Event{Kind: timeline.KindKernel, Start: ts - base, End: ts - base + max(dur, 0), Queued: -1,
			Device: dev, Peer: timeline.NoDevice, Stream: tids[tk], Label: im.Strings.ID(e.Name)})
	}
}

// ncclBytes is the message size newer PyTorch profilers attach to NCCL kernels, when present.
func ncclBytes(a *rawArgs) int64 {
	var n int64
	for _, p := range []*json.Number{a.InNelems, a.OutNelems} {
		if p != nil {
			if v, err := p.Int64(); err == nil {
				n = max(n, v)
			}
		}
	}
	size := dtypeSize[a.DType]
	if size == 0 {
		size = 1
	}
	return n * size
}

func asErr[T error](err error, target *T) bool {
	for err != nil {
		if t, ok := err.(T); ok {
			*target = t
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// Import reads one trace from r (gzip or plain JSON) and converts it.
func Import(name string, r io.Reader, opts Options) (*Imported, error) {
	t, err := Decode(name, r)
	if err != nil {
		return nil, err
	}
	im, err := convert([]*rawTrace{t}, []string{name}, opts)
	if err != nil {
		return nil, err
	}
	im.Source = name
	return im, nil
}
