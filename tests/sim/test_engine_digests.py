"""The engine's results stay bit-identical for fixed seeds across refactors (issue #40, done-when
2): a short run of every scheme the engine treats specially and of each ordinary kind, digested
(SHA-256 of the summary without its wall-clock key, the time series and the per-frame record)
and compared with the digests recorded before the engine became a registry of flow kinds.

Re-record (only after a change meant to alter results, saying why in its commit):
``python tests/sim/test_engine_digests.py --record``."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from octoric.sim.engine import Engine
from octoric.sim.runner import run_offline
from octoric.sim.scenario import ChannelSpec, FlowSpec, Scenario, load

pytestmark = pytest.mark.unit
DIGESTS = Path(__file__).with_name("engine_digests.json")
SEED = 7
DURATION_S = 4.0
HO_INTERVAL_S = 0.7  # hsr: a handover every ~0.7 s per UE, so each run has several


def _with(name: str, traffic: str, scheme: str, **ue: Any) -> Callable[[], Scenario]:
    def make() -> Scenario:
        sc = load(name)
        sc.duration_s = DURATION_S
        for u in sc.ues:
            if u.mobility.profile == "hsr":
                u.mobility.ho_interval_s = HO_INTERVAL_S
            for k, v in ue.items():
                setattr(u, k, v)
            for f in u.flows:
                f.traffic = traffic  # type: ignore[assignment]
                f.scheme = scheme
        return sc

    return make


def _mixed() -> Scenario:
    """One UE with a video, a bulk and a backlogged flow; HARQ on; headers as bytes."""
    sc = load("hsr")
    sc.duration_s = DURATION_S
    sc.ran.harq_bler = 0.3
    u = sc.ues[0]
    u.mobility.ho_interval_s = HO_INTERVAL_S
    u.count, u.dropper, u.wire_headers = 2, True, True
    u.flows = [FlowSpec(traffic="video", scheme="gcc"), FlowSpec(traffic="bulk", scheme="cubic"),
               FlowSpec(traffic="backlogged"), FlowSpec(traffic="none")]  # fmt: skip
    u.flows[0].video.octopus = True
    u.flows[0].video.keyframe_on_loss = True
    return sc


def _pulse_video(scheme: str) -> Callable[[], Scenario]:
    def make() -> Scenario:
        sc = load("pulse")
        sc.duration_s = DURATION_S
        sc.ues[0].channel = ChannelSpec("pulse", high_mbps=4.0, low_mbps=0.5, switch_s=1.0)
        f = sc.ues[0].flows[0]
        f.scheme, f.start_mbps = scheme, 3.0
        f.video.min_bps = f.video.max_bps = 3e6  # a fixed quality (AWStream, Salsify*)
        f.video.svc = "spatial"  # OctoBBR's layers
        return sc

    return make


CASES: dict[str, Callable[[], Scenario]] = {
    # rate-controlled video (ordinary: the scheme registry alone)
    **{f"video-{s}": _with("multi-ue", "video", s) for s in ("gcc", "gcc-noprobe", "fixed")},
    "video-pbe-hsr": _with("hsr", "video", "pbe"),
    "video-occ-hsr": _with("hsr", "video", "occ"),
    # video on the packet-level transport: every special case of the engine
    **{
        f"tvideo-{s}": _with("hsr", "video", s)
        for s in ("rocc", "rocc+dumbo", "copa+dumbo", "octobbr")
    },
    "tvideo-octobbr-dropper": _with("hsr", "video", "octobbr", dropper=True),
    "tvideo-octobbr-pulse": _pulse_video("octobbr"),
    "tvideo-awstream": _pulse_video("awstream"),
    "tvideo-salsify": _pulse_video("salsify"),
    # bulk transfers with each window scheme; DASH; the rest
    **{
        f"bulk-{s}": _with("multi-ue", "bulk", s)
        for s in ("cubic", "bbr", "bbr+", "copa", "rocc", "morc")
    },
    "bulk-bbr-h-hsr": _with("hsr", "bulk", "bbr-h"),
    "dash-cubic-hsr": _with("hsr", "dash", "cubic"),
    "backlogged-hsr": _with("hsr", "backlogged", "gcc"),
    "mixed-harq-hsr": _mixed,
}


def digest(eng: Engine, summary: dict[str, Any]) -> dict[str, Any]:
    s = dict(summary)
    s.pop("wall_seconds")
    h = hashlib.sha256()
    h.update(json.dumps(s, sort_keys=True).encode())
    h.update(repr((eng._ts_bins, eng.ts_ue_delivered, eng.ts_ue_capacity)).encode())
    for f in eng.flows:
        h.update(repr((f.ts_target, f.ts_abw)).encode())
        if f.sender is not None:
            fr = f.sender.frames
            h.update(repr((fr.enc_us, fr.size, fr.target_bps)).encode())
        if f.receiver is not None:
            h.update(repr(f.receiver.frame_decoded_at).encode())
    delivered = [u["delivered_bytes"] for u in s["ues"]]
    return {"sha256": h.hexdigest(), "delivered_bytes": delivered}


def run_case(name: str) -> dict[str, Any]:
    res = run_offline(CASES[name](), seed=SEED)
    return digest(res.engine, res.summary)


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_are_bit_identical_to_the_recorded_ones(name: str) -> None:
    recorded = json.loads(DIGESTS.read_text())[name]
    assert run_case(name) == recorded


def _record() -> None:
    DIGESTS.write_text(json.dumps({n: run_case(n) for n in sorted(CASES)}, indent=1) + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    _record()
