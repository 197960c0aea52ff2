#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks for tests/rxe/agent.sh: loads a published profile through librtune itself (ctypes: rt_profile_load and
# rt_profile_select, exactly what an application calls) and prints or checks one entry's fields.
# usage: agent_check.py LIBRTUNE PROFILE DEVICE PORT OP QPT [FIELD=VALUE ...]   (FIELD: inline_threshold,
#        signal_interval, app; prints "inline_threshold=.. signal_interval=.. app=.." and exits 1 on a mismatch or
#        when librtune refuses the file or has no such entry)
import ctypes, json, sys

lib, path, dev, port, op, qpt = sys.argv[1:7]
want = dict(a.split("=", 1) for a in sys.argv[7:])
L = ctypes.CDLL(lib)


class Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("text", ctypes.c_char * 512)]


L.rt_profile_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
L.rt_profile_select.restype = ctypes.c_void_p
L.rt_profile_select.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
for f in ("rt_profile_inline_threshold", "rt_profile_signal_interval"):
    getattr(L, f).restype = ctypes.c_uint32
    getattr(L, f).argtypes = [ctypes.c_void_p]
p = ctypes.c_void_p()
err = ctypes.create_string_buffer(4096)
rc = L.rt_profile_load(path.encode(), ctypes.byref(p), err)
if rc:
    print(f"librtune refused {path}: rc {rc}")
    sys.exit(1)
e = L.rt_profile_select(p, dev.encode(), int(port), 0 if op == "send" else 1, {"rc": 0, "ud": 1, "srd": 2}[qpt])
if not e:
    print(f"librtune: no entry {dev}/{port} {op}/{qpt} in {path}")
    sys.exit(1)
doc = json.load(open(path))
apps = [x.get("app") or "" for x in doc["entries"] if x["device"] == dev and x["port"] == int(port)
        and x["opcode"] == op and x["qp_type"] == qpt]
got = {"inline_threshold": str(L.rt_profile_inline_threshold(e)), "signal_interval": str(L.rt_profile_signal_interval(e)),
       "app": apps[0] if apps else ""}
print(" ".join(f"{k}={v}" for k, v in got.items()))
bad = [k for k, v in want.items() if got.get(k) != v]
if bad:
    print("mismatch: " + ", ".join(f"{k} is {got.get(k)!r}, expected {want[k]!r}" for k in bad))
    sys.exit(1)
