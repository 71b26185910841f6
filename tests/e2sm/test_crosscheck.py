"""Independent cross-check of octoric's codec against codecs built from the O-RAN modules.

- E2SM-KPM / E2SM-RC: asn1tools compiled from ../shared/reference/asn1 (E2SM v05.00 common +
  KPM v04.00 / RC v05.00). Every value we encode must decode to the same value with asn1tools,
  and asn1tools must encode that value to our exact bytes.
- E2AP: pycrate compiled from the reference E2AP v03.01 module (two defects fixed in a temp copy).

asn1tools 0.169 deviates from X.691 in three places octoric's codec does not copy; values that
hit one are checked for decode equality only, and each deviation has its own test below:
REAL mantissas whose first octet has the high bit set (asn1tools adds a 0x00 octet), NULL in an
extension (open type) position (asn1tools writes an empty open type, X.691 wants one 0x00 octet),
open types of 16384 octets or more (asn1tools omits the final length, eerimoq/asn1tools#202).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import strategies as S

from octoric.e2sm import codec, e2ap, jsonconv, kpm, rc
from octoric.e2sm.common import Guami, UeId
from octoric.e2sm.errors import E2smDecodeError

pytestmark = pytest.mark.unit
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def asn1tools_deviation(obj: Any, val: Any) -> str | None:
    """Why asn1tools would encode ``val`` differently from X.691, or None."""
    t = obj.TYPE
    if t in ("SEQUENCE", "SET"):
        for k, v in val.items():
            why = asn1tools_deviation(obj._cont[k], v)
            if why:
                return why
        return None
    if t == "CHOICE":
        comp = obj._cont[val[0]]
        if val[0] in (obj._ext or ()) and comp.TYPE == "NULL":
            return "NULL extension alternative"
        return asn1tools_deviation(comp, val[1])
    if t in ("SEQUENCE OF", "SET OF"):
        for v in val:
            why = asn1tools_deviation(obj._cont, v)
            if why:
                return why
        return None
    if t == "REAL" and val[0] and abs(val[0]).bit_length() % 8 == 0:
        return "REAL mantissa with the high bit of its first octet set"
    return None


def check_against_asn1tools(spec: Any, type_name: str, ours: bytes) -> None:
    value = codec.decode(type_name, ours)
    obj = codec.asn1_type(type_name)
    expected = jsonconv.value_to_asn1tools(obj, value)
    assert spec.decode(type_name, ours) == expected
    if asn1tools_deviation(obj, value) is None:
        assert spec.encode(type_name, expected) == ours


@pytest.mark.parametrize("type_name", sorted(S.KPM_PDUS))
def test_kpm_matches_asn1tools(type_name: str, asn1tools_kpm: Any) -> None:
    @SETTINGS
    @given(S.KPM_PDUS[type_name])
    def run(pdu: Any) -> None:
        check_against_asn1tools(asn1tools_kpm, type_name, kpm.encode_kpm(pdu))

    run()


@pytest.mark.parametrize("type_name", sorted(S.RC_PDUS))
def test_rc_matches_asn1tools(type_name: str, asn1tools_rc: Any) -> None:
    @SETTINGS
    @given(S.RC_PDUS[type_name])
    def run(pdu: Any) -> None:
        check_against_asn1tools(asn1tools_rc, type_name, rc.encode_rc(pdu))

    run()


def test_octoric_definitions_match_asn1tools(asn1tools_kpm: Any, asn1tools_rc: Any) -> None:
    check_against_asn1tools(
        asn1tools_kpm,
        "E2SM-KPM-RANfunction-Description",
        kpm.encode_kpm(kpm.octoric_ran_function_definition()),
    )
    check_against_asn1tools(
        asn1tools_kpm, "E2SM-KPM-ActionDefinition", kpm.encode_kpm(kpm.action_definition_style4())
    )
    check_against_asn1tools(
        asn1tools_rc,
        "E2SM-RC-RANFunctionDefinition",
        rc.encode_rc(rc.octoric_ran_function_definition()),
    )
    ue = UeId.gnb(7, Guami(b"\x00\xf1\x10", 1, 2, 3), 9)
    header, message = rc.octopus_control(ue, rc.OctopusAdaptation(drb_id=4))
    check_against_asn1tools(asn1tools_rc, "E2SM-RC-ControlHeader", header)
    check_against_asn1tools(asn1tools_rc, "E2SM-RC-ControlMessage", message)


# --- the documented asn1tools deviations ---------------------------------------------------


def _record_message(item: tuple[str, Any]) -> dict[str, Any]:
    return {
        "indicationMessage-formats": (
            "indicationMessage-Format1",
            {"measData": [{"measRecord": [item]}]},
        )
    }


def test_asn1tools_deviation_real_mantissa(asn1tools_kpm: Any) -> None:
    x = 5.459933629274291e16  # mantissa 0xC1F9CE9CB377: its first octet has the high bit set
    ours = codec.encode("E2SM-KPM-IndicationMessage", _record_message(("real", kpm.real_to_asn(x))))
    theirs = asn1tools_kpm.encode("E2SM-KPM-IndicationMessage", _record_message(("real", x)))
    assert len(theirs) == len(ours) + 1  # asn1tools: one redundant 0x00 mantissa octet
    assert asn1tools_kpm.decode("E2SM-KPM-IndicationMessage", ours) == _record_message(("real", x))
    decoded = codec.decode("E2SM-KPM-IndicationMessage", theirs)
    item = decoded["indicationMessage-formats"][1]["measData"][0]["measRecord"][0]
    assert kpm.real_from_asn(item[1]) == x


def test_asn1tools_deviation_null_extension(asn1tools_kpm: Any) -> None:
    ours = codec.encode("E2SM-KPM-IndicationMessage", _record_message(("notSatisfied", 0)))
    theirs = asn1tools_kpm.encode(
        "E2SM-KPM-IndicationMessage", _record_message(("notSatisfied", None))
    )
    assert ours[-2:] == b"\x01\x00"  # open type of length 1 holding the empty NULL encoding
    assert asn1tools_kpm.decode("E2SM-KPM-IndicationMessage", ours) == _record_message(
        ("notSatisfied", None)
    )
    assert theirs != ours


def test_asn1tools_deviation_fragmented_open_type(asn1tools_kpm: Any) -> None:
    guami = Guami(b"\x00\xf1\x10", 1, 1, 1)
    reports = tuple(
        kpm.UeReport(
            UeId.gnb(i, guami, i),
            kpm.IndicationFormat1(
                tuple(kpm.MeasRecord(tuple(range(1000, 1008))) for _ in range(10)),
                tuple(kpm.MeasInfo(m) for m in kpm.OCC_MEASUREMENTS),
                1,
            ),
        )
        for i in range(60)
    )
    msg = kpm.KpmIndicationMessage(kpm.IndicationFormat3(reports))
    ours = kpm.encode_kpm(msg)
    assert len(ours) > 16384
    value = jsonconv.value_to_asn1tools(
        codec.asn1_type(msg.ASN_TYPE), codec.decode(msg.ASN_TYPE, ours)
    )
    theirs = asn1tools_kpm.encode(msg.ASN_TYPE, value)
    # X.691 11.9.3.8: after the 16K fragment comes a final length (2 octets here)
    assert len(theirs) == len(ours) - 2
    assert kpm.decode_kpm(kpm.KpmIndicationMessage, ours) == msg


# --- E2AP against pycrate compiled from the reference module --------------------------------


def _reference_pdu(mod: Any) -> Any:
    return mod.E2AP_PDU_Descriptions.E2AP_PDU


@pytest.mark.parametrize("cls", list(S.E2AP_MESSAGES), ids=lambda c: c.__name__)
def test_e2ap_matches_reference_pycrate(cls: type, reference_e2ap: Any) -> None:
    ref = _reference_pdu(reference_e2ap)

    @settings(max_examples=60, deadline=None)
    @given(S.E2AP_MESSAGES[cls])
    def run(msg: e2ap.E2apMessage) -> None:
        ours = e2ap.encode_e2ap(msg)
        ref.from_aper(ours)
        assert ref.get_val() == codec.decode("E2AP-PDU", ours)
        assert ref.to_aper() == ours

    run()


@given(st.data())
@settings(max_examples=10, deadline=None)
def test_reference_bytes_decode_identically(reference_e2ap: Any, data: st.DataObject) -> None:
    """And the other way: bytes the reference encoder made decode to the same value here."""
    msg = data.draw(S.e2ap_messages)
    ref = _reference_pdu(reference_e2ap)
    ref.set_val(e2ap.to_asn(msg))
    theirs = ref.to_aper()
    assert e2ap.decode_e2ap(theirs) == msg


def test_procedures_octoric_leaves_out_still_decode_generically(reference_e2ap: Any) -> None:
    """A subscription modification (not in octoric's subset) from a peer: the generic codec
    and the JSON view keep it as bytes and re-encode it exactly; the dataclass API refuses it
    with a clear error."""
    ref = _reference_pdu(reference_e2ap)
    ies_ = [
        {
            "id": 29,
            "criticality": "reject",
            "value": ("RICrequestID", {"ricRequestorID": 1, "ricInstanceID": 2}),
        },
        {"id": 5, "criticality": "reject", "value": ("RANfunctionID", 2)},
    ]
    ref.set_val(
        (
            "initiatingMessage",
            {
                "procedureCode": 14,
                "criticality": "reject",
                "value": ("RICsubscriptionModificationRequest", {"protocolIEs": ies_}),
            },
        )
    )
    raw = ref.to_aper()
    assert codec.encode("E2AP-PDU", codec.decode("E2AP-PDU", raw)) == raw
    js = jsonconv.decode_to_json("E2AP-PDU", raw)
    assert isinstance(js[1]["value"], str)
    assert jsonconv.encode_from_json("E2AP-PDU", js) == raw
    with pytest.raises(E2smDecodeError, match="procedure code 14 is not supported"):
        e2ap.decode_e2ap(raw)
