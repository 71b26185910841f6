"""A DELETE switches off every dropper a control may have switched on.

Found on a live srsRAN gNB (docs/testbed.md): a policy whose last control had timed out (its
target NOT_ENFORCED for a moment on a loaded machine) was deleted without a control, and the
gNB's dropper stayed on: its cumulative counters grew from 7,523 to 14,451 packets while the
policy was deleted."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from octoric.e2sm import e2ap, rc
from octoric.redis_server import free_port
from octoric.xapps.octopus.planner import ENFORCED, NOT_ENFORCED
from octoric.xapps.octopus.xapp import OctopusXapp, _validated

MEID = "gnb_001_001_00019e_0"
BODY = {"enable": True, "scope": {"meids": [MEID], "ues": [42], "drb_ids": [1]}}


@pytest.fixture()
def xapp(monkeypatch: pytest.MonkeyPatch) -> tuple[OctopusXapp, list[bool]]:
    x = OctopusXapp(free_port(), free_port())
    sent: list[bool] = []  # the enable flag of each RIC control sent

    def send(mtype: int, payload: bytes, meid: str | None = None, **_: Any) -> bool:
        msg = e2ap.decode_e2ap(payload) if meid == MEID else None
        if isinstance(msg, e2ap.RicControlRequest):
            ctl = rc.decode_rc(rc.RcControlMessage, msg.message)
            sent.append(rc.OctopusAdaptation.from_message(ctl).enable)
        return True

    monkeypatch.setattr(x.shell, "send", send)
    monkeypatch.setattr(x, "_rc_nodes", lambda: [MEID])
    return x, sent


def _states(x: OctopusXapp) -> list[str]:
    return [s.state for s in x.policies["p"].targets.values()]


def test_a_delete_after_a_timed_out_control_still_switches_the_dropper_off(
    xapp: tuple[OctopusXapp, list[bool]],
) -> None:
    x, sent = xapp
    x.put("p", _validated(BODY))
    x.assert_once()
    assert sent == [True]
    x.cfg = dataclasses.replace(x.cfg, control_timeout_s=0.1)  # the ACK is late: timed out
    time.sleep(0.15)
    x.assert_once()
    assert NOT_ENFORCED in _states(x) and ENFORCED not in _states(x)
    n = len(sent)
    x.delete("p")
    assert "p" in x.policies and x.policies["p"].deleting  # not forgotten before switching off
    for _ in range(3):  # the switch-on still in flight times out first; it finishes nothing
        time.sleep(0.12)
        x.assert_once()
    assert False in sent[n:], sent


def test_a_policy_never_sent_to_a_gnb_is_deleted_at_once(
    xapp: tuple[OctopusXapp, list[bool]],
) -> None:
    x, sent = xapp
    x.put("p", _validated(BODY))
    x.delete("p")  # before the push thread sent anything
    assert "p" not in x.policies and sent == []
