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
    return p.parse_args()


def nccl_version(torch):
    v = torch.cuda.nccl.version()  # a tuple in recent torch, an int (2.28.9: 22809) in older ones
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def main():
    args = parse_args()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29571")
    if args.fake_hosts:
        # Read by NCCL when it first hashes the host, after this point (init_process_group).
        os.environ["NCCL_HOSTID"] = "xfertop-fake-host-%d" % rank
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

    for _ in range(args.iters):
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

    record["seconds"] = round(time.time() - t0, 3)
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
