"""liboctopus against the simulator's dropper: one recorded enqueue/dequeue trace, the same
drop decisions (issue #13, done-when 2).

The trace comes from the simulator's own DL queue (``sim/rlc.py``) serving a mix of streams as
the SEC'23 case studies send them — temporal SVC (every frame a dropper message at its own
priority), spatial SVC layers with bitrate thresholds, single-packet messages, packets without
a header — over a link whose rate wanders and pauses, so both drop rules fire. Every call the
queue makes into the dropper is written down; ``octopus_replay`` replays it through liboctopus.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from octoric import liboctopus
from octoric.contracts.octopus_header import OctopusHeader
from octoric.sim.dropper import DropperConfig, OctopusDropper
from octoric.sim.packets import Packet
from octoric.sim.rlc import DlQueue

SLOT_US = 500


def _flags(h: OctopusHeader) -> int:
    return (0x80 if h.first else 0) | (0x40 if h.last else 0) | (0x20 if h.drop else 0)


def _fields(t: int, h: OctopusHeader, size: int) -> str:
    return (
        f"{t} {h.stream_id} {h.msg_id} {_flags(h)} {h.priority} {h.priority_threshold} "
        f"{h.bitrate_threshold_kbps} {size}"
    )


class RecordingDropper(OctopusDropper):
    """The simulator's dropper, writing each call (and its decision) as it happens."""

    def __init__(self, slot_us: int, cfg: DropperConfig) -> None:
        super().__init__(slot_us, cfg)
        self.decision_log = []
        c = self.cfg
        self.lines = [
            f"C {slot_us} {c.window_ms!r} {int(c.drop_by_msg)} {int(c.drop_by_bitrate)} {c.levels}"
        ]
        self.decisions: list[tuple[int, int, int, int, str, str]] = []

    def on_enqueue(self, pkt: Packet, now_us: int) -> None:
        if pkt.hdr is not None:
            self.lines.append("E " + _fields(now_us, pkt.hdr, pkt.size))
        super().on_enqueue(pkt, now_us)

    def should_drop(self, pkt: Packet, now_us: int) -> bool:
        h = pkt.hdr
        if h is None:
            return super().should_drop(pkt, now_us)
        self.lines.append("H " + _fields(now_us, h, pkt.size))
        assert self.decision_log is not None
        n = len(self.decision_log)
        dropped = super().should_drop(pkt, now_us)
        if len(self.decision_log) > n:
            _, _, _, _, share, cause = self.decision_log[-1]
            c, s = str(cause), repr(float(share))
        else:
            c = s = "-"
        self.decisions.append((now_us, h.stream_id, h.msg_id, int(dropped), c, s))
        return dropped

    def on_slot(self, served_bytes: int, busy: bool) -> None:
        self.lines.append(f"S {served_bytes} {int(busy)}")
        super().on_slot(served_bytes, busy)


class Sender:
    """One stream's messages, cut into packets of at most 1200 bytes."""

    def __init__(self, rng: random.Random, sid: int, kind: str) -> None:
        self.rng, self.sid, self.kind = rng, sid, kind
        self.msg_id = rng.randrange(0, 2**32)  # ids wrap somewhere in the run
        self.frame = 0

    def frame_packets(self) -> list[tuple[OctopusHeader | None, int]]:
        r, out = self.rng, []
        self.frame += 1
        if self.kind == "temporal":  # three temporal layers, each frame a dropper (§6.1)
            prio = (0, 2, 1, 2)[self.frame % 4]
            out += self._message(r.randint(1500, 9000 if prio == 0 else 4000), prio, True, prio, 0)
        elif self.kind == "spatial":  # quality layers with cumulative bitrates (§6.2)
            for layer, kbps in enumerate((500, 1500, 4000)):
                out += self._message(r.randint(600, 3000), layer, False, 0, kbps)
        elif self.kind == "layers":  # volumetric layers, dropper per frame and rate (§6.3)
            for layer in range(r.randint(2, 5)):
                out += self._message(r.randint(300, 2500), layer, layer == 0, 1, 1500 * layer)
        else:  # no header: the queue forwards it, the dropper never sees it
            out += [(None, r.randint(100, 1200)) for _ in range(r.randint(1, 3))]
        return out

    def _message(
        self, size: int, prio: int, drop: bool, thr: int, kbps: int
    ) -> list[tuple[OctopusHeader | None, int]]:
        self.msg_id = (self.msg_id + 1) & 0xFFFFFFFF
        n = -(-size // 1200)
        pkts: list[tuple[OctopusHeader | None, int]] = []
        for i in range(n):
            h = OctopusHeader(self.sid, self.msg_id, i == 0, i == n - 1, prio, drop, thr, kbps)
            pkts.append((h, min(1200, size - 1200 * i) + 16))
        return pkts


def record_trace(seed: int, min_packets: int, cfg: DropperConfig) -> RecordingDropper:
    rng = random.Random(seed)
    dropper = RecordingDropper(SLOT_US, cfg)
    q = DlQueue(limit_bytes=375_000, dropper=dropper)  # Octopus's 375 KB gNB queue
    senders = [
        Sender(rng, 1, "temporal"), Sender(rng, 2, "spatial"), Sender(rng, 3, "layers"),
        Sender(rng, 4, "temporal"), Sender(rng, 5, "plain"),
    ]  # fmt: skip
    periods = [66, 66, 40, 33, 20]  # slots between frames per sender
    rate = 1500  # bytes per slot, wandering (3.2-72 Mbit/s), with blockages
    t, slot, headed, outage = 0, 0, 0, 0
    while headed < min_packets:
        for s, period in zip(senders, periods, strict=True):
            if (slot + s.sid * 7) % period == 0:
                for h, size in s.frame_packets():
                    pkt = Packet(s.sid, 0, size, t, hdr=h)
                    q.enqueue(pkt, t)
                    headed += h is not None
        rate = min(4500, max(200, rate + rng.randint(-150, 150)))
        if outage == 0 and rng.random() < 0.004:
            outage = rng.randint(20, 120)  # a blockage: the queue builds up (10-60 ms)
        budget = 0 if outage else rate
        outage = max(0, outage - 1)
        q.dequeue(budget, t)
        q.delivered.clear(), q.dropped.clear(), q.tail_dropped.clear()
        slot += 1
        t += SLOT_US
    return dropper


def replay(trace: list[str], tmp: Path) -> list[tuple[int, int, int, int, str, str]]:
    exe = liboctopus.tool("octopus_replay")
    path = tmp / "trace.txt"
    path.write_text("\n".join(trace) + "\n")
    with path.open() as f:
        out = subprocess.run([str(exe)], stdin=f, capture_output=True, text=True, check=True)
    rows = []
    for line in out.stdout.splitlines():
        t, sid, mid, dropped, cause, share = line.split()
        if share != "-":
            share = repr(float(share))
        rows.append((int(t), int(sid), int(mid), int(dropped), cause, share))
    return rows


@pytest.fixture(scope="module")
def built() -> Path:
    try:
        return liboctopus.build()
    except liboctopus.BuildError as e:
        pytest.fail(str(e))


@pytest.mark.parametrize(
    "cfg",
    [
        DropperConfig(),
        DropperConfig(window_ms=20.0, levels=2),
        DropperConfig(drop_by_bitrate=False),
    ],
    ids=["default", "short-window-2-levels", "message-only"],
)
def test_liboctopus_decides_as_the_simulator(
    built: Path, tmp_path: Path, cfg: DropperConfig
) -> None:
    py = record_trace(seed=13, min_packets=100_000, cfg=cfg)
    enq = sum(1 for x in py.lines if x[0] == "E")
    assert enq >= 100_000
    st = py.stats
    # the trace exercises both rules (otherwise agreement would say little)
    assert st.dropped_msgs_by_msg > 100
    if cfg.drop_by_bitrate:
        assert st.dropped_msgs_by_bitrate > 100
    cpp = replay(py.lines, tmp_path)
    assert len(cpp) == len(py.decisions)
    mismatches = [
        (i, a, b) for i, (a, b) in enumerate(zip(py.decisions, cpp, strict=True)) if a != b
    ]
    assert not mismatches, f"{len(mismatches)} decisions differ; first: {mismatches[:3]}"


def test_replay_rejects_a_bad_trace(built: Path, tmp_path: Path) -> None:
    exe = liboctopus.tool("octopus_replay")
    r = subprocess.run([str(exe)], input="E 1 2 3\n", capture_output=True, text=True)
    assert r.returncode == 2 and "before the C line" in r.stderr
    r = subprocess.run([str(exe)], input="C 500 50 1 1 8\nX\n", capture_output=True, text=True)
    assert r.returncode == 2 and "unknown operation" in r.stderr
