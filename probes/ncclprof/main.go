// Command ncclprof is xfertop's NCCL profiler plugin, built as a shared library:
//
//	go build -buildmode=c-shared -o libnccl-profiler-xfertop.so ./probes/ncclprof
//
// NCCL (2.23 and later) loads it into every rank process when NCCL_PROFILER_PLUGIN names it, and
// calls it for each group, collective, point-to-point op, proxy step and kernel channel. The C
// callbacks (plugin.c) only queue records in a preallocated ring; one Go goroutine (package sender)
// folds them into xfertop events and streams them to `xfertop attach`, or into a per-rank recording.
// See docs/attach.md.
package main

func main() {}
