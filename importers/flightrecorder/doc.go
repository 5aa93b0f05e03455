// Package flightrecorder reads PyTorch's Flight Recorder dumps: the ring of recent collectives
// each rank of a job keeps (TORCH_NCCL_TRACE_BUFFER_SIZE) and writes when its watchdog times out or
// on demand, one file per rank named TORCH_NCCL_DEBUG_INFO_TEMP_FILE plus the rank
// (/tmp/nccl_trace_rank_0 by default). It reads the default pickle (torch's C++ pickler,
// protocol 2; a bounded decoder of the opcodes dumps use, no Python objects built) and the JSON
// dump (_dump_nccl_trace_json), from files or a directory holding one job's dumps.
//
// Every entry becomes an event of the rank that recorded it: a collective (its op from
// profiling_name, nccl:all_reduce → all_reduce), or a send or receive (nccl:send 0->1, the peer
// translated from the group's rank to the job's); the process group is the communicator (one per
// name and set of ranks, as fr_trace's pg_guid) and the event's stream; Bytes are the larger of
// the input and output tensors' elements × dtype size; Op is the collective's sequence number on
// its group (timeline.SeqOp, marked by timeline.AuxSeqOp), the same on every rank, so the
// diagnosis can match ranks by it.
// An entry that had not completed when the rank dumped (scheduled or started) is
// timeline.StatusPending, lasting until the last time its rank's dump knows of. Times are the
// entry's creation and when the watchdog saw it start and complete (a retired entry's: those of
// one not retired are when the dump was taken, and are left out); duration_ms, when timing was
// on, places the start that far before the completion. A completed entry with neither (not retired
// and no duration_ms) carries timeline.AuxTimeUnknown: its time is unknown, not 0 s. A coalesced group's ops, which torch
// leaves scheduled, take the state and times of the group's end marker. A dump without creation times (hand
// made) is laid out in record order and said to be approximate. Each rank's membership of a
// process group (pg_config) is a mark with sequence number 0: the diagnosis names the members
// that never entered a collective from it. Ranks are merged through join.Join.
//
// The verdict (which ranks are behind in which group, what they wait in, which never entered)
// is not made here: analysis/diagnosis makes it from these events, as for any source.
package flightrecorder
