#!/usr/bin/env python3
"""Writes this folder's Flight Recorder dumps (see README.md). Run from this folder:
python3 gen.py. Pickles are written by Python's pickle at protocol 2, the protocol and opcodes
torch's C++ pickler uses for a dump; the JSON dump is written as torch's nlohmann writer does it
(keys sorted, a time not seen written 0)."""
import json
import os
import pickle

BASE = 1_764_230_400_000_000_000  # 2025-11-27 08:00:00 UTC, in ns
MS = 1_000_000


def entry(record, seq, name, pg, sizes, dtype, state, created, started=None, completed=None,
          duration=None, p2p_seq=0, is_p2p=False, out_sizes=None):
    e = {
        "record_id": record,
        "pg_id": int(pg[0]),
        "process_group": pg,
        "collective_seq_id": seq,
        "p2p_seq_id": p2p_seq,
        "op_id": seq,
        "profiling_name": name,
        "time_created_ns": created,
        "input_sizes": sizes,
        "input_dtypes": [dtype] * len(sizes),
        "output_sizes": out_sizes if out_sizes is not None else sizes,
        "output_dtypes": [dtype] * len(out_sizes if out_sizes is not None else sizes),
        "state": state,
        "time_discovered_started_ns": started,
        "time_discovered_completed_ns": completed,
        "retired": state == "completed",
        "timeout_ms": 600000,
        "is_p2p": is_p2p,
        "frames": [{"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2950},
                   {"name": "train_step", "filename": "train.py", "line": 88}],
    }
    if duration is not None:
        e["duration_ms"] = duration
    return e


def hang():
    """4 ranks, one process group of all four and a tensor-parallel pair (0,1). Every rank
    completes all_reduce #1-#4 on the default group; ranks 0, 1 and 2 then enter all_reduce #5 and
    wait in it (started), rank 3 never enters it (it is still computing: its dump ends at #4).
    Ranks 0 and 1 also completed an all_gather #1 on their pair."""
    world = ("0", "default_pg")
    tp = ("1", "tp")
    cfg = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}}
    for rank in range(4):
        pg_config = dict(cfg)
        if rank in (0, 1):
            pg_config["1"] = {"name": "1", "desc": "tp", "ranks": "[0, 1]"}
        entries = []
        t = BASE + rank * 50_000  # each rank's clock a little apart
        rec = 0
        for seq in range(1, 5):
            c = t + seq * 100 * MS
            entries.append(entry(rec, seq, "nccl:all_reduce", world, [[1024, 1024]], "Float", "completed",
                                 c, c + 2 * MS, c + 12 * MS, duration=9.5))
            rec += 1
            if rank in (0, 1) and seq == 2:
                entries.append(entry(rec, 1, "nccl:all_gather", tp, [[2048]], "BFloat16", "completed",
                                     c + 20 * MS, c + 21 * MS, c + 25 * MS, duration=3.0, out_sizes=[[4096]]))
                rec += 1
        if rank != 3:
            c = t + 500 * MS
            entries.append(entry(rec, 5, "nccl:all_reduce", world, [[1024, 1024]], "Float", "started", c, c + 2 * MS))
        dump = {"version": "2.10", "comm_lib_version": "2.27.5", "pg_config": pg_config,
                "pg_status": {"0": {"last_enqueued_collective": 5 if rank != 3 else 4,
                                    "last_started_collective": 5 if rank != 3 else 4,
                                    "last_completed_collective": 4}},
                "entries": entries}
        os.makedirs("hang", exist_ok=True)
        with open(f"hang/nccl_trace_rank_{rank}", "wb") as f:
            pickle.dump(dump, f, protocol=2)


def mismatch_json():
    """2 ranks writing JSON dumps: all_reduce #1 matches; at #2 rank 1 reduces a tensor of another
    size (an op whose arguments differ across ranks: fr_trace's SIZE_OR_SYNTAX_MISMATCH); both are
    stuck in it (scheduled on rank 0, started on rank 1)."""
    world = ["0", "default_pg"]
    for rank in range(2):
        t = BASE + rank * 30_000
        size = [[256, 256]] if rank == 0 else [[256, 128]]
        entries = [
            entry(0, 1, "nccl:all_reduce", world, [[256, 256]], "Float", "completed", t + 10 * MS, t + 11 * MS, t + 15 * MS),
            entry(1, 2, "nccl:all_reduce", world, size, "Float", "scheduled" if rank == 0 else "started", t + 30 * MS,
                  None if rank == 0 else t + 31 * MS),
        ]
        for e in entries:  # the JSON writer writes a time not seen as 0
            for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
                if e[k] is None:
                    e[k] = 0
        dump = {"version": "2.10", "comm_lib_version": "2.27.5",
                "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
                "pg_status": {"0": {"last_enqueued_collective": "2", "last_started_collective": "1" if rank == 0 else "2",
                                    "last_completed_collective": "1"}},
                "entries": entries}
        os.makedirs("mismatch_json", exist_ok=True)
        with open(f"mismatch_json/nccl_trace_rank_{rank}.json", "w") as f:
            json.dump(dump, f, sort_keys=True, indent=1)


def pp_hang():
    """A 4-stage pipeline (ranks 0-3, one stage each) on its process group "pp": per microbatch,
    stage s receives its activations from s-1 and sends its own to s+1. Microbatches 1-3 pass
    through every stage. At microbatch 4 stage 2 (rank 2) never posts its receive from rank 1
    (its dump ends at its send #3 to rank 3: it is stuck outside any collective). So rank 1 waits
    in its send #4 to rank 2, rank 3 in its receive #4 from rank 2, and rank 0, one microbatch
    ahead, in its send #5 to rank 1, which rank 1 never posted the receive of. p2p_seq_id counts a
    rank's sends and receives together, as torch numbers them. Timing is on."""
    pp = ("0", "pp")
    act = [[8, 1024, 4096]]  # BFloat16 activations: 64 MiB
    for rank in range(4):
        t = BASE + rank * 40_000
        entries, rec, p2p = [], 0, 0

        def op(kind, peer, mb, state):
            nonlocal rec, p2p
            p2p += 1
            c = t + mb * 100 * MS + (0 if kind == "recv" else 30 * MS)
            name = f"nccl:send {rank}->{peer}" if kind == "send" else f"nccl:recv {rank}<-{peer}"
            done = state == "completed"
            entries.append(entry(rec, 0, name, pp, act, "BFloat16", state, c, c + MS,
                                 c + 6 * MS if done else None, duration=4.5 if done else None,
                                 p2p_seq=p2p, is_p2p=True))
            rec += 1

        for mb in range(1, 6):
            stuck = mb >= 4
            if rank == 2 and stuck:
                break  # stage 2 never posts its receive of microbatch 4
            if rank == 1 and mb == 5:
                break  # rank 1 still waits in its send of microbatch 4
            if rank == 3 and mb == 5:
                break
            if rank > 0:
                op("recv", rank - 1, mb, "started" if stuck and rank == 3 else "completed")
            if rank < 3:
                op("send", rank + 1, mb, "started" if (rank == 1 and stuck) or (rank == 0 and mb == 5) else "completed")
        dump = {"version": "2.10", "comm_lib_version": "2.27.5",
                "pg_config": {"0": {"name": "0", "desc": "pp", "ranks": "[0, 1, 2, 3]"}},
                "pg_status": {"0": {"last_enqueued_collective": 0, "last_started_collective": 0,
                                    "last_completed_collective": 0}},
                "entries": entries}
        os.makedirs("pp_hang", exist_ok=True)
        with open(f"pp_hang/nccl_trace_rank_{rank}", "wb") as f:
            pickle.dump(dump, f, protocol=2)


if __name__ == "__main__":
    hang()
    mismatch_json()
    pp_hang()
