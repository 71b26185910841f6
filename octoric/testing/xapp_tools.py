"""Small helpers for test xApps written on unmodified ricxappframe (tests/*/programs)."""

from __future__ import annotations

import time
from typing import Any

import octoric.ric.rmr  # noqa: F401  (our librmr_si.so, before ricxappframe binds it)

from ricxappframe.rmr import rmr


def send_with_meid(mrc: Any, mtype: int, payload: bytes, meid: str, tries: int = 20) -> int:
    """Send through the route table with an RMR meid (RMRXapp.rmr_send cannot set one),
    retrying while routes are still arriving; returns the final RMR state (0 = sent)."""
    sbuf = rmr.rmr_alloc_msg(
        mrc, len(payload), payload=payload, mtype=mtype, meid=meid.encode(), gen_transaction_id=True
    )
    for _ in range(tries):
        sbuf = rmr.rmr_send_msg(mrc, sbuf)
        if sbuf.contents.state == 0:
            break
        time.sleep(0.1)
    state = int(sbuf.contents.state)
    rmr.rmr_free_msg(sbuf)
    return state
