#!/usr/bin/env python3
"""Compares what a job issued with what `xfertop attach --headless --json` reported for it, and
prints a table, issued against reported. Standard library only.

    check_attach.py --report attach.json issued-rank0.json [issued-rank1.json ...]

Each issued file is one rank's list, as scripts/device/torch_job.py writes it: rank, world_size,
and ops (op, count, dtype, elem_size, bytes; peer for send and recv). All ranks of the job must be
given. What the report should hold, in its own terms (docs/attach.md, docs/report.md):

- collectives (all_reduce, all_gather, broadcast, reduce, reduce_scatter): one instance per call
  (every rank issues the same calls), in the report's "collectives" rows by op, ranks and size
  class (the power of two at or above the bytes; the rows' bytes are each instance's, in nccl-tests'
  terms). On one rank NCCL 2.28 runs a collective as a local copy (ncclLaunchOneRank in
  src/enqueue.cc's taskAppend) and the plugin sees nothing: expected 0.
- send and recv: each rank's, in transfers.by_size rows of kind send and recv (count and bytes).
  all_to_all_single is world-size sends and as many receives of bytes / world size, one to and from
  each rank: torch 2.11 calls ncclAlltoAll (NCCL 2.28 and later), which NCCL expands into a send and
  a receive task per peer. On one rank ncclAlltoAll is a collective of a one-rank communicator, a
  local copy like the others, and the plugin sees nothing: it is expected in the "collectives" rows
  as all_to_all with 0 instances (a real run, NCCL 2.28.9, torch 2.11, H200: no send or receive for
  it, while batch_isend_irecv to itself was seen; the Kineto trace holds one device-to-device
  memcpy of the whole buffer per call and no NCCL kernel).
- every rank seen (devices), no events dropped, no collective instance left incomplete, no alert.

Exit status: 0 everything matches; 1 a mismatch (the rows marked MISMATCH say which); 2 an input
that cannot be read (the message names the file).
"""

import argparse
import json
import sys

COLLECTIVES = ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter")
ONE_RANK_NOTE = "1 rank: NCCL runs it as a local copy, no event"
# What the report calls all_to_all_single's collective (timeline's op name), for its one-rank row.
ALL_TO_ALL = "all_to_all"


class InputError(Exception):
    pass


def size_class(n):
    """The power of two at or above n, as analysis.SizeClass computes it."""
    if n <= 1:
        return max(n, 0)
    return 1 << (n - 1).bit_length()


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise InputError("%s: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise InputError("%s: not JSON: %s" % (path, e))


def field(obj, key, kind, where):
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise InputError("%s: %s is missing or not a %s" % (where, key, kind.__name__))
    return v


def expected(ranks):
    """What the report should hold for the ranks' issued lists: {(section, op, size class): (calls, count, bytes)}."""
    world = ranks[0][1]["world_size"]
    exp = {}

    def add(key, calls, count, nbytes):
        c = exp.setdefault(key, [0, 0, 0])
        c[0] += calls
        c[1] += count
        c[2] += nbytes

    colls = None
    for path, r in ranks:
        mine = []
        for i, op in enumerate(field(r, "ops", list, path)):
            where = "%s: ops[%d]" % (path, i)
            name = field(op, "op", str, where)
            nbytes = field(op, "bytes", int, where)
            if name in COLLECTIVES:
                mine.append((name, nbytes))
            elif name in ("send", "recv"):
                field(op, "peer", int, where)
                add(("transfer", name, size_class(nbytes)), 1, 1, nbytes)
            elif name == "all_to_all_single":
                if nbytes % world:
                    raise InputError("%s: bytes %d do not split over %d ranks" % (where, nbytes, world))
                if world == 1:
                    # ncclAlltoAll of a one-rank communicator: ncclLaunchOneRank, no task, no event.
                    add(("collective", ALL_TO_ALL, size_class(nbytes)), 1, 0, 0)
                    continue
                part = nbytes // world
                for kind in ("send", "recv"):
                    add(("transfer", kind, size_class(part)), 1, world, part * world)
            else:
                raise InputError("%s: unknown op %r" % (where, name))
        if colls is None:
            colls = mine
        elif mine != colls:
            raise InputError("%s: issued other collectives than %s (every rank must issue the same)" % (path, ranks[0][0]))
    for name, nbytes in colls or []:
        key = ("collective", name, size_class(nbytes))
        if world == 1:
            add(key, 1, 0, 0)
        else:
            add(key, 1, 1, nbytes)
    return exp


def reported(report, world, path):
    """What the report holds, in the same keys; collectives of another rank count are kept apart."""
    rep = {}
    for i, row in enumerate(field(report, "collectives", list, path)):
        where = "%s: collectives[%d]" % (path, i)
        op, ranks = field(row, "op", str, where), field(row, "ranks", int, where)
        n, mean = field(row, "count", int, where), field(row, "bytes", int, where)
        name = op if ranks == world else "%s (%d ranks)" % (op, ranks)
        c = rep.setdefault(("collective", name, field(row, "size_class", int, where)), [0, 0])
        # A row's bytes are the mean over its instances, rounded down: the total is within count.
        c[0] += n
        c[1] += mean * n
    transfers = field(report, "transfers", dict, path)
    for i, row in enumerate(field(transfers, "by_size", list, path + ": transfers")):
        where = "%s: transfers.by_size[%d]" % (path, i)
        kind = field(row, "kind", str, where)
        if kind not in ("send", "recv"):
            continue
        c = rep.setdefault(("transfer", kind, field(row, "size_class", int, where)), [0, 0])
        c[0] += field(row, "count", int, where)
        c[1] += field(row, "bytes", int, where)
    return rep


def compare(report, ranks, report_path):
    """Returns the table's rows and the number of mismatches."""
    world = ranks[0][1]["world_size"]
    exp, rep = expected(ranks), reported(report, world, report_path)
    rows, bad = [], 0
    order = {"collective": 0, "transfer": 1}
    for key in sorted(set(exp) | set(rep), key=lambda k: (order[k[0]], k[1], k[2])):
        section, name, cls = key
        calls, want_n, want_b = exp.get(key, (0, 0, 0))
        got_n, got_b = rep.get(key, (0, 0))
        slack = got_n if section == "collective" else 0
        ok = got_n == want_n and abs(got_b - want_b) <= slack
        note = ""
        if section == "collective" and world == 1 and calls:
            note = ONE_RANK_NOTE if not got_n else "1 rank: expected none (NCCL runs it as a local copy), yet reported"
        if key not in exp:
            note = "reported, not issued"
        elif want_n and not got_n:
            note = "issued, not reported"
        bad += not ok
        rows.append((name, str(cls), str(calls), str(want_n), str(got_n), str(want_b), str(got_b),
                     "ok" if ok else "MISMATCH", note))
    devices = report.get("devices")
    for name, want, got in (("ranks seen (devices)", world, devices),
                            ("dropped_events", 0, report.get("dropped_events")),
                            ("collectives_incomplete", 0, report.get("collectives_incomplete")),
                            ("alert_count", 0, report.get("alert_count"))):
        ok = got == want
        bad += not ok
        rows.append((name, "", "", str(want), str(got), "", "", "ok" if ok else "MISMATCH", ""))
    return rows, bad


def table(rows):
    head = ("what", "size_class", "calls", "expected", "reported", "bytes_expected", "bytes_reported", "result", "note")
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) if i in (0, 7, 8) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join([line(head)] + [line(r) for r in rows])


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--report", required=True, help="the JSON `xfertop attach --headless --json` printed")
    p.add_argument("issued", nargs="+", help="each rank's list of issued operations (torch_job.py --out)")
    a = p.parse_args(argv)
    try:
        report = load(a.report)
        if not isinstance(report, dict):
            raise InputError("%s: not a report (a JSON object)" % a.report)
        ranks = []
        for path in a.issued:
            r = load(path)
            field(r, "rank", int, path)
            field(r, "world_size", int, path)
            ranks.append((path, r))
        ranks.sort(key=lambda pr: pr[1]["rank"])
        world = ranks[0][1]["world_size"]
        if any(r["world_size"] != world for _, r in ranks) or world < 1:
            raise InputError("the issued lists disagree on world_size: %s" % ", ".join("%s: %d" % (p, r["world_size"]) for p, r in ranks))
        have = [r["rank"] for _, r in ranks]
        if have != list(range(world)):
            raise InputError("a job of %d ranks needs one issued list per rank 0..%d; given ranks %s" % (world, world - 1, have))
        rows, bad = compare(report, ranks, a.report)
    except InputError as e:
        print("check_attach: %s" % e, file=sys.stderr)
        return 2
    print(table(rows))
    for path, r in ranks:
        for x in r.get("refused", []):
            print("note: %s: torch refused %s: %s" % (path, ", ".join(o.get("op", "?") for o in x.get("ops", [])), x.get("error", "")))
    if bad:
        print("MISMATCH: %d row(s) differ between what the job issued and what attach reported" % bad)
        return 1
    print("MATCH: attach reported what the job issued (%d rank(s))" % world)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
