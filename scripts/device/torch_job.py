#!/usr/bin/env python3
"""One rank of a small torch.distributed job on NCCL that issues a known set of operations and
writes what it issued as JSON, for scripts/device/check_attach.py to compare with what
`xfertop attach --headless --json` reported for the job.

Run it as torchrun would run a rank (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in the
environment; without them it is a job of one rank on 127.0.0.1):

    NCCL_PROFILER_PLUGIN=$(xfertop plugin) python3 scripts/device/torch_job.py --out issued-rank0.json

Each iteration issues, with torch.cuda.synchronize() after each call:
  all_reduce             4 KiB float32, 1 MiB float32, 8 KiB bfloat16, 8 MiB float16, 24000 B int64
  all_gather_into_tensor 8 KiB float32 and 128 KiB bfloat16 from each rank
  broadcast              16 KiB float32 and 1 MiB uint8 from rank 0
  batch_isend_irecv      32 KiB float32 to rank+1 and from rank-1 (to and from itself on one rank)
  all_to_all_single      16 KiB float32 to and from each rank
Sizes are in distinct powers of two per operation, so each is a row of its own in the report.

The JSON: rank, world_size, versions, and "ops", one entry per call torch accepted:
op (all_reduce, all_gather, broadcast, send, recv, all_to_all_single), count (elements; for
all_gather those each rank contributes, for all_to_all_single the whole input), dtype, elem_size,
bytes (what the call moves in nccl-tests' terms, as the plugin reports it: count x element size,
times the world size for all_gather), peer (send, recv), root (broadcast). Calls torch refused are
listed under "refused" with the error; the job goes on without them.

--fake-hosts gives each rank its own NCCL host id (NCCL_HOSTID), so that several ranks can share one
GPU: NCCL refuses two ranks of one host on one GPU ("Duplicate GPU detected"); ranks of different
hosts talk through the network transport (sockets; NCCL_SOCKET_IFNAME=lo keeps them on loopback).

What a real job writes, kept as test fixtures (each optional; a failure to write one is printed
and recorded under "artifacts", never fatal):
  --profile FILE   a Kineto trace of the iterations (torch.profiler, CPU and CUDA, one ProfilerStep
                   per iteration), as export_chrome_trace writes it
  --fr-dir DIR     the Flight Recorder's dumps at the end (TORCH_NCCL_TRACE_BUFFER_SIZE and
                   TORCH_NCCL_ENABLE_TIMING set before the process group): DIR/nccl_trace_rank_<R>
                   (the pickle, torch's default name) and DIR/nccl_trace_rank_<R>.json
--min-seconds keeps issuing whole iterations until that long has passed (a job for a console to
watch); "iter_seconds" in the JSON is each iteration's wall time (the plugin's cost, with and
without it, is compared from them).

Exit status: 0 done; 1 a torch or NCCL error; 3 torch with CUDA and NCCL is not available here.
"""

import argparse
import json
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="write the list of issued operations here (JSON)")
    p.add_argument("--iters", type=int, default=2, help="times the whole set is issued (default 2)")
    p.add_argument("--device", type=int, default=-1,
                   help="CUDA device (default: LOCAL_RANK, or 0 with --fake-hosts: every rank on GPU 0)")
    p.add_argument("--fake-hosts", action="store_true",
                   help="each rank its own NCCL host (NCCL_HOSTID), so that ranks can share a GPU")
    p.add_argument("--min-seconds", type=float, default=0,
                   help="keep issuing whole iterations until this long has passed (default 0: --iters only)")
    p.add_argument("--profile", default="", help="write a Kineto trace of the iterations here (torch.profiler; %%R: the rank)")
    p.add_argument("--fr-dir", default="", help="write the Flight Recorder's dumps (pickle and JSON) here at the end")
    return p.parse_args()


def nccl_version(torch):
    v = torch.cuda.nccl.version()  # a tuple in recent torch, an int (2.28.9: 22809) in older ones
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


FR_BUFFER = "2000"  # entries each rank's Flight Recorder keeps: more than the job issues


def enable_flight_recorder():
    """Read by torch when the process group is made; the buffer's variable was renamed in 2.8-2.10."""
    for var in ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE"):
        os.environ.setdefault(var, FR_BUFFER)
    os.environ.setdefault("TORCH_NCCL_ENABLE_TIMING", "1")


def dump_flight_recorder(torch, rank, out_dir, artifacts):
    """Writes the Flight Recorder's pickle and JSON dumps as torch's own dump would name them."""
    c10d = torch._C._distributed_c10d
    os.makedirs(out_dir, exist_ok=True)
    wrote = False
    for names, suffix in ((("_dump_nccl_trace", "_dump_fr_trace"), ""),
                          (("_dump_nccl_trace_json", "_dump_fr_trace_json"), ".json")):
        for name in names:
            fn = getattr(c10d, name, None)
            if fn is None:
                continue
            try:
                blob = fn()
            except Exception as e:  # a diagnostic: never the job's failure
                artifacts.append({"what": name, "error": "%s: %s" % (type(e).__name__, e)})
                continue
            if isinstance(blob, str):
                blob = blob.encode()
            path = os.path.join(out_dir, "nccl_trace_rank_%d%s" % (rank, suffix))
            with open(path, "wb") as f:
                f.write(blob)
            artifacts.append({"what": name, "file": path, "bytes": len(blob)})
            wrote = True
            break
        else:
            artifacts.append({"what": "flight recorder" + suffix, "error": "torch has none of %s" % ", ".join(names)})
    return wrote


def start_profiler(torch, path, steps, artifacts):
    """A torch.profiler over the first steps iterations, one ProfilerStep each, exported to path."""
    try:
        from torch.profiler import ProfilerActivity, profile, schedule

        def export(p):
            p.export_chrome_trace(path)
            artifacts.append({"what": "kineto", "file": path, "bytes": os.path.getsize(path)})

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       schedule=schedule(wait=0, warmup=0, active=steps, repeat=1), on_trace_ready=export)
        prof.start()
        return prof
    except Exception as e:
        artifacts.append({"what": "kineto", "error": "%s: %s" % (type(e).__name__, e)})
        return None


def main():
    args = parse_args()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29571")
    if args.fake_hosts:
        # Read by NCCL when it first hashes the host, after this point (init_process_group).
        os.environ["NCCL_HOSTID"] = "xfertop-fake-host-%d" % rank
    if args.fr_dir:
        enable_flight_recorder()
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print("torch_job: torch is not installed here (%s)" % e, file=sys.stderr)
        return 3
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        print("torch_job: torch %s has no usable CUDA device or no NCCL (cuda available: %s, nccl: %s)"
              % (torch.__version__, torch.cuda.is_available(), dist.is_nccl_available()), file=sys.stderr)
        return 3

    dev_index = args.device
    if dev_index < 0:
        dev_index = 0 if args.fake_hosts else int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device("cuda", dev_index)
    torch.cuda.set_device(dev)
    t0 = time.time()
    dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world, device_id=dev)
    record = {
        "rank": rank,
        "world_size": world,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl_version(torch),
        "device": torch.cuda.get_device_name(dev),
        "fake_hosts": args.fake_hosts,
        "ops": [],
        "refused": [],
        "iter_seconds": [],
        "artifacts": [],
    }
    ops, refused = record["ops"], record["refused"]

    def entry(op, t, nbytes, **extra):
        e = {"op": op, "count": t.numel(), "dtype": str(t.dtype).replace("torch.", ""),
             "elem_size": t.element_size(), "bytes": nbytes}
        e.update(extra)
        return e

    def issue(entries, call):
        """Runs call (one torch operation); records entries if torch accepted it."""
        try:
            works = call()
            for w in works or []:
                w.wait()
            torch.cuda.synchronize()
        except (RuntimeError, ValueError) as e:
            refused.append({"ops": entries, "error": str(e).splitlines()[0]})
            print("torch_job: rank %d: torch refused %s: %s" % (rank, entries[0]["op"], e), file=sys.stderr)
            return
        ops.extend(entries)

    def tensor(n, dtype):
        return torch.ones(n, dtype=dtype, device=dev)

    prof = None
    if args.profile:  # %R in the path is the rank
        prof = start_profiler(torch, args.profile.replace("%R", str(rank)), args.iters, record["artifacts"])
    store = None
    if args.min_seconds > 0 and world > 1:
        store = dist.distributed_c10d._get_default_store()

    def keep_going(it):
        """Whether to issue iteration it+1: every rank must issue as many, so rank 0 decides by the
        clock and tells the others through the rendezvous store (not NCCL: nothing the plugin sees)."""
        if it < args.iters:
            return True
        if args.min_seconds <= 0:
            return False
        if store is None:
            return time.time() - t0 < args.min_seconds
        key = "xfertop-continue-%d" % it
        if rank == 0:
            go = time.time() - t0 < args.min_seconds
            store.set(key, "1" if go else "0")
            return go
        return store.get(key) == b"1"

    it = 0
    while keep_going(it):
        it += 1
        t_iter = time.time()
        for n, dtype in [(1024, torch.float32), (262144, torch.float32), (4096, torch.bfloat16),
                         (1 << 22, torch.float16), (3000, torch.int64)]:
            t = tensor(n, dtype)
            issue([entry("all_reduce", t, t.nbytes)], lambda: [dist.all_reduce(t, async_op=True)])
        for n, dtype in [(2048, torch.float32), (65536, torch.bfloat16)]:
            inp = tensor(n, dtype)
            out = torch.empty(n * world, dtype=dtype, device=dev)
            issue([entry("all_gather", inp, out.nbytes)],
                  lambda: [dist.all_gather_into_tensor(out, inp, async_op=True)])
        for n, dtype in [(4096, torch.float32), (1 << 20, torch.uint8)]:
            t = tensor(n, dtype)
            issue([entry("broadcast", t, t.nbytes, root=0)], lambda: [dist.broadcast(t, src=0, async_op=True)])
        snd, rcv = tensor(8192, torch.float32), torch.empty(8192, dtype=torch.float32, device=dev)
        to, frm = (rank + 1) % world, (rank - 1) % world
        issue([entry("send", snd, snd.nbytes, peer=to), entry("recv", rcv, rcv.nbytes, peer=frm)],
              lambda: dist.batch_isend_irecv([dist.P2POp(dist.isend, snd, to), dist.P2POp(dist.irecv, rcv, frm)]))
        inp = tensor(4096 * world, torch.float32)
        out = torch.empty_like(inp)
        issue([entry("all_to_all_single", inp, inp.nbytes)],
              lambda: [dist.all_to_all_single(out, inp, async_op=True)])
        record["iter_seconds"].append(round(time.time() - t_iter, 6))
        if prof is not None and it <= args.iters:
            prof.step()
    if prof is not None:  # its trace was exported at its last active step; this ends the profiler
        try:
            prof.stop()
        except Exception as e:
            record["artifacts"].append({"what": "kineto stop", "error": "%s: %s" % (type(e).__name__, e)})

    record["seconds"] = round(time.time() - t0, 3)
    if args.fr_dir:
        dump_flight_recorder(torch, rank, args.fr_dir, record["artifacts"])
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    # Ends the communicators, so that the profiler plugin's finalize flushes what it has to attach.
    dist.destroy_process_group()
    print("torch_job: rank %d of %d: %d operations issued, %d refused, in %.1f s (torch %s, NCCL %s, %s)"
          % (rank, world, len(ops), len(refused), record["seconds"], record["torch"], record["nccl"],
             record["device"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
