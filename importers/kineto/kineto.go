package kineto

import (
	"bytes"
	"context"
	"io"
	"regexp"
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
	// Extra describes the capture beyond its events (device names: "gpu.N"), for timeline.Meta.
	Extra map[string]string
	// Warnings name the events whose fields were out of range, and say what became of them (left
	// out, or the field taken as unknown or clamped): such a field never reaches a total.
	Warnings []string
	// World is the job's size as a per-rank source knows it (its widest communicator or process
	// group), 0 when it does not; RankHosts the host name of each rank it names one of. A join of
	// a job's sources in several formats checks and joins them by these.
	World     int
	RankHosts map[int32]string
}

// Options select what is imported and bound what an import may cost.
type Options struct {
	// LikeHTA keeps what Holistic Trace Analysis analyses by default: when the traces name two or
	// more ProfilerStep#N, the CPU ops that start before the last step does and the GPU ops they
	// launched (by correlation); with fewer steps, every op. Timestamps are rounded to whole
	// microseconds as HTA does (start up, end down).
	LikeHTA bool
	// MaxInputBytes bounds the JSON read from one file, after decompression
	// (0: DefaultMaxInputBytes).
	MaxInputBytes int64
	// MaxTokenBytes bounds one string or number (0: DefaultMaxTokenBytes).
	MaxTokenBytes int
	// Progress, when set, is told every few MiB and at the end how many bytes of the files have
	// been read, of their size.
	Progress func(done, total int64)
	// Context, when set, interrupts a long import when it is done.
	Context context.Context
	// TempDir is where the events of traces of more than 32,768 of them wait and are sorted, in
	// temporary files removed before the import returns ("": the system's temporary directory).
	TempDir string
	// KeepRead, for an import of one file, keeps the events read before an error that stops the
	// read part way (a trace cut short or damaged late): they go out, and the error is returned
	// with the description, so that a console shows what was read and says where it stopped.
	// Without it the file's error is the import's, and nothing goes out.
	KeepRead bool

	// Sizes of the sort, smaller in tests so that small traces take every path (0: the defaults),
	// and what tests are told of each temporary file made.
	reorder, fanIn, corrKeep, held int
	spilled                        func(path string)
}

func (o Options) withDefaults() Options {
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	if o.MaxTokenBytes <= 0 {
		o.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if o.reorder <= 0 {
		o.reorder = reorderItems
	}
	if o.fanIn <= 1 {
		o.fanIn = mergeFanIn
	}
	if o.corrKeep <= 0 {
		o.corrKeep = corrKeep
	}
	if o.held <= 0 {
		o.held = heldBytes
	}
	return o
}

// ReadFiles imports one or more trace files (.json or .json.gz) as Stream does, keeping every event.
func ReadFiles(paths []string, opts Options) (*Imported, error) {
	return collect(fileSources(paths), opts)
}

// Import reads one trace from r (gzip or plain JSON), once, and converts it, keeping every event.
func Import(name string, r io.Reader, opts Options) (*Imported, error) {
	return collect([]source{readerSource(name, r)}, opts)
}

// collect imports sources, keeping every event.
func collect(srcs []source, opts Options) (*Imported, error) {
	var all []timeline.Event
	im, err := stream(srcs, opts, func(*Imported) error { return nil }, func(evs []timeline.Event) error {
		all = append(all, evs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	im.Events = all
	return im, nil
}

// category returns the categories every trace repeats without allocating a string for them: a
// switch on the bytes compiles to comparisons, cheaper than a map's hash for a field every event
// has.
func category(b []byte) string {
	switch string(b) {
	case "Kernel":
		return "Kernel"
	case "kernel":
		return "kernel"
	case "Memcpy":
		return "Memcpy"
	case "gpu_memcpy":
		return "gpu_memcpy"
	case "Memset":
		return "Memset"
	case "gpu_memset":
		return "gpu_memset"
	case "Runtime":
		return "Runtime"
	case "cuda_runtime":
		return "cuda_runtime"
	case "cuda_driver":
		return "cuda_driver"
	case "Operator":
		return "Operator"
	case "cpu_op":
		return "cpu_op"
	case "user_annotation":
		return "user_annotation"
	case "gpu_user_annotation":
		return "gpu_user_annotation"
	case "python_function":
		return "python_function"
	case "Trace":
		return "Trace"
	case "async":
		return "async"
	case "flow":
		return "flow"
	}
	return string(b)
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

// torchCollOp reads the "Collective name" torch's profiler writes on a communication op and on
// the NCCL kernel it launched (record_param_comms's: allreduce, _allgather_base, broadcast,
// all_to_allv, send, …) as xfertop's op; 0 for a name it has no op for.
func torchCollOp(name []byte) timeline.CollOp {
	t := bytes.TrimLeft(name, "_")
	for _, suf := range [...]string{"_coalesced", "_base", "_into_tensor", "_tensor", "_single", "_oop"} {
		t = bytes.TrimSuffix(t, []byte(suf))
	}
	if op, ok := timeline.ParseCollOp(string(t)); ok {
		return op
	}
	// all_to_allv: torch's name for all_to_all_single and all_to_all (per-peer sizes).
	if v := bytes.TrimSuffix(t, []byte("v")); len(v) < len(t) {
		if op, ok := timeline.ParseCollOp(string(v)); ok && op == timeline.CollAllToAll {
			return op
		}
	}
	return 0
}

// kernelOp is an NCCL kernel's op: by its name, except that a SendRecv kernel that torch says an
// all-to-all launched is the all-to-all (NCCL runs one as a send and a receive per peer: real
// torch 2.11 traces put "Collective name": "all_to_allv" on it).
func kernelOp(name []byte, a *rawArgs) (timeline.CollOp, bool) {
	op, ok := NCCLOp(string(name))
	if ok && op == timeline.CollSendRecv && timeline.CollOp(a.Coll) == timeline.CollAllToAll {
		op = timeline.CollAllToAll
	}
	return op, ok
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
