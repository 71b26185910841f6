"""Check the handover xApp's events against the simulator's ground truth (issue #12).

Here, below the experiments, so the run report (``deploy.report``) checks every run too;
``octoric eval handover`` (``experiments.handover_eval``) imports it as
``experiments.handover_check``.

Inputs: the simulator's log (``sim.ground_truth``: one JSON line per handover start and end,
``unix_ms`` when the gNB saw it) and the xApp's event log (``controls.event_log``: the
30501 JSON of every event). ``octoric run`` writes both into its run folder
(``sim-handovers.jsonl``, ``handover-events.jsonl``); ``octoric eval handover`` runs
``octoric run`` on a high-speed-rail scenario and checks them.

Per UE, in time order, each ground-truth handover (a start and its end) must be matched by
exactly one ``start`` event and one end event (``complete``, or ``failure`` when it failed),
from and to the right gNBs, within ``max_delay_ms`` of the ground truth; the rc path must
also say ``failure`` for failed ones (the kpm path cannot tell; a kind mismatch is counted
there, not a miss). Events matching no handover are spurious. Handovers that start in the
warm-up (before the xApp's subscriptions are up) or end within ``max_delay_ms`` of the log's
end are not judged (counted as excluded).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from octoric.sim.ground_truth import read as read_jsonl

ENDS = ("complete", "failure")


@dataclass
class GtHandover:
    ue: int
    start_ms: float
    end_ms: float
    source_meid: str
    target_meid: str
    failed: bool
    pingpong: bool


@dataclass
class CheckResult:
    handovers: int = 0  # judged
    excluded: int = 0
    events: int = 0  # start + end events judged
    missed_starts: int = 0
    missed_ends: int = 0
    spurious: int = 0
    wrong_nodes: int = 0
    kind_mismatches: int = 0  # rc path: complete for a failed one (or the other way round)
    kpm_failures_as_complete: int = 0  # kpm path: cannot tell a failure (not an error)
    ping_pongs_truth: int = 0
    ping_pong_events: int = 0
    paths: dict[str, int] = field(default_factory=dict)
    spurious_events: list[dict[str, Any]] = field(default_factory=list)
    start_delay_ms: dict[str, float | None] = field(default_factory=dict)
    end_delay_ms: dict[str, float | None] = field(default_factory=dict)
    interruption_error_ms: dict[str, float | None] = field(default_factory=dict)

    @property
    def missed(self) -> int:
        return self.missed_starts + self.missed_ends

    @property
    def ok(self) -> bool:
        bad = self.missed + self.spurious + self.wrong_nodes + self.kind_mismatches
        return self.handovers > 0 and bad == 0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "missed": self.missed, "ok": self.ok}


def ground_truth(records: list[dict[str, Any]]) -> tuple[list[GtHandover], float]:
    """Start/end pairs per UE and the time of the log's last record. A start without an end
    (in progress when the run stopped) gets ``end_ms`` = infinity."""
    open_: dict[int, dict[str, Any]] = {}
    out: list[GtHandover] = []
    last = 0.0
    for r in records:
        last = max(last, float(r["unix_ms"]))
        if r["event"] == "start":
            open_[r["ue"]] = r
        elif (s := open_.pop(r["ue"], None)) is not None:
            out.append(
                GtHandover(r["ue"], float(s["unix_ms"]), float(r["unix_ms"]), s["source_meid"],
                           r["target_meid"], bool(r["failed"]), bool(s.get("pingpong")))
            )  # fmt: skip
    for s in open_.values():
        out.append(
            GtHandover(s["ue"], float(s["unix_ms"]), float("inf"), s["source_meid"],
                       s["target_meid"], bool(s["failed"]), bool(s.get("pingpong")))
        )  # fmt: skip
    return out, last


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "max": None}
    return {
        "p50": round(float(np.percentile(values, 50)), 3),
        "p99": round(float(np.percentile(values, 99)), 3),
        "max": round(float(max(values)), 3),
    }


def _pick(
    cands: list[dict[str, Any]], used: set[int], kinds: tuple[str, ...], lo: float, hi: float
) -> dict[str, Any] | None:
    """The first unused event of ``kinds`` stamped within [lo, hi], marked used."""
    for e in cands:
        if id(e) not in used and e["event"] in kinds and lo <= e["t_ms"] <= hi:
            used.add(id(e))
            return e
    return None


def check(
    truth: list[dict[str, Any]],
    events: list[dict[str, Any]],
    warmup_until_ms: float = 0.0,
    max_delay_ms: float = 1000.0,
    slack_ms: float = 20.0,
) -> CheckResult:
    """See the module docstring. ``slack_ms``: how much earlier than the ground truth an
    event may be stamped (the two clocks are the same machine's, read by two processes)."""
    hos, last_ms = ground_truth(truth)
    res = CheckResult()
    by_ue: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e.get("event") == "ping_pong":
            res.ping_pong_events += 1
            continue
        by_ue.setdefault(int(e["ue"]), []).append(e)
    used: set[int] = set()
    start_d: list[float] = []
    end_d: list[float] = []
    int_err: list[float] = []
    for h in sorted(hos, key=lambda h: h.start_ms):
        cands = by_ue.get(h.ue, [])
        if h.start_ms < warmup_until_ms or h.end_ms > last_ms - max_delay_ms:
            # not judged; its events (if any) are its own, not spurious ones
            res.excluded += 1
            end = min(h.end_ms, last_ms)
            _pick(cands, used, ("start",), h.start_ms - slack_ms, end + max_delay_ms)
            _pick(cands, used, ENDS, end - slack_ms, end + max_delay_ms)
            continue
        res.handovers += 1
        res.ping_pongs_truth += h.pingpong

        st = _pick(cands, used, ("start",), h.start_ms - slack_ms, h.end_ms + max_delay_ms)
        if st is None:
            res.missed_starts += 1
        else:
            res.events += 1
            start_d.append(st["t_ms"] - h.start_ms)
            res.paths[st.get("path", "?")] = res.paths.get(st.get("path", "?"), 0) + 1
        en = _pick(cands, used, ENDS, h.end_ms - slack_ms, h.end_ms + max_delay_ms)
        if en is None:
            res.missed_ends += 1
            continue
        res.events += 1
        end_d.append(en["t_ms"] - h.end_ms)
        if (en.get("source_meid") not in (None, h.source_meid)
                or en.get("target_meid") != h.target_meid):  # fmt: skip
            res.wrong_nodes += 1
        if (en["event"] == "failure") != h.failed:
            if en.get("path") == "kpm" and h.failed:
                res.kpm_failures_as_complete += 1
            else:
                res.kind_mismatches += 1
        if en.get("interruption_ms") is not None:
            int_err.append(abs(float(en["interruption_ms"]) - (h.end_ms - h.start_ms)))
    # events no handover explains: only inside the judged span (not the warm-up, not the tail)
    for evs in by_ue.values():
        for ev in evs:
            if id(ev) in used:
                continue
            t = ev["t_ms"]
            if t < warmup_until_ms:
                continue  # the xApp's subscriptions were coming up
            res.spurious += 1
            res.spurious_events.append(ev)
    res.start_delay_ms = _spread(start_d)
    res.end_delay_ms = _spread(end_d)
    res.interruption_error_ms = _spread(int_err)
    return res


def check_run(run_dir: Path, warmup_s: float = 10.0, max_delay_ms: float = 1000.0) -> CheckResult:
    gt_path, ev_path = run_dir / "sim-handovers.jsonl", run_dir / "handover-events.jsonl"
    for p in (gt_path, ev_path):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: not there (a run of `octoric run` with the sim and the "
                                    "handover xApp writes it)")  # fmt: skip
    truth = read_jsonl(gt_path)
    if not truth:
        raise ValueError(f"{gt_path}: no handovers (a scenario with mobility, e.g. hsr?)")
    # the simulator's start, wall clock: each record knows its simulated time
    start_ms = min(float(r["unix_ms"]) - float(r["sim_s"]) * 1000 for r in truth)
    return check(truth, read_jsonl(ev_path), start_ms + warmup_s * 1000, max_delay_ms)
