"""The OCC xApp's message handling in-process (no RMR, SDL in memory): KPM indications feed
the engine; RC REPORT style 4 handover phases, turned into 30501 events by the handover xApp
(in process too, its sends captured), and 30501 events set and clear the fallback; bad RC
input is counted by the handover xApp; an RC indication reaching OCC is rejected."""

from __future__ import annotations

import pytest
from ricsdl.syncstorage import SyncStorage

from octoric.contracts.ho_event import HoEvent
from octoric.contracts.rc import PARAM_HO_PHASE, PARAM_NR_CELL
from octoric.e2sm import e2ap, rc
from octoric.e2sm.common import UeId
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.redis_server import free_port
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import RmrMessage
from octoric.xapps.handover.xapp import HandoverXapp
from octoric.xapps.occ.messages import encode
from octoric.xapps.occ.xapp import OccXapp

from .kpm_source import GUAMI, OccIndications

pytestmark = pytest.mark.unit


class _Sub:
    request_id = RicRequestId(123, 5)


def _rc_pdu(ue: UeId, phase: int | None, sn: int) -> bytes:
    params = [rc.RanParam(PARAM_NR_CELL, rc.Element(rc.Bits(0x19B001, 36)))]
    if phase is not None:
        params.append(rc.RanParam(PARAM_HO_PHASE, rc.Element(phase)))
    hdr = rc.encode_rc(rc.RcIndicationHeader(1, 2))
    msg = rc.encode_rc(rc.RcIndicationMessage(ue_params=((ue, tuple(params)),)))
    return e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 6), 3, 1, hdr, msg, sn=sn))


@pytest.fixture
def xapp() -> OccXapp:
    sdl = SdlStore("occ", storage=SyncStorage(fake_db_backend="dict"))
    return OccXapp(free_port(), free_port(), sdl=sdl)


@pytest.fixture
def ho() -> HandoverXapp:
    sdl = SdlStore("handover", storage=SyncStorage(fake_db_backend="dict"))
    return HandoverXapp(free_port(), free_port(), sdl=sdl)


def test_kpm_then_rc_handover(
    xapp: OccXapp, ho: HandoverXapp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the handover xApp's 30501 go straight to OCC's handler (RMR in between in the e2e test)
    def send(
        mtype: int, payload: bytes, meid: str | None = None, retries: int = 3, xact: bool = True
    ) -> bool:
        assert mtype == 30501
        xapp.on_ho_event(RmrMessage(mtype, -1, meid or "", payload))
        return True

    monkeypatch.setattr(ho.shell, "send", send)
    src = OccIndications([101, 102], pool_periods=4)
    sn = 0

    def kpm_step() -> None:
        nonlocal sn
        h, m = src(_Sub, sn)
        pdu = e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 5), 2, 1, h, m, sn=sn))
        xapp.on_indication(RmrMessage(12050, 5, "gnb_a", pdu))
        sn += 1

    for _ in range(20):
        kpm_step()
    assert sorted(xapp.latest) == [101, 102] and not xapp.latest[101].fallback
    ue = UeId.gnb(101, GUAMI)
    ho.on_indication(RmrMessage(12050, 6, "gnb_a", _rc_pdu(ue, 1, 0)))
    assert xapp.latest[101].fallback and xapp.latest[101].handover
    assert not xapp.latest[102].fallback
    kpm_step()
    assert xapp.latest[101].fallback  # still in the handover
    ho.on_indication(RmrMessage(12050, 6, "gnb_b", _rc_pdu(ue, 2, 1)))
    assert not xapp.latest[101].fallback and not xapp.latest[101].handover
    # an RC entry without the phase parameter, a UE without AMF-UE-NGAP-ID, garbage
    ho.on_indication(RmrMessage(12050, 6, "gnb_a", _rc_pdu(ue, None, 2)))
    du = UeId("gNB-DU-UEID", f1ap_ids=(3,))
    ho.on_indication(RmrMessage(12050, 6, "gnb_a", _rc_pdu(du, 1, 3)))
    bad = e2ap.encode_e2ap(
        e2ap.RicIndication(RicRequestId(123, 6), 3, 1, b"\x00", b"\xff\xff", sn=4)
    )
    ho.on_indication(RmrMessage(12050, 6, "gnb_a", bad))
    assert ho.events["start"] == 1 and ho.events["complete"] == 1
    assert ho.counters["events_sent"] == 2
    assert ho.detector.counters["entries_without_handover"] == 2
    assert ho.rejected["undecodable"] == 1
    assert xapp.counters["ho_start"] == 1 and xapp.counters["ho_complete"] == 1
    # OCC itself no longer reads RC: an RC indication is not a KPM one
    xapp.on_indication(RmrMessage(12050, 6, "gnb_a", _rc_pdu(ue, 1, 5)))
    assert xapp.rejected["not_kpm"] == 1 and not xapp.latest[101].fallback
    # 30501 does the same
    xapp.on_ho_event(RmrMessage(30501, -1, "", encode(HoEvent(102, "start").to_json())))
    assert xapp.latest[102].fallback
    xapp.on_ho_event(RmrMessage(30501, -1, "", encode(HoEvent(102, "complete").to_json())))
    assert not xapp.latest[102].fallback


def test_subscription_requests(xapp: OccXapp, ho: HandoverXapp) -> None:
    from octoric.ric.submgr import parse_request

    requests = (
        (xapp.subscription_request("gnb_a", "sid"), 2),
        (ho.node_subs.request("gnb_a", "sid", ho.rc_wanted()), 3),
    )
    for req, ranf in requests:
        body = req.body()
        common, _ = parse_request(body)
        assert common["ran_function_id"] == ranf and body["SubscriptionId"] == "sid"
    kpm_act = bytes(xapp.subscription_request("gnb_a", "s").body()["SubscriptionDetails"][0][
        "ActionToBeSetupList"][0]["ActionDefinition"])  # fmt: skip
    from octoric.e2sm import kpm

    d = kpm.decode_kpm(kpm.KpmActionDefinition, kpm_act)
    assert d.style == 4 and d.format.subscription.granularity_ms == 1  # type: ignore[union-attr]


def test_a_forged_future_time_stamp_does_not_lock_out_the_node(xapp: OccXapp) -> None:
    """Issue #17: one indication stamped an hour ahead used to move every UE's latest sample an
    hour on, so the engine rejected each real indication until a restart. Now it is dropped
    before the engine (counted clock_ahead) and the real ones keep flowing."""
    import time

    from octoric.e2sm import kpm
    from octoric.e2sm.common import ntp_timestamp

    src = OccIndications([101, 102], pool_periods=4)

    def send(h: bytes, m: bytes, sn: int) -> None:
        pdu = e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 5), 2, 1, h, m, sn=sn))
        xapp.on_indication(RmrMessage(12050, 5, "gnb_a", pdu))

    h, m = src(_Sub, 0)
    send(h, m, 0)
    forged = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(time.time() + 3600.0)))
    send(forged, m, 1)
    assert xapp.rejected["clock_ahead"] == 1
    before = xapp.counters["ue_samples"]
    for sn in range(1, 6):
        send(*src(_Sub, sn), sn + 1)
    assert xapp.counters["ue_samples"] > before  # the real ones still reach the engine
    assert sum(xapp.rejected.values()) == 1


def test_reports_wait_while_nobody_subscribes(
    xapp: OccXapp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No route for 30500: the report is not built again for a second (counted); once the
    back-off is over, the next indication tries again and a route that exists by then works."""
    sent: list[bytes] = []
    route = {"up": False}

    def send(
        mtype: int, payload: bytes, meid: str | None = None, retries: int = 3, xact: bool = True
    ) -> bool:
        assert mtype == 30500 and not xact  # a publication: no transaction ID
        if not route["up"]:
            xapp.shell.last_tx_failure = "no_route"
            return False
        sent.append(payload)
        return True

    monkeypatch.setattr(xapp.shell, "send", send)
    src = OccIndications([101, 102], pool_periods=4)
    clock = {"t": 1000.0}
    monkeypatch.setattr("octoric.xapps.occ.xapp.time.monotonic", lambda: clock["t"])

    def step(sn: int) -> None:
        h, m = src(_Sub, sn)
        pdu = e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 5), 2, 1, h, m, sn=sn))
        xapp.on_indication(RmrMessage(12050, 5, "gnb_a", pdu))

    for sn in range(5):
        step(sn)
    assert xapp.counters["reports_unsent"] == 1
    assert xapp.counters["reports_skipped_no_route"] == 4
    route["up"] = True
    step(5)
    assert not sent  # still inside the back-off
    clock["t"] += 1.01
    step(6)
    assert len(sent) == 1 and xapp.counters["reports_sent"] == 1
    step(7)
    assert len(sent) == 2
    assert sorted(xapp.latest) == [101, 102]  # the records do not depend on the reports


def test_flow_registrations_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that registers and never deletes cannot grow the xApp without bound: past
    MAX_FLOWS a registration is a 409 "too_many", counted; a DELETE makes room again."""
    import json

    from octoric.contracts import auth
    from octoric.xapps.occ import xapp as occ_xapp

    monkeypatch.setattr(occ_xapp, "MAX_FLOWS", 5)
    occ = OccXapp(
        free_port(), free_port(), sdl=SdlStore("occ", SyncStorage(fake_db_backend="dict"))
    )
    occ.shell.http.token = "t" * 32
    occ.shell._ready.set()
    hdr = auth.bearer("t" * 32)

    def post(i: int) -> tuple[int, dict[str, object]]:
        body = {"id": f"f{i}", "ue": 1000 + i, "address": "127.0.0.1:9", "format": "json"}
        r = occ.shell.http.dispatch("POST", "/occ/v1/flows", json.dumps(body).encode(), dict(hdr))
        return r.status, json.loads(r.body)

    assert [post(i)[0] for i in range(5)] == [201] * 5
    status, err = post(5)
    assert status == 409 and err["reason"] == "too_many", err
    assert occ.counters["flows_refused_too_many"] == 1
    assert len(occ.flows()) == 5
    r = occ.shell.http.dispatch("DELETE", "/occ/v1/flows/f0", b"", dict(hdr))
    assert r.status == 204
    assert post(5)[0] == 201


def test_flow_listing_pages_and_follows_changes() -> None:
    """GET /occ/v1/flows lists every flow by id, or a page (?limit, ?after) with a Link to the
    next one; the kept rendering follows every registration and deletion."""
    import json

    from octoric.contracts import auth

    occ = OccXapp(
        free_port(), free_port(), sdl=SdlStore("occ", SyncStorage(fake_db_backend="dict"))
    )
    occ.shell.http.token = "t" * 32
    occ.shell._ready.set()
    hdr = auth.bearer("t" * 32)
    http = occ.shell.http

    def ids(path: str) -> tuple[list[str], str | None]:
        r = http.dispatch("GET", path, b"", {})
        assert r.status == 200, r.body
        return [f["id"] for f in json.loads(r.body)], r.headers.get("Link")

    for i in (3, 1, 2, 5, 4):
        body = {"id": f"f{i}", "ue": 1000 + i, "address": "127.0.0.1:9", "format": "json"}
        assert (
            http.dispatch("POST", "/occ/v1/flows", json.dumps(body).encode(), dict(hdr)).status
            == 201
        )
    assert ids("/occ/v1/flows") == (["f1", "f2", "f3", "f4", "f5"], None)
    page, link = ids("/occ/v1/flows?limit=2")
    assert page == ["f1", "f2"] and link == '</occ/v1/flows?limit=2&after=f2>; rel="next"'
    assert ids("/occ/v1/flows?limit=2&after=f2") == (
        ["f3", "f4"],
        '</occ/v1/flows?limit=2&after=f4>; rel="next"',
    )
    assert ids("/occ/v1/flows?limit=2&after=f4") == (["f5"], None)
    assert ids("/occ/v1/flows?after=f9") == ([], None)
    assert http.dispatch("DELETE", "/occ/v1/flows/f2", b"", dict(hdr)).status == 204
    assert ids("/occ/v1/flows?limit=2") == (
        ["f1", "f3"],
        '</occ/v1/flows?limit=2&after=f3>; rel="next"',
    )
    # the same id registered again with other facts: listed with the new ones, not the kept
    assert http.dispatch("DELETE", "/occ/v1/flows/f3", b"", dict(hdr)).status == 204
    body = {"id": "f3", "ue": 7777, "address": "127.0.0.1:19", "format": "json"}
    assert (
        http.dispatch("POST", "/occ/v1/flows", json.dumps(body).encode(), dict(hdr)).status == 201
    )
    listed = {f["id"]: f for f in json.loads(http.dispatch("GET", "/occ/v1/flows", b"", {}).body)}
    assert (listed["f3"]["ue"], listed["f3"]["port"], listed["f1"]["ue"]) == (7777, 19, 1001)
    for bad in ("0", "-1", "x", "4097"):
        r = http.dispatch("GET", f"/occ/v1/flows?limit={bad}", b"", {})
        assert r.status == 400 and json.loads(r.body)["reason"] == "bad_limit", bad


def test_ues_of_two_dus_named_by_f1ap_id(xapp: OccXapp) -> None:
    """Two srsRAN-like DUs name their UEs by gNB-CU-UE-F1AP-ID only, both UE 0 and 1: four
    UEs, each keyed by its node (contracts.ue_key), listed with that node; a flow registered
    with one of those keys gets that UE's feedback."""
    import json

    from octoric.contracts import auth, ue_key
    from octoric.contracts.feedback import FeedbackListener

    src = OccIndications([0, 1], pool_periods=4, ue_kind="gNB-DU-UEID")
    xapp.shell.http.token = "t" * 32
    xapp.shell._ready.set()
    lst = FeedbackListener()
    key = ue_key.du_key("du_b", 1)
    flow = {"id": "du", "ue": key, "address": f"127.0.0.1:{lst.address[1]}", "format": "json"}
    made = xapp.shell.http.dispatch(
        "POST", "/occ/v1/flows", json.dumps(flow).encode(), auth.bearer("t" * 32)
    )
    assert made.status == 201, made.body
    try:
        for sn in range(20):
            for meid in ("du_a", "du_b"):
                h, m = src(_Sub, sn)
                pdu = e2ap.encode_e2ap(e2ap.RicIndication(_Sub.request_id, 2, 1, h, m, sn=sn))
                xapp.on_indication(RmrMessage(12050, 5, meid, pdu))
        want = {ue_key.du_key(n, i): n for n in ("du_a", "du_b") for i in (0, 1)}
        assert {k: r.meid for k, r in xapp.latest.items()} == want
        assert xapp.latest[key].guami is None and xapp.rejected == {}
        fb = lst.get(5)
        assert fb is not None and fb.ue == key and fb.target_bps > 0
    finally:
        lst.close()


def test_the_sdl_writer_writes_everything_in_slices(
    xapp: OccXapp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer thread's flush leaves the GIL between slices of its work (an indication
    waits one slice, not the switch interval); every UE record and checkpoint still lands."""
    from octoric.xapps.occ import persist
    from octoric.xapps.occ import xapp as occ_xapp

    ues = list(range(201, 261))  # 60 UEs: several slices of records and of checkpoint blobs
    src = OccIndications(ues, pool_periods=2)
    for sn in range(3):
        h, m = src(_Sub, sn)
        pdu = e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 5), 2, 1, h, m, sn=sn))
        xapp.on_indication(RmrMessage(12050, 5, "gnb_a", pdu))
    xapp._snapshot_engine()
    writes: list[int] = []
    pauses: list[float] = []
    set_many = xapp.sdl.set_many
    monkeypatch.setattr(xapp.sdl, "set_many", lambda items: (writes.append(len(items)),
                                                             set_many(items)))  # fmt: skip
    monkeypatch.setattr(occ_xapp.time, "sleep", pauses.append)
    xapp.checkpoint(occ_xapp.WRITER_PAUSE_S)
    assert max(writes) <= max(occ_xapp.WRITER_SLICE_RECORDS, occ_xapp.WRITER_SLICE_BLOBS)
    assert sum(writes) == 2 * len(ues)
    assert len(pauses) == len(writes) - 1 and set(pauses) == {occ_xapp.WRITER_PAUSE_S}
    for ue in ues:
        assert xapp.sdl.get_json(f"{persist.UE}{ue}")["ue"] == ue
        assert persist.unpack_state(xapp.sdl.get(f"{persist.CKPT}{ue}") or b"", xapp.fp)
    # stop's flush does it at once
    writes.clear()
    pauses.clear()
    h, m = src(_Sub, 3)
    pdu = e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 5), 2, 1, h, m, sn=3))
    xapp.on_indication(RmrMessage(12050, 5, "gnb_a", pdu))
    xapp.checkpoint()
    assert sum(writes) == len(ues) and not pauses


def test_a_report_overlapping_the_previous_by_a_ms_continues_it(xapp: OccXapp) -> None:
    """A live srsRAN gNB stamps each 10 ms report's start on its wall clock in whole ms: 273 of
    8,306 back-to-back reports started 1 ms before the previous one ended, and the engine
    rejected each whole (10 ms of every UE lost). Up to max_time_overlap_ms (2) such a report
    continues the previous one (counted); a larger overlap is still rejected as out of order."""
    import time

    from octoric.e2sm import kpm
    from octoric.e2sm.common import ntp_timestamp

    src = OccIndications([101, 102], pool_periods=4)
    base_ms = int(time.time() * 1000) - 10_000

    def send(t0_ms: int, sn: int) -> None:
        h = kpm.encode_kpm(kpm.KpmIndicationHeader(ntp_timestamp(t0_ms / 1000.0)))
        _, m = src(_Sub, sn)
        pdu = e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(123, 5), 2, 1, h, m, sn=sn))
        xapp.on_indication(RmrMessage(12050, 5, "gnb_a", pdu))

    send(base_ms, 0)
    send(base_ms + 10, 1)
    before = xapp.counters["ue_samples"]
    send(base_ms + 19, 2)  # 1 ms into the previous report
    assert sum(xapp.rejected.values()) == 0, xapp.rejected
    assert xapp.counters["time_overlap_shifted"] == 1
    assert xapp.counters["ue_samples"] > before
    send(base_ms + 30, 3)  # right after the shifted one (which ended at +30): no overlap
    assert xapp.counters["time_overlap_shifted"] == 1 and sum(xapp.rejected.values()) == 0
    send(base_ms + 35, 4)  # 5 ms back: out of order, rejected as before
    assert xapp.rejected["time"] == 1 and xapp.counters["time_overlap_shifted"] == 1
