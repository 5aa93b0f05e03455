#!/usr/bin/env python3
"""Writes inspector/: the NCCL Inspector logs of the job whose Flight Recorder dumps are
../../flightrecorder/testdata/hang (python3 gen.py in this folder). Each completed entry of a
rank's dump becomes that rank's Inspector record of the same collective, in the shape of
../../inspector/testdata/v2.31 (format v4.2, verbose: kernel timestamps), its kernels running
from the entry's completion less its duration_ms to its completion, on the rank's wall clock.
Ranks 0 and 1 run on host node0, 2 and 3 on node1; default_pg is a 4-rank communicator over
both hosts, tp the pair (0, 1) on node0. all_reduce #5, which ranks 0-2 entered and rank 3 never
did, completed nowhere, so Inspector (which logs completed collectives) has no record of it."""
import copy
import json
import os
import pickle

HERE = os.path.dirname(os.path.abspath(__file__))
FR = os.path.join(HERE, "..", "..", "flightrecorder", "testdata", "hang")
TEMPLATE = os.path.join(HERE, "..", "..", "inspector", "testdata", "v2.31", "node0-pid1000.log")
HOSTS = {0: ("node0", 4100), 1: ("node0", 4101), 2: ("node1", 4102), 3: ("node1", 4103)}
COMMS = {"0": ("0x4a0b1c2d3e4f5061", "default_pg", 4, 2), "1": ("0x4a0b1c2d3e4f5062", "tp", 2, 1)}
COLL = {"nccl:all_reduce": ("AllReduce", lambda n: 2 * (n - 1) / n), "nccl:all_gather": ("AllGather", lambda n: (n - 1) / n)}
DTYPE = {"Float": 4, "BFloat16": 2}


def template():
    with open(TEMPLATE) as f:
        for line in f:
            rec = json.loads(line)
            if "coll_perf" in rec:
                return rec
    raise SystemExit("no coll_perf record in " + TEMPLATE)


def record(tmpl, rank, e, dump_us):
    host, pid = HOSTS[rank]
    comm_id, comm_name, n, nnodes = COMMS[e["process_group"][0]]
    coll, factor = COLL[e["profiling_name"]]
    size = DTYPE[e["output_dtypes"][0]]
    for d in e["output_sizes"][0]:
        size *= d
    stop_us = e["time_discovered_completed_ns"] // 1000
    exec_us = int(e["duration_ms"] * 1000)
    start_us = stop_us - exec_us
    algbw = size / (exec_us * 1000)  # GB/s: bytes per ns
    r = copy.deepcopy(tmpl)
    r["header"] = {"id": comm_id, "comm_name": comm_name, "rank": rank if comm_name == "default_pg" else [0, 1].index(rank),
                   "n_ranks": n, "nnodes": nnodes}
    r["metadata"].update({"dump_timestamp_us": dump_us, "hostname": host, "pid": pid})
    p = r["coll_perf"]
    p.update({"coll": coll, "coll_sn": e["collective_seq_id"], "coll_msg_size_bytes": size, "coll_exec_time_us": exec_us,
              "coll_algobw_gbs": round(algbw, 6), "coll_busbw_gbs": round(algbw * factor(n), 6)})
    ts = p["event_trace_ts"]
    ts["coll_start_ts"], ts["coll_stop_ts"] = start_us - 100, start_us - 95
    for k in ts["kernel_events"]:
        k["kernel_start_ts"], k["kernel_stop_ts"], k["kernel_record_ts"] = start_us, stop_us, stop_us
    return r


def main():
    tmpl = template()
    out = os.path.join(HERE, "inspector")
    os.makedirs(out, exist_ok=True)
    for rank in range(4):
        with open(os.path.join(FR, f"nccl_trace_rank_{rank}"), "rb") as f:
            dump = pickle.load(f)
        done = [e for e in dump["entries"] if e["state"] == "completed"]
        dump_us = max(e["time_discovered_completed_ns"] for e in done) // 1000 + 1000
        host, pid = HOSTS[rank]
        with open(os.path.join(out, f"{host}-pid{pid}.log"), "w") as f:
            for e in done:
                f.write(json.dumps(record(tmpl, rank, e, dump_us), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
