#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks the probe's JSON files of one run against what the application was asked to send:
#   probe_check.py [--each] --qpt RC --op send --wrs N --bytes B [--size S] [--min-inline K] [--min-files F] FILE...
# Sums the opcode class (send: send/send_imm/send_inv; write: rdma_write/rdma_write_imm; read: rdma_read) over the QPs
# of type qpt, over all files (or, with --each, in every file separately) and requires exactly N WRs and B bytes;
# --size S also requires all of them in S's histogram bucket; --min-inline K at least K inline WRs; --lat-samples L
# exactly L sampled post->completion latencies on those QPs.
import argparse
import json
import sys

CLASSES = {"send": ("send", "send_imm", "send_inv"), "write": ("rdma_write", "rdma_write_imm"), "read": ("rdma_read",)}


def bucket_lo(size):
    if size < 8:
        return size
    e = size.bit_length() - 1
    sub = (size >> (e - 3)) & 7
    return (8 + sub) << (e - 3)


def sums(docs, qpt, op, size):
    wrs = byts = inl = in_bucket = drops = lat = 0
    for d in docs:
        # what would make the counts wrong: posts or QPs the probe could not record. Latency samples it could not
        # match (latency_samples_dropped/stale: a completion polled by another thread, as rping's CQ thread does, while
        # the sample was queued) are counted and documented (docs/probe.md), and do not touch the counts checked here.
        drops += sum(v for k, v in d["drops"].items() if not k.startswith("latency_"))
        for q in d["qps"]:
            if q["qp_type"] != qpt:
                continue
            lat += q["latency"]["samples"]
            for name in CLASSES[op]:
                o = q["ops"].get(name)
                if not o:
                    continue
                wrs += o["wrs"]
                byts += o["bytes"]
                inl += o["inline_wrs"]
                if size is not None:
                    in_bucket += sum(c for lo, hi, c in o["hist"] if lo == bucket_lo(size))
    return wrs, byts, inl, in_bucket, drops, lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--each", action="store_true")
    ap.add_argument("--qpt", required=True)
    ap.add_argument("--op", required=True, choices=CLASSES)
    ap.add_argument("--wrs", type=int, required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--size", type=int)
    ap.add_argument("--min-inline", type=int, default=0)
    ap.add_argument("--min-files", type=int, default=1)
    ap.add_argument("--lat-samples", type=int, help="exact sampled post->completion latencies (summed like WRs)")
    ap.add_argument("--label", default="")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    docs = []
    for f in a.files:
        with open(f) as fh:
            d = json.load(fh)
        assert d["schema"] == {"name": "rtune-probe", "version": "1.1"}, f
        docs.append(d)
    if len(docs) < a.min_files:
        print(f"FAIL {a.label}: {len(docs)} probe files, expected at least {a.min_files}")
        return 1
    groups = [[d] for d in docs] if a.each else [docs]
    ok = True
    for g in groups:
        wrs, byts, inl, in_bucket, drops, lat = sums(g, a.qpt, a.op, a.size)
        who = g[0]["exe"].rsplit("/", 1)[-1] + (f" pid {g[0]['pid']}" if a.each else f" ({len(g)} processes)")
        good = wrs == a.wrs and byts == a.bytes and inl >= a.min_inline and drops == 0
        if a.size is not None:
            good = good and in_bucket == a.wrs
        if a.lat_samples is not None:
            good = good and lat == a.lat_samples
        print(f"{'ok' if good else 'FAIL'} {a.label}: {who}: {a.qpt} {a.op}: {wrs} WRs (want {a.wrs}), {byts} bytes "
              f"(want {a.bytes}), {inl} inline (want >= {a.min_inline}), "
              + (f"{in_bucket} in the {a.size}-byte bucket, " if a.size is not None else "")
              + (f"{lat} latency samples (want {a.lat_samples}), " if a.lat_samples is not None else "")
              + f"{drops} drops")
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
