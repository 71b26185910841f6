"""Which subscription the handover xApp asks a node for (``detection``): RC REPORT where the
node offers E2SM-RC, UE-level KPM otherwise; and a node that offers E2SM-RC only for control
(srsRAN's DU refuses every RC REPORT subscription) is followed by KPM after its refusal,
instead of being asked for RC again and again."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from ricsdl.syncstorage import SyncStorage

from octoric.e2sm import kpm, rc
from octoric.redis_server import free_port
from octoric.xapps.base.discovery import E2Node
from octoric.xapps.base.node_subscriptions import NodeSub
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.handover import xapp as ho_xapp
from octoric.xapps.handover.xapp import KPM, RC, HandoverXapp

pytestmark = pytest.mark.unit
BOTH = E2Node("gnb_001_001_00019b_0", True,
              ((kpm.RAN_FUNCTION_ID, kpm.OID), (rc.RAN_FUNCTION_ID, rc.OID)))  # fmt: skip
RC_ONLY = E2Node("gnb_001_001_00019c", True, ((rc.RAN_FUNCTION_ID, rc.OID),))


def _xapp() -> HandoverXapp:
    sdl = SdlStore("handover", storage=SyncStorage(fake_db_backend="dict"))
    return HandoverXapp(free_port(), free_port(), sdl=sdl)


def _kinds(x: HandoverXapp, node: E2Node) -> list[str]:
    return [w.kind for w in x._wants(node)]


def _refused(x: HandoverXapp, node: E2Node, error: str = "RIC action not supported") -> None:
    key = f"{RC}.{node.meid}"
    x.node_subs.subs[key] = NodeSub(node.meid, RC, "s1", "failed", time.monotonic(), error=error)


def test_rc_where_offered_then_kpm_after_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    x = _xapp()
    assert _kinds(x, BOTH) == [RC] and _kinds(x, RC_ONLY) == [RC]
    _refused(x, BOTH)
    _refused(x, RC_ONLY)
    assert _kinds(x, BOTH) == [KPM]  # it refused RC: its UEs are followed by KPM
    assert _kinds(x, RC_ONLY) == [RC]  # no KPM to fall back to: RC is asked again
    del x.node_subs.subs[f"{RC}.{BOTH.meid}"]  # discovery drops the RC record it no longer wants
    assert _kinds(x, BOTH) == [KPM]  # ... and the refusal is remembered
    assert x.counters["rc_refused_kpm_instead"] == 1 and BOTH.meid in x.status()["rc_refused"]
    # after RC_RETRY_S, RC is tried again (a node may have been upgraded)
    monkeypatch.setattr(ho_xapp, "RC_RETRY_S", 0.0)
    assert _kinds(x, BOTH) == [RC]


def test_a_timeout_is_not_a_refusal_and_detection_rc_never_falls_back() -> None:
    x = _xapp()
    _refused(x, BOTH, error="")  # failed without a cause from the node: no outcome in time
    assert _kinds(x, BOTH) == [RC]
    x.cfg = replace(x.cfg, detection=RC)
    _refused(x, BOTH)
    assert _kinds(x, BOTH) == [RC]
    x.cfg = replace(x.cfg, detection=KPM)
    assert _kinds(x, BOTH) == [KPM] and _kinds(x, RC_ONLY) == []


def test_the_rc_definition_decides_before_any_refusal() -> None:
    """A node whose E2SM-RC definition lists no REPORT style 4 (srsRAN's DU offers RC for
    control only) is followed by KPM from the start; one that lists it (octoric's gNBs,
    srsRAN's CU-CP with patch 0009) by RC; an unknown definition is asked for RC."""
    from dataclasses import replace as dc_replace

    from octoric.xapps.base.discovery import rc_report_styles_of

    x = _xapp()
    ours = rc.encode_rc(rc.octoric_ran_function_definition()).hex()
    styles = rc_report_styles_of(ours)
    assert styles is not None and rc.REPORT_STYLE_UE_INFORMATION in styles
    assert rc_report_styles_of("00ff") is None  # not a definition: not known
    assert _kinds(x, dc_replace(BOTH, rc_report_styles=styles)) == [RC]
    control_only = dc_replace(BOTH, rc_report_styles=())
    assert _kinds(x, control_only) == [KPM] and x.counters["rc_refused_kpm_instead"] == 0
    assert _kinds(x, dc_replace(RC_ONLY, rc_report_styles=())) == []  # nothing to follow it by
    x.cfg = replace(x.cfg, detection=RC)
    assert _kinds(x, control_only) == [RC]  # asked for: the node will answer
