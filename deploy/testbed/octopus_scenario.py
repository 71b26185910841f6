"""Octopus on the real gNB (``octoric testbed live``): an A1 policy for the video UE, drops of
its injected video when the sender overshoots, the gNB's counters beside the octopus xApp's, a
gNB restart mid-run, and DELETE.

The video UE is the test UE whose DRB1 carries the CU-UP's N3 traffic (srsran_agent patch 0016);
its sender follows OCC's feedback, so its RLC queue only builds when the sender sends more than
the UE gets: ``Injector.overshoot`` makes it send 1.5x OCC's target for a few seconds, the way
a sender behaves before it has seen a capacity drop. That is more than the UE gets when it
shares its cell (the default layout); a video UE with a cell of its own (``--cells 4``) has a
target of about half the cell, so 1.5x still fits (live run: 43 Mbit/s sent, 64 kB queued,
nothing dropped) and these phases say nothing there. The phases (``TIMELINE``):

1. ``policy``: PUT of policy type 30500 scoped to the video UE and DRB1 -> RC CONTROL action
   100 -> the gNB's ACK (the xApp says ``enforced``).
2. ``overshoot_with_policy``: the gNB drops whole messages.
3. ``delete``: the policy goes (the xApp switches the dropper off).
4. ``overshoot_without_policy``: the same overshoot with no policy: everything the sender sent
   queues at the gNB: its buffer report (``dl_bs``, srsRAN's JSON metrics) grows to several
   times what the policy kept it to (the verdict); the gNB's DL bytes for the UE against the
   bytes injected in the window are shown beside it. (The gNB reports its
   drop counters only in the ACK of a control that switches the dropper on, patch 0004, so no
   counter can be read once the policy is gone.)
5. ``policy_again``, then ``restart``: the gNB is stopped and started again; the xApp's
   periodic assertion gives the new gNB the policy back.
6. ``overshoot_after_restart``: drops again, by the restored policy.
7. ``delete_final``: the octopus xApp's counters against the gNB's reports, and DELETE.

What the gNB reported is read from its pcaps once it has stopped (srsRAN writes them in
blocks: a live read misses the last seconds): every RIC CONTROL ACKNOWLEDGE carries the
dropper's counters (RAN parameters 8-11). ``judge`` then decides each phase: drops in a
phase are the counters' growth over its window; the octopus xApp's counters (what its 30502
messages carry, sampled each second from its status) must each be counters the gNB reported,
and its value just before DELETE the gNB's last report before it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from octoric.contracts import a1, auth
from octoric.contracts.octopus_policy import DropCounters
from octoric.contracts.schemas import OCTOPUS_POLICY_TYPE_ID
from octoric.deploy.testbed import e2_capture
from octoric.rest_client import request_json

log = logging.getLogger("testbed.octopus")
POLICY_ID = "testbed-live"
# x OCC's target: above what the UE gets (OCC's target sits below its ABW by a latency margin),
# and the excess of OVERSHOOT_S fits the RLC queue (6 MB), so without a dropper nothing is lost
OVERSHOOT = 1.5
OVERSHOOT_S = 5.0
DRAIN_S = 10.0  # after an overshoot, until the queue has drained
ACK_SLACK_S = 2.5  # the xApp asserts every second: an ACK within this after a window counts
# seconds after the checks' last step; the handover action runs at 40 s
TIMELINE = (
    (10.0, "policy"),
    (20.0, "overshoot_with_policy"),
    (37.0, "delete"),
    (45.0, "overshoot_without_policy"),
    (62.0, "policy_again"),
    (72.0, "restart"),
    (100.0, "overshoot_after_restart"),
    (118.0, "delete_final"),
)
ZERO = DropCounters()


def a1_policy(run_dir: Path) -> tuple[str, str]:
    """The URL of this run's Octopus policy instance at the RIC's A1, and the API token."""
    from octoric.ric.services import RicRuntime

    rt = RicRuntime.read(run_dir / "ric.json")
    path = a1.policy_path(OCTOPUS_POLICY_TYPE_ID, POLICY_ID)
    url = f"http://127.0.0.1:{rt.ric.a1_rest_port}{path}"
    return url, rt.api_token


class OctopusScenario:
    def __init__(self, checks: Any, ue: int) -> None:
        """``checks``: the run's ``live.LiveChecks`` (its gNB, injector, metrics and xApp status;
        typed loosely so that this module does not import the one that imports it)."""
        self.c = checks
        self.ue = ue  # the video UE's OCC/E2 key
        self.windows: dict[str, tuple[float, float]] = {}  # phase -> unix start, end
        self.facts: dict[str, dict[str, Any]] = {}  # phase -> what was seen live
        self.xapp_samples: list[tuple[float, DropCounters]] = []
        self.restart_at: float | None = None
        self.xapp_at_delete: tuple[float, DropCounters | None] = (0.0, None)
        self.result: dict[str, Any] = {"ue": ue, "phases": {}}
        self._a1: tuple[str, str] | None = None  # policy URL, token

    def actions(self) -> list[tuple[float, Any]]:
        return [(t, getattr(self, name)) for t, name in TIMELINE]

    # --- live ---------------------------------------------------------------------------------
    def sample(self) -> None:
        """The xApp's counters for the video UE, from the status its component polls."""
        st = self.c.xapps["octopus"].last_status if "octopus" in self.c.xapps else {}
        d = _target_drops(st, self.ue)
        if d is not None and (not self.xapp_samples or self.xapp_samples[-1][1] != d):
            self.xapp_samples.append((time.time(), d))

    def _url(self) -> tuple[str, str]:
        if self._a1 is None:
            self._a1 = a1_policy(self.c.ctx.run_dir)
        return self._a1

    async def _put(self, body: dict[str, Any] | None) -> tuple[int, Any]:
        url, token = self._url()
        method = "DELETE" if body is None else "PUT"
        return await asyncio.to_thread(request_json, method, url, body, auth.bearer(token))

    async def _wait_state(self, want: str, timeout_s: float) -> str:
        """The policy's state at the xApp (``removed``: gone), waited for."""
        deadline = time.monotonic() + timeout_s
        state = "unknown"
        while time.monotonic() < deadline:
            st = await asyncio.to_thread(self.c._status, "octopus", True)
            pols = [p for p in st.get("policies", []) if p.get("id") == POLICY_ID]
            state = pols[0].get("state", "unknown") if pols else "removed"
            if state == want:
                break
            await asyncio.sleep(0.5)
        return state

    def _note(self, phase: str, **facts: Any) -> None:
        self.facts.setdefault(phase, {}).update(facts)
        log.info("octopus %s: %s", phase, json.dumps(facts, default=str)[:300])

    def _body(self) -> dict[str, Any]:
        scope = {"meids": [self.c.du_meid], "ues": [self.ue], "drb_ids": [1]}
        return {"enable": True, "scope": scope}

    async def _overshoot(self, phase: str) -> None:
        inj = self.c.injector
        if inj is None:
            self._note(phase, error="no injector running")
            return
        t0, sent0 = time.time(), inj.stats.bytes
        inj.overshoot(OVERSHOOT, OVERSHOOT_S)
        peak = 0.0
        while time.time() - t0 < OVERSHOOT_S + DRAIN_S:
            g = self.c.metrics.latest().get(self.c.video_rnti or -1, {}) if self.c.metrics else {}
            peak = max(peak, float(g.get("dl_bs") or 0.0))
            await asyncio.sleep(0.5)
        t1 = time.time()
        self.windows[phase] = (t0, t1)
        # the bytes injected in the overshoot's first OVERSHOOT_S against what the gNB delivered
        # to the UE until the queue drained (srsRAN's per-second DL bitrate, integrated)
        sent = inj.stats.bytes - sent0
        delivered = self._delivered(t0, t1)
        # srsRAN's JSON metrics stopped mid-run before patch 0019 (docs/testbed.md): say so
        windows = sum(
            1 for w in (self.c.metrics.windows if self.c.metrics else [])
            if t0 < float(w["t"]) <= t1 and str(self.c.video_rnti) in w["ues"]
        )  # fmt: skip
        self._note(phase, dl_bs_peak_bytes=peak, injected_bytes=sent, gnb_dl_bytes=delivered,
                   delivered_share=round(delivered / sent, 3) if sent else None,
                   metrics_windows=windows)  # fmt: skip

    def _delivered(self, t0: float, t1: float) -> float:
        """Bytes the gNB sent the video UE between ``t0`` and ``t1`` (its JSON metrics)."""
        if self.c.metrics is None or self.c.video_rnti is None:
            return 0.0
        total, prev = 0.0, None
        for w in self.c.metrics.windows:
            t = float(w["t"])
            if prev is not None and t0 < t <= t1 + 1.0:
                u = w["ues"].get(str(self.c.video_rnti)) or w["ues"].get(self.c.video_rnti) or {}
                total += float(u.get("dl_brate_bps") or 0.0) * (t - prev) / 8
            prev = t
        return total

    # --- the phases -----------------------------------------------------------------------------
    async def policy(self, phase: str = "policy") -> None:
        t0 = time.time()
        code, answer = await self._put(self._body())
        state = await self._wait_state("enforced", 15.0)
        self.windows[phase] = (t0, time.time())
        self._note(phase, a1_status=code, a1_answer=answer, state=state)

    async def policy_again(self) -> None:
        await self.policy("policy_again")

    async def overshoot_with_policy(self) -> None:
        await self._overshoot("overshoot_with_policy")

    async def restart(self) -> None:
        t0 = time.time()
        self.restart_at = t0
        await self.c.gnb.restart()
        deadline = time.monotonic() + 45.0
        nodes = 0
        while time.monotonic() < deadline:
            nodes = len([n for n in await self.c._ric_nodes() if n["connected"]])
            if nodes >= 2:
                break
            await asyncio.sleep(0.5)
        state = await self._wait_state("enforced", 30.0)
        # the xApp's next assertion reaches the new gNB within a second or two
        await asyncio.sleep(3.0)
        self.windows["restart"] = (t0, time.time())
        self._note("restart", nodes_connected=nodes, state=state, starts=self.c.gnb.starts,
                   seconds=round(time.time() - t0, 1))  # fmt: skip

    async def overshoot_after_restart(self) -> None:
        await self._overshoot("overshoot_after_restart")

    async def delete(self, phase: str = "delete") -> None:
        st = await asyncio.to_thread(self.c._status, "octopus", True)
        if phase == "delete_final":
            self.xapp_at_delete = (time.time(), _target_drops(st, self.ue))
        t0 = time.time()
        code, answer = await self._put(None)
        state = await self._wait_state("removed", 15.0)
        self.windows[phase] = (t0, time.time())
        self._note(phase, a1_status=code, a1_answer=answer, state=state)

    async def delete_final(self) -> None:
        await self.delete("delete_final")

    async def overshoot_without_policy(self) -> None:
        await self._overshoot("overshoot_without_policy")

    # --- the verdicts (after the gNB stopped) ---------------------------------------------------
    def judge(self) -> list[tuple[str, str, bool, dict[str, Any]]]:
        """(phase, outcome, ok, facts) of every phase that ran, from the gNB's flushed pcaps."""
        files = self.c.gnb.files("gnb-e2ap-du.pcap")
        if not files:
            return []
        # the ACKs of each gNB start (a restart starts a new pcap and fresh counters)
        starts = [e2_capture.control_outcomes(f) for f in files]
        acks = [a for s in starts for a in s]
        self.result["gnb_acks"] = len(acks)
        out: list[tuple[str, str, bool, dict[str, Any]]] = []

        def at(t: float) -> DropCounters:
            """The gNB's counters as last reported at or before ``t`` (that gNB start's)."""
            restarted = self.restart_at is not None and t >= self.restart_at
            start = starts[-1] if restarted else starts[0]
            before = [c for ts, c in start if ts <= t]
            return before[-1] if before else ZERO

        def add(phase: str, outcome: str, ok: bool, **facts: Any) -> None:
            facts = {**self.facts.get(phase, {}), **facts}
            out.append((phase, outcome, ok, facts))
            self.result["phases"][phase] = {"ok": ok, "outcome": outcome, **facts}

        for phase in ("policy", "policy_again"):
            if phase not in self.windows:
                continue
            t0, t1 = self.windows[phase]
            n = sum(1 for ts, _ in acks if t0 <= ts <= t1 + ACK_SLACK_S)
            state = self.facts[phase].get("state")
            add(phase, f"A1 PUT {self.facts[phase].get('a1_status')}; policy {state}; "
                f"the gNB acknowledged {n} RC controls in the first seconds",
                state == "enforced" and n > 0, gnb_acks=n)  # fmt: skip
        for phase in ("overshoot_with_policy", "overshoot_after_restart"):
            if phase not in self.windows:
                continue
            t0, t1 = self.windows[phase]
            a, b = at(t0), at(t1 + ACK_SLACK_S)
            packets = b.packets - a.packets
            msgs = (b.msgs_by_message - a.msgs_by_message) + (b.msgs_by_bitrate - a.msgs_by_bitrate)
            peak = self.facts[phase].get("dl_bs_peak_bytes", 0.0)
            if not self.facts[phase].get("metrics_windows") and packets == 0:
                # no gNB metrics, no drop: its metrics had stopped, and with them the KPM OCC
                # reads, so the sender followed no ABW (before patch 0019, docs/testbed.md)
                add(phase, "not measured: the gNB's metrics had stopped and nothing was "
                    "dropped", False, measured=False)  # fmt: skip
                continue
            add(phase, f"{OVERSHOOT}x OCC's target for {OVERSHOOT_S:.0f} s: the gNB dropped "
                f"{packets} packets ({b.bytes - a.bytes} bytes) in {msgs} whole messages and "
                f"delivered {self.facts[phase].get('delivered_share')} of the injected bytes; "
                f"its buffer (dl_bs) peaked at {peak / 1e3:.0f} kB", packets > 0 and msgs > 0,
                gnb_before=asdict(a), gnb_after=asdict(b))  # fmt: skip
        if "restart" in self.windows:
            t0, _ = self.windows["restart"]
            new = [ts for ts, _ in (starts[-1] if len(starts) > 1 else [])]
            f = self.facts["restart"]
            add("restart", f"gNB restarted ({f.get('starts')} starts, {f.get('seconds')} s); "
                f"{f.get('nodes_connected')} E2 nodes again; policy {f.get('state')}; the new gNB "
                f"acknowledged {len(new)} RC controls, the first {new[0] - t0:.1f} s after the "
                "restart" if new else "restart: the new gNB acknowledged no RC control",
                bool(new) and f.get("state") == "enforced", gnb_acks_after=len(new))  # fmt: skip
        for phase in ("delete", "delete_final"):
            if phase not in self.windows:
                continue
            f = self.facts[phase]
            add(phase, f"A1 DELETE {f.get('a1_status')}; policy {f.get('state')}",
                f.get("state") == "removed")  # fmt: skip
        if "delete_final" in self.windows:
            # the xApp read just before DELETE against the gNB's last report before that read (an
            # ACK sent in the last few ms may still be on its way)
            t_read, xapp = self.xapp_at_delete
            gnb = {at(t_read), at(t_read - 0.05)}
            reported = {c for _, c in acks}
            foreign = [c for _, c in self.xapp_samples if c not in reported]
            ok = xapp is not None and xapp in gnb and not foreign and xapp != ZERO
            add("counters", f"{len(self.xapp_samples)} distinct counter values at the octopus "
                f"xApp over the run, {len(foreign)} of them never reported by the gNB; just before "
                f"DELETE the xApp had {asdict(xapp) if xapp else None}, the gNB's last report "
                f"{asdict(at(t_read))}", ok,
                not_reported=[asdict(c) for c in foreign][:5])  # fmt: skip
        if "overshoot_without_policy" in self.windows:
            f = self.facts["overshoot_without_policy"]
            g = self.facts.get("overshoot_with_policy", {})
            share, share_with = f.get("delivered_share"), g.get("delivered_share")
            peak, peak_with = f.get("dl_bs_peak_bytes", 0.0), g.get("dl_bs_peak_bytes", 0.0)
            # the verdict is the buffer: without a dropper the overshoot's excess queues (it fits
            # the RLC queue, so nothing is lost there); the delivered share is shown, not judged
            # (srsRAN's per-second bitrate over a 15 s window is too coarse to tell 0.87 from 1)
            queued = peak > 3 * peak_with > 0
            # ... or, directly, the dropper's counters, reported in the ACK of the control that
            # switches it on: a dropper switched off at DELETE comes back counting from 0, one
            # left on would count on from before (a live run did, 7,523 -> 14,451 packets, until
            # the xApp's DELETE was fixed). PF gives a video UE that sent little a large share
            # of its cell, so the overshoot may fit and queue nothing: the counters still tell.
            before, after = self._counters_around_delete(acks, at)
            kept = before is not None and after is not None and after in (ZERO, before)
            measured = bool(f.get("metrics_windows")) and bool(g.get("metrics_windows"))
            if not measured and before is None:
                add("overshoot_without_policy", "not measured: the gNB's JSON metrics (its buffer "
                    "report) stopped before this phase", False, measured=False)  # fmt: skip
                return out
            b_txt = asdict(before) if before is not None else None
            a_txt = asdict(after) if after is not None else None
            drops = ("the dropper was off from DELETE to the policy's return (its counters "
                     f"went from {b_txt} to 0)" if kept and after == ZERO else
                     f"the dropper dropped nothing from DELETE to the policy's return (its "
                     f"counters stayed at {b_txt})" if kept else
                     f"the dropper's counters went from {b_txt} before DELETE to {a_txt} when "
                     "the policy came back: it dropped while deleted")  # fmt: skip
            add("overshoot_without_policy", f"{OVERSHOOT}x OCC's target for {OVERSHOOT_S:.0f} s "
                f"with no policy: {drops}; the gNB delivered {share} of the injected bytes (with "
                f"the policy {share_with}); its buffer (dl_bs) peaked at {peak / 1e3:.0f} kB "
                f"(with the policy {peak_with / 1e3:.0f} kB)", kept or queued,
                counters_kept=kept, queued=queued)  # fmt: skip
        return out

    def _counters_around_delete(
        self, acks: list[tuple[float, DropCounters]], at: Any
    ) -> tuple[DropCounters | None, DropCounters | None]:
        """The gNB's counters last reported before DELETE, and in its first ACK after the policy
        came back (same gNB start), or None where that ACK is missing."""
        if "delete" not in self.windows or "policy_again" not in self.windows:
            return None, None
        t_del, t_back = self.windows["delete"][0], self.windows["policy_again"][0]
        if self.restart_at is not None and t_del < self.restart_at <= t_back:
            return None, None
        after = [
            c
            for ts, c in acks
            if ts >= t_back
            and (self.restart_at is None or ts < self.restart_at or t_back >= self.restart_at)
        ]
        before = at(t_del)
        return (before if before != ZERO else None), (after[0] if after else None)


def _target_drops(status: dict[str, Any], ue: int) -> DropCounters | None:
    for p in status.get("policies", []):
        if p.get("id") != POLICY_ID:
            continue
        for t in p.get("targets", []):
            if t.get("ue") == ue and t.get("drops"):
                return DropCounters(**t["drops"])
    return None
