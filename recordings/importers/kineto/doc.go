// Package kineto imports PyTorch profiler (Kineto) traces, in the older category names (Kernel,
// Memcpy, Memset, Runtime) and the newer ones (kernel, gpu_memcpy, gpu_memset, cuda_runtime,
// distributedInfo), and generic Chrome trace JSON, including the traces package chrome exports,
// which import back to the same events.
//
// Imports are streams whose memory does not grow with the files. Each file is read twice, front to
// back, through a bounded window (plain or gzipped): a survey learns what must be known before the
// first event goes out (what the file is, its rank, where --like-hta's selection cuts, the devices,
// a sample of starts for the check of timestamps, whether the events are nearly in start order);
// then each event becomes a timeline event as it is read. Chrome traces are not sorted: events go
// out in start order through a reorder buffer of 32,768 events when the survey found them nearly
// in order, and otherwise through an external merge sort (sorted runs spilled to temporary files
// in a compact binary form, merged 64 at a time; the files are removed on every path). Launch times
// are resolved by correlation id as the events go out, in a window and a table of the last 65,536
// runtime calls; a GPU op whose call was forgotten is counted in a warning.
//
// Input that is not JSON fails at its first invalid byte, naming the file and the offset; Options
// bound the JSON read per file and the length of one token (LimitError). Numbers out of range are
// named in Imported.Warnings and never reach a total. Options.LikeHTA selects and rounds as
// Holistic Trace Analysis does by default.
package kineto
