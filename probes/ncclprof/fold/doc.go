// Package fold turns the NCCL profiler plugin's records (one per callback: start, stop, state) into
// xfertop's timeline events. NCCL reports a collective as a tree of events (API call, group,
// collective task, proxy ops and steps, kernel channels with GPU timers) whose parts arrive on
// different threads and long after the task's own stop; the folder keeps each tree until its
// children are done and emits one event with the collective's real duration, bytes in nccl-tests'
// terms, and an op id every rank computes alike (communicator, function, sequence number).
package fold
