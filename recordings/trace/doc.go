// Package trace converts between xfertop's events and trace files of other tools: it imports PyTorch
// profiler (Kineto) traces, in the older category names (Kernel, Memcpy, Memset, Runtime) and the
// newer ones (kernel, gpu_memcpy, gpu_memset, cuda_runtime, distributedInfo), and generic Chrome trace
// JSON; and it exports Chrome trace JSON that Perfetto and chrome://tracing open, carrying every
// field it can so that an export imports back to the same events.
package trace
