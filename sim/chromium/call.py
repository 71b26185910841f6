"""One real Chromium WebRTC call across a live run's emulated cell (root, namespaces).

The sender Chromium runs in the server namespace with a fake camera fed from a Y4M clip, the
receiver Chromium in the first real UE's namespace; both load their page from the page
server (``pageserver.py``, in the server namespace: the receiver's page, signalling and stats
cross the cell too). Arms:

- ``chromium-gcc``: libwebrtc untouched (its GCC, default field trials);
- ``chromium-occ``: the sender page applies the OCC xApp's rate for the flow with
  ``RTCRtpSender.setParameters`` (``encodings[0].maxBitrate``) through ``examples/occ-rate.js``,
  fed from the feedback the cell relays into the server namespace.

Every process the call starts (two browsers, the page server, two packet sniffers) leads a
session of its own and gets SIGKILL if this process dies (``lifeline.die_with_parent``); the
call ends each session's processes when it returns, however it returns, and checks that no
process of it is left. The run folder then holds the pages' getStats() series, the OCC
feedback, each downlink packet's one-way latency across the cell and ``call.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from octoric.contracts import ports
from octoric.lifeline import die_with_parent
from octoric.sim.live import LiveSim
from octoric.sim.realue.netns import DEVICE, SERVER_ADDR

CHROMIUM = "/usr/bin/chromium"
ARMS = ("chromium-gcc", "chromium-occ")
PAGE_PORT = ports.CHROMIUM_PAGES
MIN_BPS = 30_000  # the OCC cap's floor: libwebrtc's own minimum send bitrate (30 kbit/s)
# the clip: Debian's opencv-doc Megamind.avi (real motion), 640x360 at 25 fps, 8 s, looped
# by Chromium's file capture; this size and rate encode (VP8) without CPU limitation here
CLIP_SOURCE = Path("/usr/share/doc/opencv-doc/examples/data/Megamind.avi")
WIDTH, HEIGHT, FPS = 640, 360, 25
CLIP_CACHE = Path(os.environ.get("OCTORIC_CLIP_DIR", Path.home() / ".cache" / "octoric"))


class ChromiumUnavailable(RuntimeError):
    """What a Chromium call needs is missing (Chromium, ffmpeg or the clip's source)."""


def unavailable_reason() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"no {CHROMIUM} (`make browser` installs Debian's chromium)"
    if shutil.which("ffmpeg") is None or not CLIP_SOURCE.is_file():
        return "the clip needs ffmpeg and opencv-doc (`make webrtc-clip` installs them)"
    return None


def ensure_clip(width: int = WIDTH, height: int = HEIGHT, fps: int = FPS) -> Path:
    """The Y4M the fake camera plays (made once from the opencv-doc clip, then cached)."""
    out = CLIP_CACHE / f"megamind-{width}x{height}-{fps}.y4m"
    if out.is_file():
        return out
    why = unavailable_reason()
    if why is not None:
        raise ChromiumUnavailable(why)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp.y4m")  # two first uses at once: one wins
    vf = f"scale={width}:-2,crop={width}:{height},fps={fps}"
    r = subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(CLIP_SOURCE), "-t", "8",
                        "-vf", vf, "-pix_fmt", "yuv420p", str(tmp)],
                       capture_output=True, text=True, check=False)  # fmt: skip
    if r.returncode != 0:
        raise ChromiumUnavailable(f"ffmpeg could not make the clip: {r.stderr.strip()}")
    tmp.replace(out)
    return out


def chromium_argv(profile: Path, origin: str, url: str, clip: Path | None,
                  event_log: Path | None = None) -> list[str]:  # fmt: skip
    """Headless Chromium for one page (docs/emulated-cell.md, "A Chromium call": why each).
    ``event_log``: a folder for libwebrtc's RTC event log of each peer connection (its
    bandwidth estimates, probes and every RTP/RTCP header: ``sim/chromium/event_log.py``)."""
    argv = [
        CHROMIUM, "--headless=new", "--no-sandbox", "--no-first-run",
        "--no-default-browser-check", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows",
        "--autoplay-policy=no-user-gesture-required",
        # plain http on 10.77.0.1 is not a secure context: no navigator.mediaDevices without it
        f"--unsafely-treat-insecure-origin-as-secure={origin}",
        # host candidates as addresses, not mDNS names nobody here resolves
        "--disable-features=WebRtcHideLocalIpsWithMdns",
        f"--user-data-dir={profile}",
    ]  # fmt: skip
    if clip is not None:
        argv += ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                 f"--use-file-for-fake-video-capture={clip}"]  # fmt: skip
    if event_log is not None:
        event_log.mkdir(parents=True, exist_ok=True)
        argv.append(f"--webrtc-event-logging={event_log}")
    return [*argv, url]


@dataclass
class _Child:
    name: str
    proc: asyncio.subprocess.Process
    log: Any


class CallProcesses:
    """The call's processes, each in a session of its own, all ended by ``close``."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.children: list[_Child] = []

    async def start(self, name: str, netns: str, argv: list[str],
                    stdout_pipe: bool = False) -> asyncio.subprocess.Process:  # fmt: skip
        log = (self.out / f"{name}.log").open("wb")
        proc = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", netns, *argv,
            stdout=asyncio.subprocess.PIPE if stdout_pipe else log, stderr=log,
            stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
            preexec_fn=die_with_parent(),
        )  # fmt: skip
        self.children.append(_Child(name, proc, log))
        return proc

    def running(self) -> list[int]:
        """Pids still alive in the call's sessions (a browser's helpers included)."""
        sids = {c.proc.pid for c in self.children}
        alive = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) in sids and fields[0] != "Z":  # field 6 of stat: the session
                alive.append(int(d.name))
        return alive

    async def stop(self, name: str, timeout: float = 5.0) -> None:
        for c in self.children:
            if c.name == name:
                await self._end(c, timeout)

    async def _end(self, c: _Child, timeout: float) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(c.proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(c.proc.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(c.proc.pid, signal.SIGKILL)
            await c.proc.wait()
        c.log.close()

    async def close(self) -> list[int]:
        """End every process of the call; returns those still alive afterwards (none)."""
        for c in reversed(self.children):
            await self._end(c, 5.0)
        deadline = time.monotonic() + 5.0
        left = self.running()
        while left and time.monotonic() < deadline:
            for pid in left:  # a helper left behind in one of the call's sessions
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.1)
            left = self.running()
        return left


def _default_route(netns: str) -> None:
    # a page that never asks for the camera (the receiver) gathers host candidates only in a
    # namespace with a default route; on the TUN it changes nothing else (on-link /16)
    subprocess.run(["ip", "-n", netns, "route", "replace", "default", "dev", DEVICE],
                   capture_output=True, check=False)  # fmt: skip


async def _wait_file(path: Path, timeout: float, procs: list[asyncio.subprocess.Process]) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline or any(p.returncode is not None for p in procs):
            return False
        await asyncio.sleep(0.2)
    return True


async def run_call(server_ns: str, ue_ns: str, arm: str, seconds: float, out: Path,
                   feedback_port: int = 9100,
                   sender_page: str = "sender.html",
                   event_log: bool = False) -> dict[str, Any]:  # fmt: skip
    """One call of ``seconds`` between the server namespace and a real UE's (of a live run
    already up); its files go to ``out``; returns ``summarize``'s figures and how it ended.
    ``sender_page``: another page the page server serves (``occ-rate-example.html``, which
    records nothing: the call then ends when the receiver's does). ``event_log``: the
    sender's libwebrtc event log into ``out/event-log/``."""
    if arm not in ARMS:
        raise ValueError(f"arm {arm!r}: one of {', '.join(ARMS)}")
    stale = [f.name for f in (out / "call.json", out / "done-sender", out / "done-receiver")
             if f.exists()]  # fmt: skip
    if stale:  # its done-* markers would end this call at once, its files would be overwritten
        raise FileExistsError(f"{out} holds a call already ({', '.join(stale)}): give an empty "
                              "folder")  # fmt: skip
    clip = ensure_clip()
    out.mkdir(parents=True, exist_ok=True)
    for n in (server_ns, ue_ns):
        _default_route(n)
    origin = f"http://{SERVER_ADDR}:{PAGE_PORT}"
    q = (f"seconds={seconds:g}&arm={arm.removeprefix('chromium-')}"
         f"&width={WIDTH}&height={HEIGHT}&fps={FPS}&min_bps={MIN_BPS}")  # fmt: skip
    procs = CallProcesses(out)
    t0 = time.time()
    ok = False
    try:
        ps = await procs.start("pageserver", server_ns, [
            sys.executable, "-m", "octoric.sim.chromium.pageserver", "--out", str(out),
            "--port", str(PAGE_PORT), "--feedback-port", str(feedback_port)])  # fmt: skip
        if not await _wait_file(out / "pageserver-ready", 20, [ps]):
            why = (out / "pageserver.log").read_text()
            raise RuntimeError(f"the page server did not start: {why}")
        for name, n in (("sniff-server", server_ns), ("sniff-ue", ue_ns)):
            argv = [sys.executable, "-m", "octoric.sim.chromium.sniff",
                    "--out", str(out / f"{name}.txt")]  # fmt: skip
            p = await procs.start(name, n, argv, stdout_pipe=True)
            assert p.stdout is not None
            await asyncio.wait_for(p.stdout.readline(), 10)
        rcv = await procs.start("chromium-receiver", ue_ns, chromium_argv(
            out / "profile-receiver", origin, f"{origin}/receiver.html?{q}", None))  # fmt: skip
        snd = await procs.start("chromium-sender", server_ns, chromium_argv(
            out / "profile-sender", origin, f"{origin}/{sender_page}?{q}", clip,
            out / "event-log" if event_log else None))  # fmt: skip
        budget = seconds + 40.0  # start-up on a loaded 2-core machine, then the call
        if sender_page == "sender.html":
            ok = await _wait_file(out / "done-sender", budget, [ps, snd, rcv])
            ok = ok and await _wait_file(out / "done-receiver", 10.0, [ps, snd, rcv])
        else:
            ok = await _wait_file(out / "done-receiver", budget, [ps, snd, rcv])
        await asyncio.sleep(0.5)  # the last packets through the cell before the sniffers stop
    finally:
        left = await procs.close()
        for role in ("sender", "receiver"):  # the browsers' profiles: caches, nothing to read
            shutil.rmtree(out / f"profile-{role}", ignore_errors=True)
    res = summarize(out, arm)
    res.update({
        "completed": ok, "processes_left": left, "wall_s": round(time.time() - t0, 1),
        "settings": {"width": WIDTH, "height": HEIGHT, "fps": FPS, "clip": clip.name,
                     "seconds": seconds, "min_bps": MIN_BPS},
    })  # fmt: skip
    (out / "call.json").write_text(json.dumps(res, indent=1))
    return res


async def chromium_call(sim: LiveSim, arm: str, seconds: float, out: Path,
                        feedback_port: int = 9100, ue: int = 0,
                        event_log: bool = False) -> dict[str, Any]:  # fmt: skip
    """``run_call`` on ``sim``'s real UE ``ue``, with what the cell counted during the call."""
    assert sim.real is not None
    st0 = sim.real.status()
    res = await run_call(sim.real.ns.server_ns, sim.real.ns.ue_ns[ue], arm, seconds, out,
                         feedback_port, event_log=event_log)  # fmt: skip
    st1 = sim.real.status()
    u0, u1 = st0["ues"][ue], st1["ues"][ue]
    res["cell"] = {
        # the same packets' latency as the simulated cell sees it (wired delay + cell): the
        # like-for-like figure beside a model flow's; the sniffed one adds the live path's cost
        "latency_ms": sim.real.cell_latency_ms(ue, u0["cell_packets"]),
        "delivered_bytes": u1["delivered_bytes"] - u0["delivered_bytes"],
        "tail_dropped_packets": u1["tail_dropped_packets"] - u0["tail_dropped_packets"],
        "feedback_relayed": st1["feedback_relayed"] - st0["feedback_relayed"],
        "scheduling_error_us": st1["scheduling_error_us"],
    }
    (out / "call.json").write_text(json.dumps(res, indent=1))
    return res


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def packet_latency(out: Path) -> list[tuple[float, float, int]]:
    """Each downlink packet's (send time ms since the epoch, one-way latency ms, bytes) from the
    two sniffers' records; a packet the UE never got is left out (counted in ``summarize``)."""
    sent: dict[tuple[int, int], int] = {}
    srv, ue = out / "sniff-server.txt", out / "sniff-ue.txt"
    if not srv.is_file() or not ue.is_file():
        return []
    for line in srv.read_text().splitlines():
        f = line.split()
        if len(f) == 4 and f[3].startswith("10.77.1."):
            sent.setdefault((int(f[1]), int(f[2])), int(f[0]))
    lat = []
    for line in ue.read_text().splitlines():
        f = line.split()
        if len(f) == 4 and f[3].startswith("10.77.1."):
            t_sent = sent.pop((int(f[1]), int(f[2])), None)
            if t_sent is not None:
                lat.append((t_sent / 1e6, (int(f[0]) - t_sent) / 1e6, int(f[2])))
    lat.sort()
    return lat


def _pct(xs: list[float] | np.ndarray) -> dict[str, float] | None:
    if len(xs) == 0:
        return None
    p = np.percentile(np.asarray(xs, dtype=float), [50, 95, 99])
    return {
        "p50": round(float(p[0]), 2),
        "p95": round(float(p[1]), 2),
        "p99": round(float(p[2]), 2),
    }


def follows_occ(sender: list[dict[str, Any]], feedback: list[dict[str, Any]],
                lag_ms: float = 300.0, lo: int = MIN_BPS) -> tuple[int, int]:  # fmt: skip
    """Of the sender's samples after the first OCC target: how many had the page's maxBitrate
    equal to OCC's latest target (clamped to the encoder's floor; null under fallback), now
    or ``lag_ms`` earlier (the SSE hop and setParameters take a moment), and how many there
    were."""
    fb = [(f["t"], None if f.get("fallback") else round(max(f["target_bps"], lo)))
          for f in feedback if "t" in f and (f.get("fallback") or "target_bps" in f)]  # fmt: skip
    first = next((t for t, v in fb if v is not None), None)
    if first is None:
        return 0, 0
    times = np.array([t for t, _ in fb])

    def latest(t: float) -> int | None:
        i = int(np.searchsorted(times, t, side="right")) - 1
        return fb[i][1] if i >= 0 else None

    follows = total = 0
    for s in sender:
        if s["t"] <= first + lag_ms:
            continue
        total += 1
        follows += s.get("maxBitrate") in (latest(s["t"]), latest(s["t"] - lag_ms))
    return follows, total


def summarize(out: Path, arm: str) -> dict[str, Any]:
    """The call's figures from its run folder."""
    snd = read_jsonl(out / "sender-stats.jsonl")
    rcv = read_jsonl(out / "receiver-stats.jsonl")
    fb = read_jsonl(out / "occ-feedback.jsonl")
    ob = [s["outbound-rtp"] for s in snd if "outbound-rtp" in s]
    ib = [s["inbound-rtp"] for s in rcv if "inbound-rtp" in s]
    reasons = [o.get("qualityLimitationReason", "none") for o in ob]
    lat = packet_latency(out)
    srv_lines = (
        (out / "sniff-server.txt").read_text().splitlines()
        if (out / "sniff-server.txt").is_file()
        else []
    )
    n_sent = sum(1 for line in srv_lines if line.split()[-1].startswith("10.77.1."))
    res: dict[str, Any] = {
        "arm": arm,
        "sender_samples": len(snd), "receiver_samples": len(rcv),
        "frames_encoded": ob[-1].get("framesEncoded") if ob else None,
        "frames_sent": ob[-1].get("framesSent") if ob else None,
        "frames_decoded": ib[-1].get("framesDecoded") if ib else None,
        "freeze_count": ib[-1].get("freezeCount") if ib else None,
        "freezes_s": ib[-1].get("totalFreezesDuration") if ib else None,
        "encoder": ob[-1].get("encoderImplementation") if ob else None,
        "resolution": f"{ob[-1].get('frameWidth')}x{ob[-1].get('frameHeight')}" if ob else None,
        "quality_limitation": {r: reasons.count(r) / len(reasons) for r in set(reasons)},
        "target_kbps": _pct([o["targetBitrate"] / 1000 for o in ob if "targetBitrate" in o]),
        "available_kbps": _pct([s["candidate-pair"]["availableOutgoingBitrate"] / 1000 for s in snd
                                if "availableOutgoingBitrate" in s.get("candidate-pair", {})]),
        "rtt_ms": _pct([s["candidate-pair"]["currentRoundTripTime"] * 1000 for s in snd
                        if "currentRoundTripTime" in s.get("candidate-pair", {})]),
        "packets_sent": n_sent, "packets_received": len(lat),
        "network_latency_ms": _pct([x[1] for x in lat]),
        "feedback": len(fb),
    }  # fmt: skip
    if len(ib) >= 2 and len(rcv) >= 2:
        dt = (rcv[-1]["t"] - rcv[0]["t"]) / 1000.0
        db = ib[-1].get("bytesReceived", 0) - ib[0].get("bytesReceived", 0)
        res["received_kbps"] = round(db * 8 / dt / 1000, 1) if dt > 0 else None
    if arm == "chromium-occ":
        f, n = follows_occ(snd, fb)
        res["occ_follow"] = {"follows": f, "samples": n}
        # did libwebrtc obey the cap: its encoder target at or below maxBitrate
        capped = [
            (o["targetBitrate"], s["maxBitrate"])
            for s in snd
            if s.get("maxBitrate") and "targetBitrate" in (o := s.get("outbound-rtp", {}))
        ]
        res["target_within_cap"] = (
            round(sum(t <= m for t, m in capped) / len(capped), 3) if capped else None
        )
    return res


def main(argv: list[str] | None = None) -> int:
    """``python -m octoric.sim.chromium.call``: one call against a run that is up."""
    import argparse

    ap = argparse.ArgumentParser(
        description="One Chromium WebRTC call across a running emulated cell (root)."
    )
    ap.add_argument(
        "--status",
        type=Path,
        help="the run's sim-status.json (`octoric run --set sim.real_ues=1`): "
        "the namespaces are read from its live.real_ue",
    )
    ap.add_argument("--server-ns", help="the server namespace (instead of --status)")
    ap.add_argument("--ue-ns", help="the UE's namespace (instead of --status)")
    ap.add_argument("--ue", type=int, default=0, help="which real UE of --status (0: the first)")
    ap.add_argument("--arm", choices=ARMS, default="chromium-occ")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--feedback-port", type=int, default=9100)
    ap.add_argument("--out", type=Path, required=True, help="the call's folder")
    ap.add_argument(
        "--sender-page",
        default="sender.html",
        help="the sender's page (occ-rate-example.html: docs/occ.md's example)",
    )
    ap.add_argument(
        "--event-log",
        action="store_true",
        help="keep the sender's libwebrtc RTC event log in OUT/event-log/",
    )
    a = ap.parse_args(argv)
    server_ns, ue_ns = a.server_ns, a.ue_ns
    if a.status is not None:
        st = json.loads(a.status.read_text())
        real = st.get("live", st)["real_ue"]  # the live status file, or a run's summary
        server_ns, ue_ns = real["server"]["netns"], real["ues"][a.ue]["netns"]
    if not server_ns or not ue_ns:
        ap.error("give --status, or --server-ns and --ue-ns")
    res = asyncio.run(
        run_call(
            server_ns, ue_ns, a.arm, a.seconds, a.out, a.feedback_port, a.sender_page, a.event_log
        )
    )
    print(json.dumps(res, indent=1))
    return 0 if res["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
