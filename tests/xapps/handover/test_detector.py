"""The handover detector (pure core): RC REPORT style 4 UE entries -> 30501 events, each UE
followed by AMF-UE-NGAP-ID + GUAMI across cells and gNBs; and the RC glue that decodes real
E2SM-RC indications (as octoric's simulated gNB encodes them) into its entries."""

from __future__ import annotations

import json
from dataclasses import asdict

import jsonschema
import pytest

from octoric.contracts.ho_event import parse_ho_event
from octoric.contracts.rc import PARAM_HO_PHASE, PARAM_NR_CELL, PARAM_SOURCE_CELL
from octoric.contracts.schemas import load as load_schema
from octoric.e2sm import e2ap, rc
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.e2sm.rc_fast import RcIndicationDecoder
from octoric.xapps.handover import rc_input
from octoric.xapps.handover.detector import Detector, UeInfo, UeSighting, cell_name

pytestmark = pytest.mark.unit
G = "00f110:1:1:0"
A, B, C = 0x19B001, 0x19B002, 0x19C001  # cells: two of gNB 0x19b, one of gNB 0x19c


class Clock:
    def __init__(self) -> None:
        self.t = 1_763_812_345_000

    def __call__(self) -> int:
        return self.t


def info(ue: int | None, meid: str, cell: int | None, phase: int | None,
         src: int | None = None, guami: str | None = G, gap: float | None = None,
         ) -> UeInfo:  # fmt: skip
    return UeInfo(ue, guami, meid, cell, phase, src, gap)


def test_start_then_end_across_gnbs() -> None:
    clock = Clock()
    d = Detector(clock)
    (start,) = d.on_report([info(101, "gnb_a", C, 1, A)])
    assert (start.ue, start.event, start.t_ms, start.guami) == (101, "start", clock.t, G)
    assert (start.source_cell, start.target_cell) == ("00f110:19b001", "00f110:19c001")
    assert start.source_meid == "gnb_a" and start.target_meid is None
    clock.t += 45
    (end,) = d.on_report([info(101, "gnb_c", C, 2, A, gap=92.0)])
    assert (end.event, end.t_ms, end.started_ms) == ("complete", clock.t, start.t_ms)
    assert (end.path, end.interruption_ms, end.cause) == ("rc", 92.0, None)
    assert start.id is not None and end.id is not None and start.id != end.id
    # the end names the source the start saw, and the node that reported the end
    assert (end.source_meid, end.target_meid) == ("gnb_a", "gnb_c")
    assert (end.source_cell, end.target_cell) == ("00f110:19b001", "00f110:19c001")
    assert not d.in_handover() and d.tracks[(101, G)].cell == C
    assert d.counters["starts"] == 1 and d.counters["ends"] == 1 and d.counters["completed"] == 1
    # valid 30501 payloads, as OCC parses them
    schema = load_schema("ho_event")
    for ev in (start, end):
        jsonschema.validate(ev.to_json(), schema)
        assert parse_ho_event(json.dumps(ev.to_json()).encode()) == ev


def test_ues_are_followed_by_identity() -> None:
    d = Detector(Clock())
    other = "00f110:1:1:1"  # same AMF-UE-NGAP-ID under another AMF: another UE
    evs = d.on_report([info(7, "gnb_a", B, 1, A), info(7, "gnb_a", C, 1, A, guami=other)])
    assert [e.guami for e in evs] == [G, other] and len(d.in_handover()) == 2
    (end,) = d.on_report([info(7, "gnb_c", C, 2, guami=other)])
    assert end.guami == other and end.source_cell == "00f110:19b001"
    assert [t.guami for t in d.in_handover()] == [G]


def test_failures_duplicates_and_ends_without_start() -> None:
    d = Detector(Clock())
    d.on_report([info(1, "gnb_a", B, 1, A)])
    assert d.on_report([info(1, "gnb_a", B, 1, A)]) == []  # the same start again: dropped
    assert d.counters["duplicate_starts"] == 1
    (again,) = d.on_report([info(1, "gnb_a", C, 1, A)])  # another target: a new start
    assert again.target_cell == "00f110:19c001" and d.counters["restarts"] == 1
    (fail,) = d.on_report([info(1, "gnb_a", A, 3, A)])  # failed, re-established
    assert (fail.event, fail.cause) == ("failure", "radio-link-failure-reestablished")
    assert d.counters["failed"] == 1
    # an end whose start was missed (another node, or a restart) is still an end
    (orphan,) = d.on_report([info(2, "gnb_c", C, 2, B)])
    assert orphan.event == "complete" and orphan.source_cell == "00f110:19b002"
    assert orphan.source_meid is None and d.counters["ends_without_start"] == 1


def test_entries_without_a_handover() -> None:
    d = Detector(Clock())
    evs = d.on_report(
        [info(1, "gnb_a", B, None), info(None, "gnb_a", B, 1, A, guami=None),
         info(1, "gnb_a", B, 9)]
    )  # fmt: skip
    assert evs == []
    assert d.counters["entries_without_handover"] == 3
    assert d.counters["skipped_no_phase"] == 1 and d.counters["skipped_no_ue_id"] == 1
    assert d.counters["skipped_bad_phase"] == 1
    # a UE-information change still tells the serving cell: the next start's source
    (start,) = d.on_report([info(1, "gnb_a", C, 1)])
    assert start.source_cell == "00f110:19b002" and start.target_cell == "00f110:19c001"


def test_expiry() -> None:
    clock = Clock()
    d = Detector(clock, forget_ms=1000, max_handover_ms=500)
    d.on_report([info(1, "gnb_a", A, None), info(2, "gnb_a", B, 1, A)])
    clock.t += 600
    assert d.expire() == 1 and d.counters["stale_handovers"] == 1  # UE 2's handover
    assert list(d.tracks) == [(1, G)]
    clock.t += 500
    assert d.expire() == 1 and not d.tracks


def test_cell_name() -> None:
    assert cell_name(0x19B001, G) == "00f110:19b001"
    assert cell_name(None, G) is None and cell_name(0xABC, None) == "abc"


def _rc_pdu(ue: UeId, params: list[rc.RanParam]) -> bytes:
    hdr = rc.encode_rc(rc.RcIndicationHeader(1, 2))
    msg = rc.encode_rc(rc.RcIndicationMessage(ue_params=((ue, tuple(params)),)))
    return e2ap.encode_e2ap(e2ap.RicIndication(RicRequestId(1, 2), 3, 1, hdr, msg, sn=0))


def test_rc_glue_decodes_the_simulators_reports() -> None:
    guami = Guami(bytes.fromhex("00f110"), 1, 1, 0)
    params = [
        rc.RanParam(202, rc.Element(0)),
        rc.RanParam(PARAM_NR_CELL, rc.Element(rc.Bits(C, 36))),
        rc.RanParam(PARAM_HO_PHASE, rc.Element(1)),
        rc.RanParam(PARAM_SOURCE_CELL, rc.Element(rc.Bits(A, 36))),
    ]
    ind = e2ap.decode_e2ap(_rc_pdu(UeId.gnb(101, guami, 5), params))
    assert isinstance(ind, e2ap.RicIndication)
    dec = RcIndicationDecoder()
    (e,) = rc_input.ue_infos(ind, "gnb_a", dec)
    assert e == UeInfo(101, G, "gnb_a", C, 1, A)
    assert (dec.fast, dec.fallbacks) == (1, 0)
    du = e2ap.decode_e2ap(_rc_pdu(UeId("gNB-DU-UEID", f1ap_ids=(3,)), params))
    assert isinstance(du, e2ap.RicIndication)
    assert rc_input.ue_infos(du, "gnb_a", dec)[0].ue is None
    format1 = rc.encode_rc(rc.RcIndicationMessage(params=tuple(params)))  # not per UE
    for message, reason in ((b"\xff\xff", "undecodable"), (format1, "not_ue_level")):
        bad = e2ap.RicIndication(RicRequestId(1, 2), 3, 1, b"\x00", message, sn=1)
        with pytest.raises(rc_input.RcInputError) as err:
            rc_input.ue_infos(bad, "gnb_a", dec)
        assert err.value.reason == reason


def test_ping_pong_follows_the_complete_that_went_back() -> None:
    clock = Clock()
    d = Detector(clock, ping_pong_ms=2000)
    d.on_report([info(5, "gnb_a", B, 1, A)])
    d.on_report([info(5, "gnb_b", B, 2, A)])  # A -> B
    clock.t += 800
    d.on_report([info(5, "gnb_b", A, 1, B)])
    evs = d.on_report([info(5, "gnb_a", A, 2, B)])  # B -> A within 2 s: back where it left
    assert [e.event for e in evs] == ["complete", "ping_pong"]
    assert evs[1].target_cell == "00f110:19b001" and evs[1].id != evs[0].id
    clock.t += 5000  # long after: A -> B again is an ordinary handover
    d.on_report([info(5, "gnb_a", B, 1, A)])
    assert [e.event for e in d.on_report([info(5, "gnb_b", B, 2, A)])] == ["complete"]
    assert d.counters["ping_pongs"] == 1


def sight(ue: int, meid: str, first: int, last: int) -> UeSighting:
    return UeSighting(ue, G, meid, first, last)


def test_kpm_path_follows_a_ue_from_node_to_node() -> None:
    clock = Clock()
    d = Detector(clock)
    t0 = 1_000_000
    assert d.on_sighting([sight(9, "gnb_a", t0, t0 + 100)]) == []
    assert d.on_sighting([sight(9, "gnb_a", t0 + 100, t0 + 170)]) == []  # left at +170
    evs = d.on_sighting([sight(9, "gnb_b", t0 + 260, t0 + 300)])  # back at +260
    assert [e.event for e in evs] == ["start", "complete"]
    start, end = evs
    assert start.id is not None and start.id.endswith(":start")
    assert {e.path for e in evs} == {"kpm"} and end.interruption_ms == 90.0
    assert (end.source_meid, end.target_meid) == ("gnb_a", "gnb_b")
    # the source's report of the same period arrives late: stale, no event, no way back
    assert d.on_sighting([sight(9, "gnb_a", t0 + 200, t0 + 240)]) == []
    assert d.counters["stale_sightings"] == 1
    assert d.on_sighting([sight(9, "gnb_b", t0 + 300, t0 + 400)]) == []
    assert d.counters["starts_kpm"] == 1 and d.counters["completed"] == 1
    # back to gnb_a soon after: a handover and a ping-pong (kpm sees nodes, not cells)
    evs = d.on_sighting([sight(9, "gnb_a", t0 + 500, t0 + 600)])
    assert [e.event for e in evs] == ["start", "complete", "ping_pong"]
    schema = load_schema("ho_event")
    for ev in evs:
        jsonschema.validate(ev.to_json(), schema)
        assert parse_ho_event(json.dumps(ev.to_json()).encode()) == ev


def test_kpm_sightings_decoded_from_a_real_indication() -> None:
    """The KPM glue on bytes as octoric's gNB encodes them (``e2sm.fastenc``, the live agent's
    encoder): served granules only."""
    import numpy as np

    from octoric.contracts import kpm as K
    from octoric.e2sm import fastenc, kpm
    from octoric.e2sm.common import ntp_timestamp
    from octoric.xapps.handover import kpm_input

    guami = Guami(bytes.fromhex("00f110"), 1, 1, 0)
    ues = [UeId.gnb(7, guami, 1), UeId.gnb(8, guami, 2)]
    vals = np.full((2, 10, 1), np.nan)
    vals[0, 2:6, 0] = 5.0  # UE 7: granules 2..5
    vals[1, :, 0] = 1.0  # UE 8: the whole period
    enc = fastenc.Format3Encoder([K.PRB_USED_DL], 10)
    msg = enc.encode(ues, vals)
    hdr = fastenc.encode_indication_header(ntp_timestamp(1_763_812_345.0))
    ind = e2ap.RicIndication(RicRequestId(1, 2), kpm.RAN_FUNCTION_ID, 1, hdr, msg, sn=0)
    seen = kpm_input.sightings(ind, "gnb_a", 10)
    t = 1_763_812_345_000
    assert seen == [sight(7, "gnb_a", t + 20, t + 60), sight(8, "gnb_a", t, t + 100)]
    bad = e2ap.RicIndication(RicRequestId(1, 2), kpm.RAN_FUNCTION_ID, 1, hdr, b"\xff", sn=1)
    with pytest.raises(kpm_input.KpmInputError):
        kpm_input.sightings(bad, "gnb_a", 10)


def test_tracks_persist_and_restore() -> None:
    """What the xApp writes to SDL brings a restarted detector back to the same state."""
    clock = Clock()
    d = Detector(clock, forget_ms=1000)
    d.on_report([info(1, "gnb_a", C, 1, A)])  # UE 1 in a handover
    d.on_sighting([sight(2, "gnb_b", 100, 200)])  # UE 2 seen on the kpm path
    tracks, gone = d.take_changes()
    changed = [asdict(t) for t in tracks]
    assert sorted(t["ue"] for t in changed) == [1, 2] and gone == []
    assert d.take_changes() == ([], [])  # nothing new since
    d2 = Detector(clock)
    bad = [{"ue": "x"}, {"colour": 1}, "nope"]
    assert d2.restore([*json.loads(json.dumps(changed)), *bad]) == 2  # through JSON, as SDL
    assert d2.counters["restore_errors"] == 3
    (end,) = d2.on_report([info(1, "gnb_c", C, 2, A)])
    assert end.source_meid == "gnb_a" and end.started_ms == clock.t  # the start before restart
    assert [e.event for e in d2.on_sighting([sight(2, "gnb_c", 300, 400)])] == [
        "start", "complete"]  # fmt: skip
    clock.t += 5000  # UE 2 is forgotten (UE 1 is still in its handover)
    assert d.expire() == 1 and d.take_changes() == ([], [(2, G)])
