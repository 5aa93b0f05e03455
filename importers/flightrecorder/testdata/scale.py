#!/usr/bin/env python3
"""Writes a job of N ranks from this folder's hang/ dumps: python3 scale.py OUT N [--missing R]
[--foreign R]. Tests run it (TestScaledJobMissingRank and the analyze test of a 1,024-rank job);
nothing it writes is kept.

Every rank r gets the dump of hang/'s rank r % 3 (ranks 0-2 there completed all_reduce #1-#4 on
default_pg and wait in #5; each keeps its own clock, 50 us apart), its default_pg widened to
ranks 0..N-1, its tp pair left out and its own rank written in. --missing R writes no dump for rank R (it died before it
could: the likeliest hung rank); --foreign R writes for rank R a dump of another job, whose default_pg
holds the 8 ranks around R, which the import leaves out with a warning. Dumps are pickled at
protocol 2, as the originals and torch's C++ pickler are."""
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(rank):
    with open(os.path.join(HERE, "hang", f"nccl_trace_rank_{rank}"), "rb") as f:
        return pickle.load(f)


def widened(dump, ranks):
    d = dict(dump)
    cfg = dict(d["pg_config"]["0"])
    cfg["ranks"] = "[" + ", ".join(str(r) for r in ranks) + "]"
    d["pg_config"] = {"0": cfg}
    d["entries"] = [e for e in d["entries"] if e["process_group"][0] == "0"]
    return d


def main(argv):
    args = argv[1:]
    opts = {}
    while len(args) > 2:
        flag, value = args[-2], args[-1]
        if flag not in ("--missing", "--foreign"):
            break
        opts[flag], args = int(value), args[:-2]
    if len(args) != 2:
        sys.exit("usage: scale.py OUT N [--missing R] [--foreign R]")
    out, n = args[0], int(args[1])
    os.makedirs(out, exist_ok=True)
    templates = [load(r) for r in range(3)]
    job = [widened(t, range(n)) for t in templates]
    foreign = opts.get("--foreign", 0)
    other = [widened(t, range(foreign - foreign % 8, foreign - foreign % 8 + 8)) for t in templates]
    for r in range(n):
        if r == opts.get("--missing"):
            continue
        dump = dict(other[r % 3] if r == opts.get("--foreign") else job[r % 3])
        dump["rank"] = r  # as torch's newer dumps name their rank; the files differ so, as real ones do
        with open(os.path.join(out, f"nccl_trace_rank_{r}"), "wb") as f:
            pickle.dump(dump, f, protocol=2)


if __name__ == "__main__":
    main(sys.argv)
