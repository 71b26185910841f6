"""The handover detector (pure core): RC REPORT style 4 UE entries -> 30501 events, each UE
followed by AMF-UE-NGAP-ID + GUAMI across cells and gNBs; and the RC glue that decodes real
E2SM-RC indications (as octoric's simulated gNB encodes them) into its entries."""

from __future__ import annotations

import json

import jsonschema
import pytest

from octoric.contracts.ho_event import parse_ho_event
from octoric.contracts.rc import PARAM_HO_PHASE, PARAM_NR_CELL, PARAM_SOURCE_CELL
from octoric.contracts.schemas import load as load_schema
from octoric.e2sm import e2ap, rc
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.xapps.handover import rc_input
from octoric.xapps.handover.detector import Detector, UeInfo, cell_name

pytestmark = pytest.mark.unit
G = "00f110:1:1:0"
A, B, C = 0x19B001, 0x19B002, 0x19C001  # cells: two of gNB 0x19b, one of gNB 0x19c


class Clock:
    def __init__(self) -> None:
        self.t = 1_763_812_345_000

    def __call__(self) -> int:
        return self.t


def info(ue: int | None, meid: str, cell: int | None, phase: int | None,
         src: int | None = None, guami: str | None = G) -> UeInfo:  # fmt: skip
    return UeInfo(ue, guami, meid, cell, phase, src)


def test_start_then_end_across_gnbs() -> None:
    clock = Clock()
    d = Detector(clock)
    (start,) = d.on_report([info(101, "gnb_a", C, 1, A)])
    assert (start.ue, start.event, start.t_ms, start.guami) == (101, "start", clock.t, G)
    assert (start.source_cell, start.target_cell) == ("00f110:19b001", "00f110:19c001")
    assert start.source_meid == "gnb_a" and start.target_meid is None
    clock.t += 45
    (end,) = d.on_report([info(101, "gnb_c", C, 2, A)])
    assert (end.event, end.t_ms) == ("end", clock.t)
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
    assert fail.event == "end" and d.counters["failed"] == 1
    # an end whose start was missed (another node, or a restart) is still an end
    (orphan,) = d.on_report([info(2, "gnb_c", C, 2, B)])
    assert orphan.event == "end" and orphan.source_cell == "00f110:19b002"
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
    (e,) = rc_input.ue_infos(ind, "gnb_a")
    assert e == UeInfo(101, G, "gnb_a", C, 1, A)
    du = e2ap.decode_e2ap(_rc_pdu(UeId("gNB-DU-UEID", f1ap_ids=(3,)), params))
    assert isinstance(du, e2ap.RicIndication)
    assert rc_input.ue_infos(du, "gnb_a")[0].ue is None
    format1 = rc.encode_rc(rc.RcIndicationMessage(params=tuple(params)))  # not per UE
    for message, reason in ((b"\xff\xff", "undecodable"), (format1, "not_ue_level")):
        bad = e2ap.RicIndication(RicRequestId(1, 2), 3, 1, b"\x00", message, sn=1)
        with pytest.raises(rc_input.RcInputError) as err:
            rc_input.ue_infos(bad, "gnb_a")
        assert err.value.reason == reason
