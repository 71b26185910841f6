"""A plain-ctypes RMR peer that works with any librmr_si.so given by path (ours or O-RAN
SC's), for the interop tests. Run as a subprocess, never imported.

  echo LIB PORT N     -- receive N messages, rts each with mtype+1 and b"re:" + payload
  client LIB PORT N   -- send N x mtype 1000 (sub_id 77, meid, xid), collect the replies;
                         prints one JSON object with what came back
Routes come from RMR_SEED_RT (client side).
"""

from __future__ import annotations

import ctypes
import json
import sys
import time
from typing import Any


class Mbuf(ctypes.Structure):
    _fields_ = [
        ("state", ctypes.c_int),
        ("mtype", ctypes.c_int),
        ("len", ctypes.c_int),
        ("payload", ctypes.POINTER(ctypes.c_char)),
        ("xaction", ctypes.POINTER(ctypes.c_char)),
        ("sub_id", ctypes.c_int),
        ("tp_state", ctypes.c_int),
    ]


P = ctypes.POINTER(Mbuf)


def bind(path: str) -> Any:
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    sig: dict[str, tuple[Any, list[Any]]] = {
        "rmr_init": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
        "rmr_ready": (ctypes.c_int, [ctypes.c_void_p]),
        "rmr_close": (None, [ctypes.c_void_p]),
        "rmr_alloc_msg": (P, [ctypes.c_void_p, ctypes.c_int]),
        "rmr_free_msg": (None, [P]),
        "rmr_send_msg": (P, [ctypes.c_void_p, P]),
        "rmr_rts_msg": (P, [ctypes.c_void_p, P]),
        "rmr_torcv_msg": (P, [ctypes.c_void_p, P, ctypes.c_int]),
        "rmr_bytes2meid": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_int]),
        "rmr_get_meid": (ctypes.c_char_p, [P, ctypes.c_char_p]),
        "rmr_get_src": (ctypes.c_char_p, [P, ctypes.c_char_p]),
        "rmr_payload_size": (ctypes.c_int, [P]),
        "rmr_realloc_payload": (P, [P, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def summary(lib: Any, m: Any) -> dict[str, Any]:
    meid = ctypes.create_string_buffer(64)
    src = ctypes.create_string_buffer(128)
    lib.rmr_get_meid(m, meid)
    lib.rmr_get_src(m, src)
    c = m.contents
    return {
        "state": c.state,
        "mtype": c.mtype,
        "sub_id": c.sub_id,
        "payload": ctypes.string_at(c.payload, c.len).decode(errors="replace"),
        "xid": ctypes.string_at(c.xaction, 32).decode(errors="replace"),
        "meid": meid.value.decode(),
        "src": src.value.decode(),
    }


def echo(lib: Any, port: int, n: int) -> None:
    ctx = lib.rmr_init(str(port).encode(), 4096, 0)
    m = lib.rmr_alloc_msg(ctx, 4096)
    done = 0
    deadline = time.time() + 60
    while done < n and time.time() < deadline:
        m = lib.rmr_torcv_msg(ctx, m, 200)
        if m.contents.state != 0:
            continue
        body = b"re:" + ctypes.string_at(m.contents.payload, m.contents.len)
        if lib.rmr_payload_size(m) < len(body):
            m = lib.rmr_realloc_payload(m, len(body), 1, 0)  # as ricxappframe does
        ctypes.memmove(m.contents.payload, body, len(body))
        m.contents.len = len(body)
        m.contents.mtype += 1
        for _ in range(100):
            m = lib.rmr_rts_msg(ctx, m)
            if m.contents.state == 0:
                break
            time.sleep(0.01)
        done += 1
    print(json.dumps({"echoed": done}), flush=True)
    time.sleep(0.5)


def client(lib: Any, port: int, n: int) -> None:
    ctx = lib.rmr_init(str(port).encode(), 4096, 0)
    while not lib.rmr_ready(ctx):
        time.sleep(0.05)
    states = []
    for i in range(n):
        m = lib.rmr_alloc_msg(ctx, 256)
        body = f"hello-{i}".encode()
        ctypes.memmove(m.contents.payload, body, len(body))
        m.contents.len = len(body)
        m.contents.mtype = 1000
        m.contents.sub_id = 77
        ctypes.memmove(m.contents.xaction, f"xid-{i:028d}".encode(), 32)
        lib.rmr_bytes2meid(m, b"gnb_001_001_00019b", 18)
        for _ in range(200):
            m = lib.rmr_send_msg(ctx, m)
            if m.contents.state == 0:
                break
            time.sleep(0.02)
        states.append(m.contents.state)
        lib.rmr_free_msg(m)
    replies = []
    m = lib.rmr_alloc_msg(ctx, 4096)
    deadline = time.time() + 20
    while len(replies) < n and time.time() < deadline:
        m = lib.rmr_torcv_msg(ctx, m, 200)
        if m.contents.state == 0:
            replies.append(summary(lib, m))
    print(json.dumps({"send_states": states, "replies": replies}), flush=True)


if __name__ == "__main__":
    role, path, port, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    {"echo": echo, "client": client}[role](bind(path), port, count)
