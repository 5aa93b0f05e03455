// Package kineto imports PyTorch profiler (Kineto) traces, in the older category names (Kernel,
// Memcpy, Memset, Runtime) and the newer ones (kernel, gpu_memcpy, gpu_memset, cuda_runtime,
// distributedInfo), and generic Chrome trace JSON, including the traces package chrome exports,
// which import back to the same events.
//
// Imports are streams: each file is read once, front to back, through a bounded window, and each
// event becomes a timeline event as it is read. Input that is not JSON fails at its first invalid
// byte, naming the file and the offset; Options bound the JSON read per file and the length of one
// token (LimitError). Numbers out of range are named in Imported.Warnings and never reach a total.
// Options.LikeHTA selects and rounds as Holistic Trace Analysis does by default.
package kineto
