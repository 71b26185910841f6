"""``octoric testbed live``: a real srsRAN gNB (no radio, test-mode UEs) against this machine's
embedded RIC and the three xApps, with each step checked and named.

Start order: Redis, the RIC, the gNB (it connects once, so the RIC listens first), the xApps,
then ``LiveChecks``, which walks the steps a testbed user would check by hand:

1. E2 Setup: the gNB's DU and CU-CP agents are E2 nodes of the RIC.
2. KPM subscription: the OCC xApp's subscription to the DU is active, in the KPM version the DU
   announced.
3. First indication at the OCC xApp.
4. OCC reports (30500) for every test UE.
5. Handover xApp: its E2SM-RC REPORT style 4 subscription to the CU-CP.

A step that does not happen in time ends the run with one line: which step, what was seen, what
to look at. The video injector starts after step 3 (the video UE, whose DRB1 carries the
CU-UP's N3 traffic, has no downlink until then). After the steps the run keeps sampling (OCC's
ABW beside the gNB's own DL bitrate per UE, one row a second) and acts on the gNB: Octopus on
the video UE (``octopus_scenario``: policy, drops, gNB restart, DELETE) and a forced handover
(``ho`` on the gNB's console); what happened is recorded as observations, not judged fatal
(docs/testbed.md says what srsRAN's test mode allows). At the end ``testbed.json`` holds the
steps, the series, the E2 counts from the gNB's pcaps beside the xApps' counters, the Octopus
phases, and ``testbed.png`` the ABW-vs-bitrate plot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError

from octoric import realtime
from octoric.contracts import auth, ue_key
from octoric.deploy.testbed import e2_capture
from octoric.deploy.testbed.gnb import GnbComponent, ModeUe
from octoric.deploy.testbed.gnb_metrics import GnbMetrics
from octoric.deploy.testbed.injector import Injector
from octoric.deploy.testbed.octopus_scenario import POLICY_ID, OctopusScenario, a1_policy
from octoric.deploy.xapps_component import XappComponent, _get_json
from octoric.rest_client import request_json, request_text
from octoric.supervisor import RunContext, cancel_task

log = logging.getLogger("testbed.live")


@dataclass
class Step:
    name: str
    ok: bool | None = None  # None: not reached
    detail: str = ""
    at_s: float | None = None  # seconds into the run


@dataclass
class Observation:
    """An action the run tried on the gNB and what came of it (recorded, not judged)."""

    name: str
    outcome: str
    evidence: list[str] = field(default_factory=list)


def _send(method: str, url: str, token: str, body: Any = None) -> tuple[int, Any]:
    return request_json(method, url, body, auth.bearer(token))


class LiveChecks:
    """The steps and the sampling of ``octoric testbed live`` (a supervisor component)."""

    name = "checks"

    def __init__(
        self,
        gnb: GnbComponent,
        xapps: list[XappComponent],
        step_timeout_s: float = 45.0,
        inject: bool = False,
    ) -> None:
        self.gnb = gnb
        self.inject = inject
        self.xapps = {x.spec.name: x for x in xapps}
        self.step_timeout_s = step_timeout_s
        self.steps = [Step(n) for n in (
            "E2 Setup", "KPM subscription", "first indication", "OCC reports for every test UE",
            "handover subscription",
        )]  # fmt: skip
        self.observations: list[Observation] = []
        self.series: list[dict[str, Any]] = []
        self.nodes: list[dict[str, Any]] = []
        self.ctx: RunContext | None = None
        self.metrics: GnbMetrics | None = None
        self._task: asyncio.Task[None] | None = None
        self._failed: str | None = None
        self.du_meid = ""
        self.cucp_meid = ""
        self.final: dict[str, Any] = {}
        self.injector: Injector | None = None
        self.octopus: OctopusScenario | None = None
        self._log_mark = 0  # srsRAN's log size when the policy went out
        self._sampler: asyncio.Task[None] | None = None
        self._occ_final_count = False
        self._e2term: dict[str, float] = {}
        self._occ_instances: set[int] = set()  # every RIC instance of OCC's DU subscriptions
        self._sdl: Any = None  # the RIC's SDL, opened at the first look at its E2 nodes

    @property
    def video_rnti(self) -> int | None:
        return self.gnb.video_rnti

    # --- component --------------------------------------------------------------------------
    async def start(self, ctx: RunContext) -> None:
        self.ctx = ctx
        # with OCTORIC_RT_PRIORITY the RIC and the xApps run SCHED_FIFO; the checks (this event
        # loop) must keep up with them beside a gNB that takes both cores: at normal priority
        # they saw the E2 Setup 74 s into a 75 s 4-cell run (2026-11-28). A gNB this run
        # restarts later runs at normal priority again (reset on fork).
        realtime.apply_from_env("testbed checks", reset_on_fork=True)
        self.metrics = GnbMetrics(self.gnb.ws_port, ctx.run_dir / "gnb-metrics.jsonl")
        self.metrics.start()
        self._task = asyncio.create_task(self._run())
        self._task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        """A crash of the steps fails the run with its cause: without this the run went on to its
        full duration showing "waiting: E2 Setup" while the task lay dead (a Redis read timeout
        on a loaded host, 3 runs on 2026-11-28)."""
        if task.cancelled() or task.exception() is None:
            return
        e = task.exception()
        self._failed = f"the checks stopped on an error: {type(e).__name__}: {e}"
        log.error("%s", self._failed, exc_info=e)

    async def stop(self) -> None:
        await cancel_task(self._task)
        await cancel_task(self._sampler)
        if self._sdl is not None:
            with contextlib.suppress(Exception):  # Redis may be gone first
                await self._sdl.close()
        if self.metrics is not None:
            await self.metrics.stop()
        if self.injector is not None:
            await self.injector.stop()
        with contextlib.suppress(Exception):
            self._sample()
        # The count: the gNB stops first (no new indication; srsRAN closes its pcap files), then the
        # OCC xApp gets a moment for what is in flight before its own count is read.
        await self.gnb.stop()
        await asyncio.sleep(1.0)
        if "occ" in self.xapps:
            self._occ_final_count = await self._read_final(self.xapps["occ"])
        self._e2term = await asyncio.to_thread(self._e2term_counters)
        if self.octopus is not None:
            # the gNB's pcaps are complete only now that it stopped
            for phase, outcome, ok, facts in self.octopus.judge():
                ev = [f"{k}: {json.dumps(v, default=str)[:300]}" for k, v in facts.items()]
                name = f"octopus: {phase} ({'ok' if ok else 'NOT MET'})"
                self.observations.append(Observation(name, outcome, ev))
                log.info("%s: %s", name, outcome)
        self.final = self._summary()
        if self.ctx is not None:
            (self.ctx.run_dir / "testbed.json").write_text(
                json.dumps(self.report_full(), indent=2, default=str)
            )

    def status(self) -> str:
        done = [s for s in self.steps if s.ok]
        if self._failed:
            return "checks FAILED"
        if len(done) < len(self.steps):
            nxt = next(s for s in self.steps if not s.ok)
            return f"checks {len(done)}/{len(self.steps)}, waiting: {nxt.name}"
        return f"checks {len(done)}/{len(self.steps)} ok, {len(self.series)} samples"

    def failed(self) -> str | None:
        return self._failed

    def report(self) -> dict[str, Any]:
        return {
            "steps": [asdict(s) for s in self.steps],
            "observations": [asdict(o) for o in self.observations],
            "summary_lines": self._summary_lines(),
        }

    def report_full(self) -> dict[str, Any]:
        return {
            **self.report(),
            "nodes": self.nodes,
            "du_meid": self.du_meid,
            "cucp_meid": self.cucp_meid,
            "summary": self.final,
            "octopus": self.octopus.result if self.octopus else None,
            "series": self.series,
        }

    # --- the steps ----------------------------------------------------------------------------
    def _t(self) -> float:
        assert self.ctx is not None
        return round(time.monotonic() - self.ctx.started_at, 2)

    async def _step(
        self,
        index: int,
        check: Callable[[], Awaitable[str | None]],
        hint: str,
        timeout_s: float | None = None,
    ) -> bool:
        """Wait until ``check()`` gives a detail (the step happened); fail the run if not."""
        step = self.steps[index]
        timeout_s = timeout_s or self.step_timeout_s
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                detail = await check()
            except (OSError, RedisError, ValueError, KeyError, TypeError) as e:
                # a read that times out on a loaded host is tried again until the deadline
                detail, last = None, f"{type(e).__name__}: {e}"
            if detail:
                step.ok, step.detail, step.at_s = True, detail, self._t()
                log.info("step ok: %s (%s) at %.1f s", step.name, detail, step.at_s)
                return True
            await asyncio.sleep(0.5)
        step.ok, step.at_s = False, self._t()
        step.detail = f"not within {timeout_s:.0f} s{f' ({last})' if last else ''}; {hint}"
        self._failed = f"step '{step.name}' failed: {step.detail}"
        log.error("step FAILED: %s: %s", step.name, step.detail)
        return False

    async def _ric_nodes(self) -> list[dict[str, Any]]:
        """The E2 nodes e2term holds, from SDL, over one connection kept for the run: this is
        asked twice a second while a 4-cell gNB takes both cores, where a new connection and
        login each time (and the whole RIC status beside it) made a slow check slower."""
        from octoric.ric import nodes
        from octoric.ric.sdl import Sdl
        from octoric.ric.services import RicRuntime

        assert self.ctx is not None
        if self._sdl is None:
            rt = RicRuntime.read(self.ctx.run_dir / "ric.json")
            self._sdl = Sdl(rt.redis_host, rt.redis_port, auth=rt.redis_auth())
        return [
            {"meid": n.meid, "connected": n.connected,
             "ran_functions": [{"id": f.ran_function_id, "oid": f.oid} for f in n.ran_functions]}
            for n in await nodes.load_all(self._sdl)
        ]  # fmt: skip

    async def _e2_setup(self) -> str | None:
        self.nodes = [n for n in await self._ric_nodes() if n["connected"]]
        # srsRAN's DU meid carries the gNB-DU-ID (``_0``); its CU-CP's does not
        du = [n for n in self.nodes if n["meid"].count("_") == 4]
        cucp = [n for n in self.nodes if n["meid"].count("_") == 3]
        if not du or not cucp:
            return None
        self.du_meid, self.cucp_meid = du[0]["meid"], cucp[0]["meid"]
        return ", ".join(
            f"{n['meid']} ({' '.join(f['oid'] for f in n['ran_functions'])})" for n in self.nodes
        )

    @staticmethod
    async def _read_final(x: XappComponent, attempts: int = 40, timeout: float = 5.0) -> bool:
        """Reads the xApp's status once more, after the gNB stopped: its counters are compared
        with the gNB's pcaps, so a stale status (the 1 s poll can time out on a loaded machine)
        would count the indications of its last seconds as lost. False if it never answered."""
        got, last, deadline = False, -1, time.monotonic() + DRAIN_WAIT_S
        for i in range(attempts):
            try:
                x.last_status = await asyncio.to_thread(_get_json, x.status_url, timeout)
                got = True
                # a loaded machine leaves the xApp seconds behind the gNB: its count is final
                # once it stops growing (what is still queued was not lost)
                n = int(x.last_status.get("counters", {}).get("indications", 0))
                if n == last or time.monotonic() > deadline:
                    return True
                last = n
            except (OSError, ValueError) as e:
                log.warning("final status of %s unreadable (try %d/%d): %s", x.name, i + 1,
                            attempts, e)  # fmt: skip
                if time.monotonic() > deadline:
                    break
            await asyncio.sleep(1.0)
        return got

    def _e2term_counters(self) -> dict[str, float]:
        """e2term's forwarding counters (its /metrics): with OCC's RMR counters they say where an
        indication the gNB sent was lost on the way (e2term -> RMR -> OCC's receive ring)."""
        if self.ctx is None:
            return {}
        url = f"http://127.0.0.1:{self.ctx.config.ric.e2term_http_port}/metrics"
        try:
            text = request_text(url, auth.bearer(auth.token_from_env()))
        except OSError as e:
            log.warning("e2term's counters unreadable: %s", e)
            return {}
        return e2term_counters(text)

    def _status(self, xapp: str, fresh: bool = False) -> dict[str, Any]:
        """The xApp's status: what its component polled last (once a second), or read now."""
        x = self.xapps.get(xapp)
        if x is None:
            return {}
        return dict(_get_json(x.status_url)) if fresh else dict(x.last_status)

    async def _kpm_subscription(self) -> str | None:
        st = self._status("occ")
        subs = [s for s in st.get("subscriptions", []) if s.get("meid") == self.du_meid]
        active = [s for s in subs if s.get("state") in ("active", "subscribed")]
        if not active:
            return None
        return json.dumps(active[0], default=str)[:300]

    async def _first_indication(self) -> str | None:
        st = self._status("occ")
        n = int(st.get("counters", {}).get("indications", 0))
        return f"{n} indications at the OCC xApp" if n else None

    def _ue_keys(self) -> dict[int, int]:
        """Test UE RNTI -> its OCC UE key (node + gNB-CU-UE-F1AP-ID)."""
        return {
            u.rnti: ue_key.du_key(self.du_meid, u.cu_f1ap_id)
            for u in self.gnb.test_ues()
            if u.cu_f1ap_id is not None
        }

    async def _occ_reports(self) -> str | None:
        keys = self._ue_keys()
        want = len(self.gnb.test_ues())
        if len(keys) < want:
            return None
        if self.injector is None and self.video_rnti in keys:
            # without the injector the video UE has no downlink, and OCC no ABW for it
            del keys[self.video_rnti]
        st = self._status("occ")
        have = {int(u["ue"]) for u in st.get("ues", []) if u.get("target_bps") is not None}
        missing = [r for r, k in keys.items() if k not in have]
        if missing:
            return None
        idle = "" if len(keys) == want else f" (video UE {self.video_rnti:#06x} idle: no injector)"
        return f"{len(keys)} test UEs ({', '.join(f'{r:#06x}' for r in keys)}) have an ABW{idle}"

    async def _handover_subscription(self) -> str | None:
        st = self._status("handover")
        subs = [s for s in st.get("subscriptions", []) if s.get("meid") == self.cucp_meid]
        active = [s for s in subs if s.get("state") in ("active", "subscribed")]
        return json.dumps(active[0], default=str)[:300] if active else None

    async def _run(self) -> None:
        # the first step also waits out the start (the gNB's cells, the warm spares' imports):
        # with 4 cells on 2 cores the checks themselves got no answer from Redis for 36-45 s
        ok = await self._step(
            0, self._e2_setup,
            "the gNB's DU and CU-CP must connect: see gnb.log (\"E2AP: Connection to "
            "Near-RT-RIC\") and e2term.log in the run folder",
            timeout_s=2 * self.step_timeout_s,
        )  # fmt: skip
        ok = ok and await self._step(
            1, self._kpm_subscription,
            "see xapp-occ.log (subscription, unsupported_nodes) and submgr.log",
        )  # fmt: skip
        ok = ok and await self._step(
            2, self._first_indication,
            "subscribed but no indication: see gnb-srsran.log (E2 lines) and e2term.log",
        )  # fmt: skip
        if ok and self.inject:
            await self._start_injector()
        ok = ok and await self._step(
            3, self._occ_reports,
            "see xapp-occ.log (rejected_indications, dropped UE rows) and the test UEs' "
            "F1AP lines in gnb-srsran.log",
        )  # fmt: skip
        if "handover" in self.xapps:
            ok = ok and await self._step(
                4, self._handover_subscription,
                "see xapp-handover.log and the CU-CP's E2 lines in gnb-srsran.log",
            )  # fmt: skip
        else:
            self.steps[4].ok, self.steps[4].detail = True, "handover xApp not enabled"
        if not ok:
            return
        self._sampler = asyncio.create_task(self._sample_every_second())
        actions: list[tuple[float, Callable[[], Awaitable[None]]]] = [(40.0, self._try_handover)]
        keys = self._ue_keys()
        roles = ue_roles(self.gnb.test_ues(), self.video_rnti)
        video_alone = bool(roles.get(f"{self.video_rnti or 0:#06x}", {}).get("alone"))
        if self.injector is not None and self.video_rnti in keys and not video_alone:
            self.octopus = OctopusScenario(self, keys[self.video_rnti])
            actions += self.octopus.actions()
        else:
            if video_alone:
                # 1.5x OCC's target fits a cell of its own: the phases would judge nothing
                self.observations.append(Observation(
                    "octopus phases", "not run: the video UE has a cell of its own (--cells "
                    f"{len(self.gnb.cells)}), where 1.5x OCC's target still fits and no queue "
                    "forms; the default layout (2 cells x 2 UEs) runs them"))  # fmt: skip
            actions.append((20.0, self._try_policy))
        actions.sort(key=lambda a: a[0])
        assert self.ctx is not None
        for at, act in actions:
            now = time.monotonic() - self.ctx.started_at
            await asyncio.sleep(max(0.0, at + (self.steps[3].at_s or 0) - now))
            try:
                await act()
            except Exception as e:  # an action's failure is an observation, not a crash
                self.observations.append(Observation(act.__name__, f"error: {e}"))

    async def _sample_every_second(self) -> None:
        while True:
            self._sample()
            await asyncio.sleep(1.0)

    async def _start_injector(self) -> None:
        """OCC-fed video for the video UE into the CU-UP's N3 (see ``injector``): it starts at
        1 Mbit/s and follows OCC's feedback from the first report on."""
        occ = self.xapps.get("occ")
        if occ is None or self.video_rnti is None:
            self.observations.append(Observation(
                "video injector", "not started: the gNB config gives no test UE a DRB "
                "(test_mode.test_ue.cu_up_drb_5qi)",
            ))  # fmt: skip
            return
        deadline = time.monotonic() + self.step_timeout_s
        while self.video_rnti not in (keys := self._ue_keys()) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        if self.video_rnti not in keys:
            self.observations.append(Observation("video injector", "not started: no F1AP ID "
                                                 "for the video UE in gnb-srsran.log"))  # fmt: skip
            return
        url = f"http://127.0.0.1:{occ.http_port}/occ/v1/flows"
        self.injector = Injector(url, ue=keys[self.video_rnti], mode="raw")
        try:
            self.injector.start()
        except OSError as e:
            self.observations.append(Observation("video injector", f"could not start: {e}"))
            self.injector = None

    # --- sampling -----------------------------------------------------------------------------
    def _sample(self) -> None:
        if self.metrics is None or "occ" not in self.xapps:
            return
        if self.octopus is not None:
            self.octopus.sample()
        st = self.xapps["occ"].last_status
        self._occ_instances |= _du_instances(st, self.du_meid)
        occ = {int(u["ue"]): u for u in st.get("ues", [])}
        gnb = self.metrics.latest()
        row: dict[str, Any] = {"t": round(time.time(), 3), "ues": {}}
        for rnti, key in self._ue_keys().items():
            o, g = occ.get(key, {}), gnb.get(rnti, {})
            row["ues"][f"{rnti:#06x}"] = {
                "pci": g.get("pci"),
                "gnb_dl_brate_bps": g.get("dl_brate_bps"),
                "gnb_dl_mcs": g.get("dl_mcs"),
                "gnb_dl_bs": g.get("dl_bs"),
                "occ_target_bps": o.get("target_bps"),
                "occ_frame_abw_bps": o.get("frame_abw_bps"),
                "occ_cp_bps": o.get("cp_bps"),
                "occ_fallback": o.get("fallback"),
            }
        self.series.append(row)

    # --- the actions ----------------------------------------------------------------------------
    async def _try_policy(self) -> None:
        """An A1 policy for the DU's test UEs: the octopus xApp turns it into RC CONTROL
        action 100; what the gNB answers is in the octopus xApp's status and the DU pcap."""
        assert self.ctx is not None
        url, token = a1_policy(self.ctx.run_dir)
        ues = sorted(self._ue_keys().values())
        body = {"enable": True, "scope": {"meids": [self.du_meid], "ues": ues}}
        self._log_mark = self.gnb.srsran_log_path().stat().st_size
        code, answer = await asyncio.to_thread(_send, "PUT", url, token, body)
        obs = Observation("A1 policy -> RC CONTROL action 100", f"A1 PUT answered {code}")
        obs.evidence.append(f"A1: {code} {answer}")
        deadline = time.monotonic() + 15
        pol: dict[str, Any] = {}
        while time.monotonic() < deadline:
            st = self._status("octopus")
            pols = [p for p in st.get("policies", []) if p.get("id") == POLICY_ID]
            pol = pols[0] if pols else {}
            if pol.get("state") in ("enforced", "not_enforced"):
                break
            await asyncio.sleep(0.5)
        obs.outcome = f"policy state {pol.get('state', 'unknown')}: {pol.get('reason', '')}"[:300]
        obs.evidence.append(f"octopus xApp: {json.dumps(pol, default=str)[:600]}")
        text, _ = self.gnb.srsran_log_tail(max(0, self._log_mark))
        refused = [ln.strip() for ln in text.splitlines() if "refused" in ln][:2]
        obs.evidence += [f"gnb log: {ln}" for ln in refused]
        st = self._status("octopus")
        obs.evidence.append(f"octopus controls: {json.dumps(st.get('controls', {}))[:400]}")
        self.observations.append(obs)
        log.info("observed: %s: %s", obs.name, obs.outcome)

    async def _try_handover(self) -> None:
        """``ho <serving pci> <rnti> <target pci>`` for the first test UE of the first cell."""
        ues = self.gnb.test_ues()
        cells = self.gnb.cells
        if not ues or len(cells) < 2:
            return
        # not the video UE: its DRB is the Octopus scenario's
        ue = next((u for u in ues if u.rnti != self.video_rnti), ues[0])
        target = next(p for p in cells if p != ue.pci)
        offset = self.gnb.srsran_log_path().stat().st_size
        await self.gnb.command(f"ho {ue.pci} {ue.rnti:x} {target}")
        await asyncio.sleep(3.0)
        after, _ = self.gnb.srsran_log_tail(offset)
        console = [ln for ln in self.gnb.console().splitlines() if "andover" in ln][-3:]
        lines = [ln.strip() for ln in after.splitlines() if "andover" in ln or "HO" in ln][:6]
        st = self._status("handover")
        ev = st.get("ho_events", {})
        detected = sum(int(v) for v in ev.values()) if isinstance(ev, dict) else 0
        obs = Observation(
            f"forced handover (ho {ue.pci} {ue.rnti:x} {target})",
            f"{detected} handover events at the handover xApp",
            [*(f"gnb console: {c}" for c in console), *(f"gnb log: {c}" for c in lines),
             f"handover xApp events: {ev}"],
        )  # fmt: skip
        self.observations.append(obs)
        log.info("observed: %s: %s", obs.name, obs.outcome)

    # --- the end --------------------------------------------------------------------------------
    def _summary(self) -> dict[str, Any]:
        assert self.ctx is not None
        occ = self.xapps["occ"].last_status if "occ" in self.xapps else {}
        du: Counter[str] = Counter()
        cucp: Counter[str] = Counter()
        by_instance: Counter[int] = Counter()
        for f in self.gnb.files("gnb-e2ap-du.pcap"):
            du += e2_capture.tally(f)
            by_instance += e2_capture.indications_by_instance(f)
        for f in self.gnb.files("gnb-e2ap-cu-cp.pcap"):
            cucp += e2_capture.tally(f)
        held = self._occ_instances | _du_instances(occ, self.du_meid)
        sent, received, instances, got = occ_delivery(by_instance, occ, held)
        out: dict[str, Any] = {
            "gnb_starts": self.gnb.starts,
            "gnb_du_pdus": dict(du),
            "gnb_cucp_pdus": dict(cucp),
            "du_indications_by_instance": dict(by_instance),
            "occ_indications_by_instance": got,
            "occ_instances": sorted(instances),
            "du_indications_sent": sent,
            "occ_indications_received": received,
            # not measured when OCC's final count could not be read (its last poll is stale)
            "lost": sent - received if self._occ_final_count else None,
            "gnb_metrics_documents": self.metrics.documents if self.metrics else 0,
            # what OCC refused of what arrived (by reason), and reports it continued across a
            # 1-2 ms overlap of the gNB's time stamps (max_time_overlap_ms)
            "occ_rejected": dict(occ.get("rejected_indications", {})),
            "occ_time_overlap_shifted": int(occ.get("counters", {}).get("time_overlap_shifted", 0)),
            "occ_rmr": dict(occ.get("rmr", {})),  # its RMR receive counters: where a loss is
            "e2term": self._e2term,
            "occ_degraded": self._degraded(occ),
            "injector": self.injector.report() if self.injector else None,
        }
        out["abw_vs_gnb"] = abw_vs_gnb(self.series)
        for rnti, role in ue_roles(self.gnb.test_ues(), self.video_rnti).items():
            if rnti in out["abw_vs_gnb"]:
                out["abw_vs_gnb"][rnti].update(role)
        return out

    def _degraded(self, occ: dict[str, Any]) -> dict[str, Any] | None:
        """OCC's degraded mode for the DU (a gNB offering no OCC.* measurements): what its status
        says and how often its log said so (once is right)."""
        nodes = occ.get("degraded_nodes") or {}
        if self.du_meid not in nodes or self.ctx is None:
            return None
        said = _said(self.ctx.run_dir / "xapp-occ.log", "runs in its degraded mode")
        return {"node": self.du_meid, "missing": nodes[self.du_meid], "said": said}

    def _summary_lines(self) -> list[str]:
        lines = [
            f"step {'ok  ' if s.ok else 'FAIL' if s.ok is False else '--  '} {s.name}: {s.detail}"
            for s in self.steps
        ]
        lines += [f"seen {o.name}: {o.outcome}" for o in self.observations]
        f = self.final
        if f:
            lines.append(
                f"E2 indications: gNB sent {f['du_indications_sent']}, OCC received "
                f"{f['occ_indications_received']} "
                + (
                    f"(lost {f['lost']})"
                    if f["lost"] is not None
                    else "(lost not measured: OCC's final count was unreadable)"
                )
                + f"; OCC rejected {sum(f['occ_rejected'].values())} {f['occ_rejected'] or ''}, "
                f"continued {f['occ_time_overlap_shifted']} across a 1-2 ms overlap"
            )
            if f.get("lost"):
                e, r = f.get("e2term") or {}, f.get("occ_rmr") or {}
                lines.append(
                    f"on the way: e2term forwarded {e.get('indications', '?')} indications "
                    f"(send failures {e.get('send_failures', '?')}, gave up "
                    f"{e.get('gave_up', '?')}); OCC's RMR receive ring dropped "
                    f"{r.get('dropped_ring_full', 0)}, its queue shed {r.get('shed_queue_full', 0)}"
                )
            if f.get("occ_degraded"):
                d = f["occ_degraded"]
                lines.append(
                    f"OCC degraded mode for {d['node']} (no {', '.join(d['missing'])}), said "
                    f"{d['said']} time(s) in xapp-occ.log"
                )
            for rnti, c in sorted(f.get("abw_vs_gnb", {}).items()):
                lines.append(
                    f"UE {rnti}{_role_text(c)}: median OCC ABW {c['occ_median_bps'] / 1e6:.2f} "
                    f"Mbit/s (target "
                    f"{c['occ_target_median_bps'] / 1e6:.2f}), gNB DL "
                    f"{c['gnb_median_bps'] / 1e6:.2f} Mbit/s, ABW/gNB {c['ratio']:.3f}"
                )
        return lines


def _said(path: Path, text: str) -> int:
    """How many lines of a log say ``text``."""
    if not path.exists():
        return 0
    with path.open(errors="replace") as f:
        return sum(1 for line in f if text in line)


def occ_delivery(
    du_by_instance: Mapping[int, int], occ_status: dict[str, Any], held: set[int]
) -> tuple[int, int, set[int], dict[int, int]]:
    """(sent, received, instances, received by instance): what the DU sent on the OCC xApp's
    subscriptions and what OCC received. The DU also reports to other xApps' subscriptions, so
    only OCC's instances count: every one it was seen holding (``held``; a gNB restart or a
    resubscription gives it another) and every one it received on (held for less than the
    second between two status polls, it is seen only there). RIC instance ids are unique in a
    RIC, so an instance OCC received on is OCC's."""
    got = {int(i): int(n) for i, n in occ_status.get("indications_by_instance", {}).items()}
    total = int(occ_status.get("counters", {}).get("indications", 0))
    received = sum(got.values()) if got else total  # an xApp without the split: its total
    instances = held | set(got)
    sent = sum(n for i, n in du_by_instance.items() if i in instances)
    return sent, received, instances, got


def _du_instances(occ_status: dict[str, Any], du_meid: str) -> set[int]:
    return {
        int(s["e2_instance_id"]) for s in occ_status.get("subscriptions", [])
        if s.get("meid") == du_meid and s.get("e2_instance_id") is not None
    }  # fmt: skip


DRAIN_WAIT_S = 30.0  # at most this long for the OCC xApp's count to stop growing at the end
# e2term's counters that tell a loss on the way to the xApps (octoric_e2term_<name>)
_E2TERM_KEYS = ("indications", "sent", "send_failures", "waited", "gave_up")


def e2term_counters(metrics_text: str) -> dict[str, float]:
    """The forwarding counters of e2term's Prometheus text (``octoric_e2term_indications`` ...)."""
    out: dict[str, float] = {}
    for line in metrics_text.splitlines():
        if line.startswith("#") or not line.startswith("octoric_e2term_"):
            continue
        name, _, value = line.rpartition(" ")
        base, _, label = name.partition("{")
        key = base.removeprefix("octoric_e2term_").removesuffix("_total")
        if key == "errors" and label:  # errors{kind="decode"} -> errors:decode
            kind = label.split("=", 1)[-1].strip('}"')
            key, keep = f"errors:{kind}", True
        else:
            keep = key in _E2TERM_KEYS and not label
        if keep:
            with contextlib.suppress(ValueError):
                out[key] = float(value)
    return out


def ue_roles(ues: list[ModeUe], video_rnti: int | None) -> dict[str, dict[str, Any]]:
    """Per test UE (``0x4602``): its cell, whether it is alone in it, and whether it is the video
    UE (patch 0016: its DRB carries the injector's video) or backlogged (test mode's endless
    padding). Done-when 1 of #39 asks for a backlogged UE alone in its cell."""
    per_cell = Counter(u.pci for u in ues)
    video_cells = {u.pci for u in ues if u.rnti == video_rnti}
    return {
        f"{u.rnti:#06x}": {
            "pci": u.pci,
            "alone": per_cell[u.pci] == 1,
            "video": u.rnti == video_rnti,
            "with_video": u.rnti != video_rnti and u.pci in video_cells,
        }
        for u in ues
    }


def _role_text(c: dict[str, Any]) -> str:
    if "pci" not in c:
        return ""
    kind = "video" if c["video"] else "backlogged"
    where = "alone" if c["alone"] else "with the video UE" if c["with_video"] else "shared"
    return f" (PCI {c['pci']}, {kind}, {where})"


def abw_vs_gnb(series: list[dict[str, Any]], skip_s: float = 5.0) -> dict[str, dict[str, float]]:
    """Per test UE: the medians over the run (after ``skip_s``) of OCC's available bandwidth
    (``frame_abw_bps``, the ABW its 30500 reports carry), of the target it gives senders
    (``target_bps``, below the ABW by its latency margin) and of the gNB's own DL bitrate, and the
    ABW's ratio to that bitrate."""
    if not series:
        return {}
    t0 = series[0]["t"]
    out: dict[str, dict[str, float]] = {}
    per: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for row in series:
        if row["t"] - t0 < skip_s:
            continue
        for rnti, u in row["ues"].items():
            if u.get("occ_frame_abw_bps") is None or u.get("gnb_dl_brate_bps") is None:
                continue
            abw, target, gnb = per.setdefault(rnti, ([], [], []))
            abw.append(float(u["occ_frame_abw_bps"]))
            target.append(float(u.get("occ_target_bps") or 0.0))
            gnb.append(float(u["gnb_dl_brate_bps"]))
    for rnti, (abw, target, gnb) in per.items():
        ma, mg = statistics.median(abw), statistics.median(gnb)
        out[rnti] = {
            "occ_median_bps": ma,
            "occ_target_median_bps": statistics.median(target),
            "gnb_median_bps": mg,
            "ratio": ma / mg if mg > 0 else float("inf"),
            "samples": float(len(abw)),
        }
    return out


def plot(run_dir: Path) -> Path | None:
    """``testbed.png``: each test UE's OCC target beside the gNB's DL bitrate, over the run."""
    path = run_dir / "testbed.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    series = data.get("series") or []
    if not series:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rntis = sorted({r for row in series for r in row["ues"]})
    fig, axes = plt.subplots(len(rntis), 1, figsize=(9, 2.2 * len(rntis)), sharex=True,
                             squeeze=False)  # fmt: skip
    t0 = series[0]["t"]
    for ax, rnti in zip(axes[:, 0], rntis, strict=True):
        t = [row["t"] - t0 for row in series if rnti in row["ues"]]
        for field_, label, style in (
            ("gnb_dl_brate_bps", "gNB DL bitrate (srsRAN metrics)", "-"),
            ("occ_frame_abw_bps", "OCC ABW (30500)", "--"),
            ("occ_target_bps", "OCC sender target", ":"),
        ):
            v = [row["ues"][rnti].get(field_) for row in series if rnti in row["ues"]]
            ax.plot(t, [x / 1e6 if x is not None else float("nan") for x in v], style,
                    label=label)  # fmt: skip
        pci = next((row["ues"][rnti].get("pci") for row in series if rnti in row["ues"]), None)
        ax.set_ylabel("Mbit/s")
        ax.set_title(f"test UE {rnti} (cell PCI {pci})", fontsize=9, loc="left")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="lower right")
    axes[-1, 0].set_xlabel("seconds into the run")
    fig.tight_layout()
    out = run_dir / "testbed.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
