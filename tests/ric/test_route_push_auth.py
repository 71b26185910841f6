"""Only the run's route manager may install routes (issue #17).

Before: any process on the host could push its own route table to e2term's route port (it was
acknowledged) and take the KPM stream. Now the embedded RIC makes a route key per run
(``ric.json``, mode 0600), rtmgr signs every table with it (``routing.render``), and every RMR
endpoint of the run installs only signed tables (``OCTORIC_RMR_RT_KEY``, the librmr builder)."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from octoric.contracts import message_types as mt
from octoric.ric.rmr_endpoint import RmrEndpoint
from octoric.ric.routing import build_routes, render
from octoric.ric.services import RicRuntime

from .conftest import LoopThread, RicStack, free_pair

pytestmark = [pytest.mark.integration]


async def _push(target: str, table: str) -> str:
    """Push ``table`` to a route port as a stranger would; the ack's text."""
    ep = RmrEndpoint("stranger", free_pair())
    ep.start()
    try:
        assert ep.wh_send_to(target, mt.RMRRM_TABLE_DATA, table.encode())
        msg = await asyncio.wait_for(ep.receive(), 5)
        assert msg.mtype == mt.RMRRM_TABLE_STATE
        return msg.payload.rstrip(b"\0").decode()
    finally:
        ep.close()


def test_only_signed_tables_are_installed(ric_stack: RicStack, loop_thread: LoopThread) -> None:
    rt: RicRuntime = ric_stack.rt
    assert len(rt.rt_key) == 64  # 32 random bytes, hex
    state = Path(rt.run_dir) / "ric.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600  # the key is the user's only
    e2term_routes = f"127.0.0.1:{rt.ric.e2term_rmr_port + 1}"
    evil = "newrt|start|evil\nrte|12050|127.0.0.1:9\nnewrt|end|1\n"
    ack = loop_thread.call(_push(e2term_routes, evil))
    assert ack.startswith("ERR evil") and "not signed" in ack, ack
    # signed with another key: refused too
    routes = build_routes(rt.platform_endpoints(), [], [])
    ack = loop_thread.call(_push(e2term_routes, render(routes, "forged", b"k" * 32)))
    assert ack.startswith("ERR forged"), ack
    # the run's own key (what rtmgr holds): installed
    ack = loop_thread.call(_push(e2term_routes, render(routes, "ours", rt.rt_key_bytes)))
    assert ack.startswith("OK ours"), ack
