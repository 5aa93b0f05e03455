package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
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

// rawEvent is the part of a trace event xfertop reads. Name, Pid and Tid alias the input buffer.
type rawEvent struct {
	Ph    byte
	Cat   string
	Name  []byte
	Pid   []byte
	Tid   []byte
	Ts    int64 // ns
	Dur   int64 // ns
	HasTs bool
	Args  rawArgs
}

// Presence bits of rawArgs fields.
const (
	hasDevice = 1 << iota
	hasStream
	hasCorrelation
	hasBytes
	hasInNelems
	hasOutNelems
	hasGroupSize
)

type rawArgs struct {
	Has         uint8
	Device      int64
	Stream      int64
	Correlation int64
	Bytes       int64
	InNelems    int64
	OutNelems   int64
	GroupSize   int64
	DType       string
	Xfertop     *xfrArgs
}

type rawTrace struct {
	TraceEvents []rawEvent
	Rank        int64
	HasRank     bool
	Metadata    map[string]string
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
	br := bufio.NewReaderSize(r, 64<<10)
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
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return parse(name, data)
}

// knownCats avoids allocating a string for the categories every trace repeats.
var knownCats = map[string]string{}

func init() {
	for _, c := range []string{"Kernel", "kernel", "Memcpy", "gpu_memcpy", "Memset", "gpu_memset", "Runtime", "cuda_runtime",
		"cuda_driver", "Operator", "cpu_op", "user_annotation", "gpu_user_annotation", "python_function", "Trace", "async", "flow"} {
		knownCats[c] = c
	}
}

func category(b []byte) string {
	if c, ok := knownCats[string(b)]; ok { // no allocation: map lookup by converted bytes
		return c
	}
	return string(b)
}

// parse reads a Chrome/Kineto trace held in data. Events' byte slices alias data.
func parse(name string, data []byte) (*rawTrace, error) {
	s := &scanner{b: data, name: name}
	t := &rawTrace{}
	seenEvents := false
	s.object(func(key []byte) {
		switch string(key) {
		case "traceEvents":
			seenEvents = true
			t.TraceEvents = make([]rawEvent, 0, len(data)/400)
			s.array(func() {
				t.TraceEvents = append(t.TraceEvents, rawEvent{})
				s.event(&t.TraceEvents[len(t.TraceEvents)-1])
			})
		case "distributedInfo":
			if s.peek() != '{' {
				s.skip()
				return
			}
			s.object(func(k []byte) {
				if string(k) == "rank" {
					if v, ok := s.scalar(); ok {
						t.Rank, t.HasRank = parseInt(v)
					}
					return
				}
				s.skip()
			})
		case "xfertopMetadata":
			t.Metadata = map[string]string{}
			s.object(func(k []byte) {
				v, _ := s.scalar()
				t.Metadata[string(k)] = string(v)
			})
		default:
			s.skip()
		}
	})
	if s.err != nil {
		return nil, s.err
	}
	if s.peek() != 0 {
		s.fail("data after the trace object")
		return nil, s.err
	}
	if !seenEvents {
		return nil, fmt.Errorf("%s: no traceEvents array: not a Chrome or PyTorch profiler trace", name)
	}
	return t, nil
}

// event reads one trace event object into e.
func (s *scanner) event(e *rawEvent) {
	if s.peek() != '{' {
		s.fail("a trace event must be an object")
		return
	}
	s.object(func(key []byte) {
		switch k := string(key); k {
		case "ph", "cat", "name":
			if s.peek() != '"' {
				s.fail("event field %q must be a string", k)
				return
			}
		}
		switch string(key) {
		case "ph":
			if v := s.str(); len(v) > 0 {
				e.Ph = v[0]
			}
		case "cat":
			e.Cat = category(s.str())
		case "name":
			e.Name = s.str()
		case "pid":
			e.Pid, _ = s.scalar()
		case "tid":
			e.Tid, _ = s.scalar()
		case "ts":
			if v, ok := s.scalar(); ok {
				e.Ts, e.HasTs = parseNs(v)
			}
		case "dur":
			if v, ok := s.scalar(); ok {
				e.Dur, _ = parseNs(v)
			}
		case "args":
			if s.peek() != '{' {
				s.skip()
				return
			}
			s.args(&e.Args)
		default:
			s.skip()
		}
	})
}

func (s *scanner) args(a *rawArgs) {
	num := func(bit uint8, dst *int64) {
		if v, ok := s.scalar(); ok {
			if n, ok := parseInt(v); ok {
				*dst = n
				a.Has |= bit
			}
		}
	}
	s.object(func(key []byte) {
		switch string(key) {
		case "device":
			num(hasDevice, &a.Device)
		case "stream":
			num(hasStream, &a.Stream)
		case "correlation":
			num(hasCorrelation, &a.Correlation)
		case "bytes":
			num(hasBytes, &a.Bytes)
		case "In msg nelems":
			num(hasInNelems, &a.InNelems)
		case "Out msg nelems":
			num(hasOutNelems, &a.OutNelems)
		case "Group size":
			num(hasGroupSize, &a.GroupSize)
		case "dtype":
			if v, ok := s.scalar(); ok {
				a.DType = string(v)
			}
		case "xfertop":
			if s.peek() != '{' {
				s.skip()
				return
			}
			a.Xfertop = s.xfr()
		default:
			s.skip()
		}
	})
}

// xfr reads the fields WriteChrome stores in an exported slice.
func (s *scanner) xfr() *xfrArgs {
	x := &xfrArgs{}
	s.object(func(key []byte) {
		v, _ := s.scalar()
		if string(key) == "l" {
			x.L = string(v)
			return
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			s.fail("xfertop.%s: %q is not an integer", key, v)
			return
		}
		switch string(key) {
		case "k":
			x.K = uint8(n)
		case "s":
			x.S = n
		case "e":
			x.E = n
		case "q":
			x.Q = n
		case "b":
			x.B = n
		case "o":
			x.O = uint64(n)
		case "d":
			x.D = int32(n)
		case "p":
			x.P = int32(n)
		case "st":
			x.St = uint32(n)
		case "g":
			x.G = uint32(n)
		case "c":
			x.C = uint32(n)
		case "ba":
			x.Ba = uint32(n)
		case "a":
			x.A = uint32(n)
		case "h":
			x.H = uint16(n)
		case "r":
			x.R = uint16(n)
		case "sb":
			x.Sb = uint8(n)
		case "su":
			x.Su = uint8(n)
		case "pr":
			x.Pr = int8(n)
		}
	})
	return x
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
	if op, ok := timeline.ParseCollOp(m[1]); ok {
		return op, true
	}
	return timeline.CollSendRecv, true
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
			if e := &t.TraceEvents[i]; e.HasTs && e.Ph != 'M' {
				base = min(base, e.Ts)
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
		if t.HasRank {
			rank = int32(t.Rank)
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
			if e.Ph != 'X' || !e.HasTs {
				continue
			}
			ts := e.Ts
			if isRuntime(e.Cat) && e.Args.Has&hasCorrelation != 0 {
				launches[e.Args.Correlation] = ts - base
			}
			if bytes.HasPrefix(e.Name, []byte("ProfilerStep#")) {
				if m := stepName.FindSubmatch(e.Name); m != nil {
					n, _ := strconv.Atoi(string(m[1]))
					steps = append(steps, step{n: n, start: ts - base, end: ts - base + e.Dur})
				}
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
			if e.Ph != 'X' || !e.HasTs {
				continue
			}
			kind, gpu := gpuCategory(e.Cat)
			runtime := isRuntime(e.Cat)
			if !gpu && !runtime {
				continue
			}
			ts := e.Ts
			ev := timeline.Event{Kind: kind, Start: ts - base, End: ts - base + max(e.Dur, 0), Queued: -1, Peer: timeline.NoDevice,
				Label: im.Strings.ID(string(e.Name))}
			dev := rank
			if !multi && e.Args.Has&hasDevice != 0 {
				dev = int32(e.Args.Device)
			}
			ev.Device = dev
			if e.Args.Has&hasCorrelation != 0 {
				ev.Op = uint64(e.Args.Correlation)
			}
			if runtime {
				pid, _ := parseInt(e.Pid)
				ev.Kind, ev.Queued, ev.Aux = timeline.KindRuntime, ev.Start, uint32(pid)
				ev.Device = timeline.NoDevice
				if multi {
					ev.Device = rank
				}
				im.Events = append(im.Events, ev)
				continue
			}
			if q, ok := launches[int64(ev.Op)]; ok && e.Args.Has&hasCorrelation != 0 {
				ev.Queued = q
			}
			if opts.LikeHTA {
				k, ok := inStep(ev.Queued)
				if ev.Queued < 0 || !ok || k == len(steps)-1 {
					continue
				}
			}
			if e.Args.Has&hasStream != 0 {
				ev.Stream = uint32(e.Args.Stream)
			} else if tid, ok := parseInt(e.Tid); ok {
				ev.Stream = uint32(tid)
			}
			if ev.Stream == 0 {
				ev.Stream = 1 << 31 // the default stream; 0 means "no stream" in events
			}
			switch kind {
			case timeline.KindMemcpy:
				ev.Sub = uint8(copyDir(string(e.Name), e.Cat))
				if e.Args.Has&hasBytes != 0 {
					ev.Bytes = e.Args.Bytes
				}
			case timeline.KindKernel:
				if bytes.HasPrefix(e.Name, []byte("nccl")) {
					if op, ok := NCCLOp(string(e.Name)); ok {
						ev.Kind, ev.Sub = timeline.KindCollective, uint8(op)
						ev.Bytes = ncclBytes(&e.Args)
						if e.Args.Has&hasGroupSize != 0 {
							ev.Ranks = uint16(e.Args.GroupSize)
						}
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
		if e.Ph != 'X' || !e.HasTs {
			continue
		}
		ts, dur := e.Ts, e.Dur
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
			Device: dev, Peer: timeline.NoDevice, Stream: tids[tk], Label: im.Strings.ID(string(e.Name))})
	}
}

// ncclBytes is the message size newer PyTorch profilers attach to NCCL kernels, when present.
func ncclBytes(a *rawArgs) int64 {
	n := max(a.InNelems, a.OutNelems)
	size := dtypeSize[a.DType]
	if size == 0 {
		size = 1
	}
	return n * size
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
