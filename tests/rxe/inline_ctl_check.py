#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks tests/rxe/inline-ctl.sh's runs: the example's move log ("inline move at message M: A -> B B") and summary.

usage: inline_ctl_check.py DIR BUDGET SWITCH CAP
"""
import re
import sys


def band(b):
    """Bucket of b in the shared scheme (common/rt_hist.h): exact below 8, then 8 per power of two."""
    if b < 8:
        return b
    e = b.bit_length() - 1
    return 8 + (e - 3) * 8 + ((b >> (e - 3)) & 7)


def near(a, b):
    return abs(band(a) - band(b)) <= 1


def load(path):
    text = open(path).read()
    moves = [(int(m), int(a), int(b)) for m, a, b in re.findall(r"^inline move at message (\d+): (\d+) -> (\d+) B",
                                                                  text, re.M)]
    st = re.search(r"inline controller: start (\d+) B, final (\d+) B", text)
    summ = re.search(r"sent (\d+) messages .*?(\d+) ENOMEM; received (\d+), (\d+) bad", text)
    return text, moves, st, summ


def threshold_at(start, moves, msg):
    t = start
    for m, _, b in moves:
        if m > msg:
            break
        t = b
    return t


def converged_at(start, moves, target, lo, hi):
    """First message in lo..hi from which the threshold stays within one band of target until hi (None if never)."""
    t, since = threshold_at(start, moves, lo), lo if near(threshold_at(start, moves, lo), target) else None
    for m, _, b in moves:
        if m <= lo or m > hi:
            continue
        t = b
        if near(t, target):
            since = since if since is not None else m
        else:
            since = None
    return since


def main():
    d, budget, switch, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ok = True

    def bad(msg):
        nonlocal ok
        ok = False
        print("FAIL:", msg)

    for name, start, phases in (("below", 16, [(0, None, 128)]), ("above", cap, [(0, switch, 128), (switch, None, 64)])):
        text, moves, st, summ = load("%s/%s.out" % (d, name))
        if not st or not summ:
            bad("%s: no controller or summary line" % name)
            continue
        sent, enomem, recv, badn = map(int, summ.groups())
        if enomem or badn or recv != sent:
            bad("%s: %d ENOMEM, %d bad, %d of %d received" % (name, enomem, badn, recv, sent))
        if int(st.group(1)) != min(start, cap):
            bad("%s: started at %s, not %d" % (name, st.group(1), min(start, cap)))
        if any(b > cap for _, _, b in moves):
            bad("%s: a threshold above the granted %d B" % (name, cap))
        for lo, hi, target in phases:
            end = hi if hi is not None else sent
            at = converged_at(min(start, cap), moves, target, lo, end)
            t_end = threshold_at(min(start, cap), moves, end)
            print("%s: messages %d..%d, target %d B: threshold %d B at %d, within one band from message %s (%s after "
                  "the phase start; budget %d)" % (name, lo, end, target, t_end, end, at,
                                                   None if at is None else at - lo, budget))
            if at is None or not near(t_end, target):
                bad("%s: not within one band of %d B at message %d (threshold %d B)" % (name, target, end, t_end))
            elif at - lo > budget:
                bad("%s: within one band of %d B only %d messages after the phase start (budget %d)" %
                    (name, target, at - lo, budget))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
