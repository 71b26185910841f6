"""Issue #44 point 2: the OCC xApp's native hot path (``xapps/occ/native``) decides as the
Python path does.

- the native engine equals ``OccEngine`` bit for bit on the random streams the compiled engine
  is held to (``test_equivalence``), and their checkpoints read in each other;
- the native datagrams are ``contracts.feedback``'s bytes, its 30500 report ``messages``' bytes;
- on recorded runs (a synthetic cell's indications with noValue granules, DU-keyed UEs, clock
  overlaps, gaps and malformed ones mixed in; two indications a real srsRAN gNB sent) an xApp
  whose indications go first to the native path (as RMR's tap hands them) ends every
  indication with the same estimates, the same records and the same feedback datagrams as an
  xApp on the Python path alone.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import numpy as np
import pytest
from ricsdl.syncstorage import SyncStorage

from octoric.contracts.feedback import encode_json_feedback, encode_remb_feedback
from octoric.e2sm import e2ap, kpm
from octoric.e2sm.common import ntp_timestamp
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.redis_server import free_port
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import RmrMessage
from octoric.xapps.occ import OccConfig, OccEngine, messages, native
from octoric.xapps.occ import metrics as M
from octoric.xapps.occ.feedback import FeedbackSender
from octoric.xapps.occ.flows import Flow
from octoric.xapps.occ.synthetic import SyntheticCell
from octoric.xapps.occ.xapp import OccXapp

from .kpm_source import NAMES, encode_period
from .test_equivalence import CONFIGS, EXACT_FIELDS, FLOAT_FIELDS, random_metrics

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not native.available(), reason="libocto_occ.so not built (make setup)"),
]
VECTORS = Path(__file__).resolve().parents[2] / "e2sm" / "vectors" / "srsran-live"


def _same(a: object, b: object, where: str) -> None:
    for f in FLOAT_FIELDS + EXACT_FIELDS:
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        assert np.array_equal(x, y, equal_nan=True), f"{f} differs at {where}"
    assert a.t_ms == b.t_ms, where


@pytest.mark.parametrize("cfg_index", range(len(CONFIGS)))
@pytest.mark.parametrize("seed", [1, 2])
def test_native_engine_equals_occ_engine_bit_for_bit(cfg_index: int, seed: int) -> None:
    cfg = CONFIGS[cfg_index]
    rng = np.random.default_rng(seed * 100 + cfg_index)
    py = OccEngine(cfg, capacity=2)
    nat = native.NativeEngine(native.NativeOcc(cfg))
    t = 0
    for k in range(300):
        n = int(rng.integers(1, 15))
        g = int(rng.choice([1, 2, 5, 10, 13]))
        ids = rng.choice(40, n, replace=False).astype(np.int64)
        if rng.random() < 0.3:
            ids = np.arange(int(rng.integers(1, 12)), dtype=np.int64)
        t += int(rng.choice([1, 1, 1, 2, 15, 60, 400]))
        for _ in range(int(rng.poisson(0.3))):
            ue, start = int(rng.integers(40)), bool(rng.random() < 0.5)
            py.on_handover(ue, start, t)
            nat.on_handover(ue, start, t)
        m = random_metrics(rng, ids, t, g)
        _same(py.ingest(ids, t, m), nat.ingest(ids, t, m), f"batch {k}")
        assert py.ue_ids == nat.ue_ids
        t += g - 1
        last_ids = ids
    assert py.stats == nat.stats
    for ue in range(40):
        a, b = py.latest(ue), nat.latest(ue)
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert a[1] == b[1] and np.array_equal(a[0], b[0], equal_nan=True)
    # a batch at or before a UE's latest sample is refused whole, by both, changing nothing
    m = random_metrics(rng, last_ids, t, 1)
    for e in (py, nat):
        with pytest.raises(Exception, match="not after the latest sample"):
            e.ingest(last_ids, t, m)
    assert py.stats == nat.stats


def test_checkpoints_read_in_each_other() -> None:
    cfg = OccConfig(window_l_ms=40)
    rng = np.random.default_rng(3)
    py, nat = OccEngine(cfg), native.NativeEngine(native.NativeOcc(cfg))
    ids = np.arange(6, dtype=np.int64)
    for k in range(50):
        m = random_metrics(rng, ids, 10 * k, 10)
        py.ingest(ids, 10 * k, m)
        nat.ingest(ids, 10 * k, m)
    # native -> Python and Python -> native, then both go on with the same input
    py2, nat2 = OccEngine(cfg), native.NativeEngine(native.NativeOcc(cfg))
    ues, states = nat.export_states()
    for i, u in enumerate(ues):
        py2.import_ue(u, {k: v[i] for k, v in states.items()})
    ues, states = py.export_states()
    for i, u in enumerate(ues):
        nat2.import_ue(u, {k: v[i] for k, v in states.items()})
    for k in range(50, 80):
        m = random_metrics(rng, ids, 10 * k, 10)
        a = py.ingest(ids, 10 * k, m)
        _same(a, py2.ingest(ids, 10 * k, m), f"py2 {k}")
        _same(a, nat2.ingest(ids, 10 * k, m), f"nat2 {k}")
    with pytest.raises(Exception, match="missing or misshaped"):
        nat2.import_ue(99, {"ist": np.zeros(3)})


def _receiver() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(0.5)
    return s


def _drain(s: socket.socket) -> list[bytes]:
    out = []
    s.settimeout(0.05)
    try:
        while True:
            out.append(s.recv(2048))
    except TimeoutError:
        return out


def test_datagrams_are_the_contract_bytes() -> None:
    """JSON (the time stamp read back from the datagram) and REMB + OCCF, for rates across
    the REMB exponent range, halves (Python's round: to even) and both fallback flags."""
    occ = native.NativeOcc(OccConfig())
    fb = native.NativeFeedback(occ, min_change=0.0, max_interval_s=600.0)
    rx = _receiver()
    port = rx.getsockname()[1]
    fb.add(Flow("j", 7, "127.0.0.1", port, "json"))
    fb.add(Flow("r", 8, "127.0.0.1", port, "remb", ssrcs=(1, 0xFFFFFFFF), sender_ssrc=0xABC))
    rates = [0.0, 0.5, 1.5, 2.5, 1e3 + 0.5, 262_143.0, 262_144.0, 2.1e6, 4.56789e9, 3.3e12,
             1.8e19, 5e30]  # fmt: skip
    for i, bps in enumerate(rates):
        flag = bool(i % 2)
        for ue in (7, 8):
            fb.update(ue, native.UeTarget(bps, flag, None, 1000 + i))
        got = _drain(rx)
        assert len(got) == 2, (bps, got)
        js = next(d for d in got if d.startswith(b"{"))
        rb = next(d for d in got if not d.startswith(b"{"))
        ts = json.loads(js)["ts"]
        assert js == encode_json_feedback(7, bps, flag, ts, 1000 + i), (bps, js)
        assert rb == encode_remb_feedback(0xABC, bps, flag, (1, 0xFFFFFFFF)), bps
    assert fb.counters["sent_json"] == len(rates) and fb.counters["sent_remb"] == len(rates)


class _Sub:
    request_id = RicRequestId(123, 5)


def _pdu(msg: bytes, t_ms: int, sn: int, rfid: int = kpm.RAN_FUNCTION_ID) -> bytes:
    hdr = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(t_ms / 1000.0)))
    return e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 5), rfid, 1, hdr, msg, sn=sn))


def recorded_run(seed: int) -> list[tuple[str, bytes]]:
    """(meid, PDU) of two nodes over ~2 s: 10 ms reports of a synthetic cell (video frames,
    outages), with noValue granules, a node naming its UEs by F1AP ID, reports 1-2 ms early
    (a node's clock rounding), gaps, a late report, and malformed ones."""
    rng = np.random.default_rng(seed)
    out: list[tuple[str, bytes]] = []
    base = int(time.time() * 1000) - 60_000
    for node, (meid, ues, kind) in enumerate(
        (("gnb_a", [101, 102, 103, 104], "gNB-UEID"), ("gnb_du", [7, 8, 9], "gNB-DU-UEID"))
    ):
        n = len(ues)
        cell = SyntheticCell(n, prb_total=51.0)
        bits = np.array([600.0 + 80 * i for i in range(n)])
        t = base + 10 * node
        for p in range(200):
            recs = []
            for j in range(10):
                arrived = np.where((t + j + 7 * np.arange(n)) % 40 == 0, 30_000.0, 0.0)
                b = bits * rng.uniform(0.9, 1.1, n)
                if rng.random() < 0.05:
                    b[int(rng.integers(n))] = 0.0  # an outage granule
                recs.append(cell.step(arrived, b))
            roll = rng.random()
            if roll < 0.06:  # noValue: the Python path fills it
                r = dict(recs[int(rng.integers(10))])
                r[M.BITS_PER_PRB] = np.where(np.arange(n) == 0, np.nan, r[M.BITS_PER_PRB])
                recs[int(rng.integers(10))] = r
            msg = encode_period(ues, recs, ue_kind=kind)
            start = t
            if 0.06 <= roll < 0.1:
                start = t - int(rng.integers(1, 3))  # overlaps the previous report's end
            elif 0.1 <= roll < 0.12:
                start = t - 30  # late: the engine refuses it
            elif 0.12 <= roll < 0.14:
                lacking = tuple(x for x in NAMES if x != M.BITS_PER_PRB)
                msg = encode_period(ues, recs[:1], names=lacking)
            out.append((meid, _pdu(msg, start, p % 65536)))
            t += 10 if rng.random() > 0.05 else 40  # a gap now and then
    # interleave the nodes as they would arrive
    a = [x for x in out if x[0] == "gnb_a"]
    d = [x for x in out if x[0] == "gnb_du"]
    return [x for pair in zip(a, d, strict=True) for x in pair]


def _xapps() -> tuple[OccXapp, OccXapp]:
    def mk(feedback: FeedbackSender | None) -> OccXapp:
        sdl = SdlStore("occ", storage=SyncStorage(fake_db_backend="dict"))
        return OccXapp(free_port(), free_port(), sdl=sdl, feedback=feedback)

    py, nat = mk(FeedbackSender()), mk(None)
    assert py.native is None and nat.native is not None
    for x in (py, nat):
        x.feedback.set_policy(0.02, 600.0)  # change-driven sends only: no timer phase in it
    return py, nat


def _feedback(rx: socket.socket) -> list[tuple[int, int, bool, int]]:
    return [(d["ue"], d["target_bps"], d["fallback"], d["t_ms"])
            for d in map(json.loads, _drain(rx))]  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2])
def test_native_path_decides_as_the_python_path(seed: int) -> None:
    py, nat = _xapps()
    assert nat.native is not None
    rx_py, rx_nat = _receiver(), _receiver()
    run = recorded_run(seed)
    keys = {101, 102, 103, 104}
    from octoric.contracts import ue_key

    keys |= {ue_key.du_key("gnb_du", f) for f in (7, 8, 9)}
    for x, rx in ((py, rx_py), (nat, rx_nat)):
        for u in sorted(keys):
            x.feedback.add(Flow(f"f{u}", u, "127.0.0.1", rx.getsockname()[1], "json"))
    handled = declined = 0
    for k, (meid, pdu) in enumerate(run):
        msg = RmrMessage(12050, 5, meid, pdu)
        py.on_indication(msg)
        if nat.native.handle(pdu, meid, 5):
            handled += 1
        else:
            declined += 1
            nat.on_indication(msg)
        for u in keys:
            a, b = py.engine.latest(u), nat.engine.latest(u)
            assert (a is None) == (b is None), (k, u)
            if a is not None and b is not None:
                assert a[1] == b[1] and (a[0] == b[0] or (np.isnan(a[0]) and np.isnan(b[0]))), (
                    k, u, a, b,
                )  # fmt: skip
        if k % 25 == 0:  # the datagrams so far, in order
            assert _feedback(rx_py) == _feedback(rx_nat), k
    assert _feedback(rx_py) == _feedback(rx_nat)
    # both paths ran: the usual reports natively, the others through Python
    assert handled > 300 and declined > 20, (handled, declined)
    nat.drain_native()
    assert nat.native_declined.keys() >= {"no_value", "missing_metric", "engine_time"}
    ra = {r.ue: r for r in py.ue_records()}
    rb = {r.ue: r for r in nat.ue_records()}
    assert ra.keys() == rb.keys() == keys
    for u in keys:
        x, y = ra[u], rb[u]
        assert (x.target_bps, x.fallback, x.bottleneck, x.t_ms, x.meid, x.guami) == (
            y.target_bps, y.fallback, y.bottleneck, y.t_ms, y.meid, y.guami,
        ), u  # fmt: skip
    c_py, c_nat = py.counters, nat.counters
    for k in ("indications", "ue_samples", "time_overlap_shifted"):
        assert c_py[k] == c_nat[k], k
    assert py.rejected == nat.rejected and sum(py.rejected.values()) > 0
    assert py.engine.stats.batches == nat.engine.stats.batches


def test_native_report_is_the_python_report() -> None:
    """The 30500 the native path sends for an indication: ``messages.abw_report`` encoded,
    byte for byte (the native path's own sent_at and sn)."""
    occ = native.NativeOcc(OccConfig(), ())
    occ.capture_reports()
    run = recorded_run(3)[:60]
    n = 0
    for meid, pdu in run:
        if not occ.handle(pdu, meid, 5):
            continue
        sent = occ.captured_reports()
        assert len(sent) == 1
        n += 1
        got = occ.latest(meid)
        assert got is not None
        want = messages.encode(messages.abw_report(got.batch, meid, 5, got.sn,
                                                   got.batch.target_bps_granules.shape[1],
                                                   got.guamis, got.at))  # fmt: skip
        assert sent[0] == want
    assert n > 40


@pytest.mark.parametrize("name", ["du-RicIndication-rf2-i2", "du-RicIndication-rf2-i4"])
def test_real_srsran_indications(name: str) -> None:
    """What a real srsRAN DU sent (session 25's live capture): both xApps end the same."""
    pdu = bytes.fromhex((VECTORS / f"{name}.hex").read_text().strip())
    py, nat = _xapps()
    assert nat.native is not None
    py.on_indication(RmrMessage(12050, 2, "gnb_srs", pdu))
    if not nat.native.handle(pdu, "gnb_srs", 2):
        nat.on_indication(RmrMessage(12050, 2, "gnb_srs", pdu))
    nat.drain_native()
    assert py.rejected == nat.rejected
    ra, rb = py.ue_records(), nat.ue_records()
    assert [(r.ue, r.target_bps, r.fallback) for r in ra] == [
        (r.ue, r.target_bps, r.fallback) for r in rb
    ]


def test_mutated_indications_end_the_same_on_both_paths() -> None:
    """Bad input: a recorded run's indications with random octets changed or cut off. The
    native path never crashes, and what it does not decline ends as the Python path ends it:
    the same estimates and the same rejections (by reason) in both xApps."""
    import random

    py, nat = _xapps()
    assert nat.native is not None
    rng = random.Random(11)
    keys: set[int] = set()
    handled = 0
    for k, (meid, pdu) in enumerate(recorded_run(4)[:300]):
        b = bytearray(pdu)
        if k % 3 == 1:
            for _ in range(rng.randrange(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif k % 3 == 2 and rng.random() < 0.3:
            b = b[: rng.randrange(4, len(b))]
        data = bytes(b)
        msg = RmrMessage(12050, 5, meid, data)
        py.on_indication(msg)
        if nat.native.handle(data, meid, 5):
            handled += 1
        else:
            nat.on_indication(msg)
        keys |= set(py.engine.ue_ids) | set(nat.engine.ue_ids)
        for u in keys:
            a, c = py.engine.latest(u), nat.engine.latest(u)
            assert (a is None) == (c is None), (k, u)
            if a is not None and c is not None:
                assert a[1] == c[1] and np.array_equal(a[0], c[0], equal_nan=True), (k, u)
    assert handled > 50
    assert py.rejected == nat.rejected and sum(py.rejected.values()) > 10, py.rejected
