// Package kineto imports PyTorch profiler (Kineto) traces, in the older category names (Kernel,
// Memcpy, Memset, Runtime) and the newer ones (kernel, gpu_memcpy, gpu_memset, cuda_runtime,
// distributedInfo), and generic Chrome trace JSON, including the traces package chrome exports,
// which import back to the same events.
//
// Imports are streams whose memory does not grow with the files. Each file is read once, front to
// back, through a bounded window (plain or gzipped), and each event becomes an item as it is read,
// in a raw form (the file's rank, its class and --like-hta's selection still open), while a survey
// learns what must be known before the first event goes out (what the file is, its rank, where
// --like-hta's selection cuts, the devices, a sample of starts for the check of timestamps). The
// items wait in a sorter until every file is read: a reorder buffer of 32,768 items, each of whose
// overflows is sorted into a run of an external merge sort (spilled to temporary files in a
// compact binary form, merged 64 at a time; the files are removed on every path). The first run
// stays open, and items that come in start order go straight to it, past the buffer: a trace in
// start order is one run, or two when some of its events come late (those wait in the buffer). They go out in start order, what the survey learnt applied to each. Launch times are
// resolved by correlation id as the events go out, in a window and a table of the last 65,536
// runtime calls; a GPU op whose call was forgotten is counted in a warning.
//
// An event is read straight from the window by a fast path (fast.go) when all of it is there and
// holds nothing unusual, and most by the shapes the fast path learnt from the first events of each
// kind (shape.go: the bytes between the values compared as words, each value read as the fast
// path's reader for it reads it); anything else is read again from its first byte by the general scanner,
// which reads the same events and reports every error. Input that is not JSON fails at its first
// invalid byte, naming the file and the offset; Options
// bound the JSON read per file and the length of one token (LimitError). Numbers out of range are
// named in Imported.Warnings and never reach a total. Options.LikeHTA selects and rounds as
// Holistic Trace Analysis does by default.
//
// An NCCL kernel (ncclKernel_*, ncclDevKernel_*) is a collective of the op its name says, sized
// and counted in ranks from the args newer PyTorch profilers put on it (In/Out msg nelems, dtype,
// Group size), except that a SendRecv kernel torch names an all-to-all ("Collective name":
// all_to_allv, as torch 2.11 writes it for all_to_all_single) is that all-to-all: NCCL runs one
// as a send and a receive per peer. A step is a ProfilerStep#N annotation of the CPU; Kineto's
// copy of it on the GPU's timeline (gpu_user_annotation) is not another.
package kineto
