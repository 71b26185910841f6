"""The gNB's own per-UE metrics: srsRAN's JSON metrics over its remote-control WebSocket.

srsRAN release_25_10 sends them only to WebSocket clients that sent ``{"cmd":
"metrics_subscribe"}`` (``metrics.enable_json`` and ``remote_control.enabled``; no file, no UDP).
The scheduler's document arrives once per ``du_report_period`` per cell: ``{"timestamp",
"cells": [{"cell_metrics": {"pci", ...}, "ue_list": [{"rnti", "pci", "dl_brate" (bit/s),
"dl_mcs", "dl_bs" (bytes), "cqi", ...}]}]}``. ``GnbMetrics`` averages each UE over one-second
windows and appends one JSON line per window to ``gnb-metrics.jsonl``:
``{"t": unix s, "ues": {"<rnti>": {"pci", "dl_brate_bps", "dl_mcs", "dl_bs", "reports"}}}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import aiohttp

from octoric.supervisor import cancel_task

log = logging.getLogger("testbed.gnb_metrics")
WINDOW_S = 1.0


class GnbMetrics:
    """Subscribes to one gNB's JSON metrics and keeps per-UE one-second averages."""

    def __init__(self, port: int, out: Path) -> None:
        self.url = f"http://127.0.0.1:{port}/"
        self.out = out
        self.windows: list[dict[str, Any]] = []
        self.documents = 0
        self.bad_documents = 0
        self.connected = False
        self._acc: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        await cancel_task(self._task)
        self._flush(time.time())

    def latest(self) -> dict[int, dict[str, Any]]:
        """The last complete window's UEs, by RNTI."""
        return {int(r): u for r, u in self.windows[-1]["ues"].items()} if self.windows else {}

    async def _run(self) -> None:
        # the gNB may still be starting, or restart mid-run: connect again until stopped
        async with aiohttp.ClientSession() as session:
            while True:
                try:
                    async with session.ws_connect(self.url, heartbeat=None, max_msg_size=0) as ws:
                        await ws.send_str(json.dumps({"cmd": "metrics_subscribe"}))
                        self.connected = True
                        await self._read(ws)
                except (aiohttp.ClientError, OSError) as e:
                    log.debug("gNB metrics: %s", e)
                self.connected = False
                await asyncio.sleep(0.5)

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        window_end = time.time() + WINDOW_S
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                doc = json.loads(msg.data)
            except ValueError:
                self.bad_documents += 1
                continue
            self.documents += 1
            self.add(doc)
            now = time.time()
            if now >= window_end:
                self._flush(now)
                window_end = now + WINDOW_S

    def add(self, doc: Any) -> None:
        """One metrics document (the scheduler's carry ``cells``; others are skipped)."""
        if not isinstance(doc, dict):
            return
        for cell in doc.get("cells") or ():
            for ue in cell.get("ue_list") or ():
                rnti = ue.get("rnti")
                if not isinstance(rnti, int):
                    continue
                acc = self._acc[rnti]
                acc["reports"] += 1
                acc["pci"] = float(ue.get("pci", cell.get("cell_metrics", {}).get("pci", -1)))
                for src, dst in (("dl_brate", "dl_brate_bps"), ("dl_mcs", "dl_mcs"),
                                 ("dl_bs", "dl_bs")):  # fmt: skip
                    v = ue.get(src)
                    if isinstance(v, (int, float)):
                        acc[dst] += float(v)

    def _flush(self, now: float) -> None:
        if not self._acc:
            return
        ues = {}
        for rnti, acc in sorted(self._acc.items()):
            n = acc["reports"]
            ues[str(rnti)] = {
                "pci": int(acc["pci"]),
                "reports": int(n),
                **{k: acc[k] / n for k in ("dl_brate_bps", "dl_mcs", "dl_bs")},
            }
        row = {"t": round(now, 3), "ues": ues}
        self.windows.append(row)
        with self.out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        self._acc.clear()
