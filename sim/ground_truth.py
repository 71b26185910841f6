"""The live simulator's ground-truth handover log: one JSON line per handover start and end,
written as it happens (``sim run --live --handover-log PATH``; ``octoric run`` writes
``<run folder>/sim-handovers.jsonl``).

What the handover xApp's events are checked against (``experiments.handover_check``,
``octoric bench handover``): which UE (AMF-UE-NGAP-ID), from which gNB and cell to which,
failed or not, a ping-pong hop or not, and ``unix_ms``, the wall-clock time at which the gNB
saw it happen, the same instant its E2 agent sends the RC report.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import IO, Any

from octoric.sim.engine import Engine, MobilityEvent


class HandoverLog:
    """A mobility sink (``Engine.add_mobility_sink``) appending to a JSON-lines file."""

    def __init__(self, path: Path, engine: Engine, meids: list[str], ncis: dict[int, int]) -> None:
        """``meids[g]``: gNB ``g``'s E2 node id; ``ncis[cell index]``: its NR Cell Identity."""
        self.engine, self.meids, self.ncis = engine, meids, ncis
        self.lines = 0
        self._f: IO[str] | None = path.open("w", encoding="utf-8", buffering=1)

    def __call__(self, ev: MobilityEvent) -> None:
        if self._f is None:
            return
        cells = self.engine.cells
        src, dst = cells[ev.source_cell], cells[ev.target_cell]
        rec: dict[str, Any] = {
            "event": "start" if ev.kind == "ho_start" else "end",
            "ue": ev.amf_ue_ngap_id,
            "unix_ms": round(time.time() * 1000, 3),
            "sim_s": round(ev.t_us / 1e6, 6),
            "source_meid": self.meids[src.gnb],
            "target_meid": self.meids[dst.gnb],
            "source_nci": f"{self.ncis[ev.source_cell]:x}",
            "target_nci": f"{self.ncis[ev.target_cell]:x}",
            "failed": ev.failed,
        }
        if ev.kind == "ho_start":
            last = next(
                (h for h in reversed(self.engine.handovers) if h.ue == ev.ue), None
            )  # the engine records the handover before it tells the sinks
            rec["pingpong"] = bool(last.pingpong) if last is not None else False
        else:
            rec["interruption_ms"] = ev.interruption_us / 1000
        self._f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self.lines += 1

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def read(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines log, this one or the handover xApp's event log (a torn
    line, from a killed process, is skipped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
