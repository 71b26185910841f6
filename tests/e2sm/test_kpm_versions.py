"""E2SM-KPM v02.03, v03.00 and v05.00 beside v04.00 (issue #15): hand-made vectors of each
version (bytes written out from X.691 aligned PER, field by field), the version a node's E2
Setup announces, what each version may carry, and (where ../shared has the O-RAN module) a
cross-check of v03.00 against asn1tools compiled from the reference text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from octoric.e2sm import codec, e2ap, kpm
from octoric.e2sm import kpm_version as kv
from octoric.e2sm.common import Cgi, Guami, RanFunctionName, UeId, ntp_timestamp
from octoric.e2sm.errors import E2smDecodeError, E2smEncodeError
from octoric.e2sm.indication import collect_start_generic, collect_start_of, parse_indication
from octoric.e2sm.kpm_version import KpmVersion

pytestmark = pytest.mark.unit
V2, V3, V4, V5 = KpmVersion.V2_03, KpmVersion.V3_00, KpmVersion.V4_00, KpmVersion.V5_00
REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "asn1"

# 2023-11-14 22:13:20.5 UTC: NTP seconds 3908988800 = 0xE8FE6F80, fraction 0.5 = 0x80000000
UNIX = 1_700_000_000.5
NTP = bytes.fromhex("e8fe6f8080000000")


# --- the indication header: the one root difference (v02.03 TimeStamp, 4 octets) ----------


def test_v2_header_is_the_preamble_and_the_ntp_seconds() -> None:
    # preamble: SEQUENCE ext 0 | CHOICE ext 0 (one root alternative: no index bits) |
    # Format1 ext 0 | 4 absent optionals | 1 pad bit = 0x00,
    # then TimeStamp SIZE(4): fixed size, no length, octet aligned
    v2 = bytes.fromhex("00e8fe6f80")
    h = kpm.KpmIndicationHeader(NTP)
    assert kpm.encode_kpm(h, V2) == v2
    assert kpm.encode_kpm(h, V3) == kpm.encode_kpm(h, V4) == kpm.encode_kpm(h, V5) == b"\0" + NTP
    back = kpm.decode_kpm(kpm.KpmIndicationHeader, v2, V2)
    assert back.collect_start_time == NTP[:4] + bytes(4)  # whole seconds
    assert back.unix_time == 1_700_000_000.0
    with pytest.raises(E2smDecodeError):  # v04's 8-octet stamp cannot be read from 5 bytes
        kpm.decode_kpm(kpm.KpmIndicationHeader, v2, V4)
    with pytest.raises(E2smDecodeError, match="trailing"):  # nor v02's from 9
        kpm.decode_kpm(kpm.KpmIndicationHeader, b"\0" + NTP, V2)


def test_v2_header_with_an_optional_string() -> None:
    # preamble 0x10: ext 0, ext 0, ext 0, optionals 1000 (fileFormatversion), pad; TimeStamp;
    # fileFormatversion PrintableString (SIZE(0..15, ...)): ext 0, length 3 in 4 bits (0011),
    # pad 3 bits -> 0x18; ub 15 x 8 bits > 16, so the characters are octet-aligned, 8 bits each
    v2 = bytes.fromhex("10e8fe6f8018312e30")
    h = kpm.KpmIndicationHeader(NTP[:4] + bytes(4), file_format_version="1.0")
    assert kpm.encode_kpm(h, V2) == v2
    assert kpm.decode_kpm(kpm.KpmIndicationHeader, v2, V2) == h
    # the same header in v04.00: the 8-octet stamp in between
    v4 = bytes.fromhex("10e8fe6f800000000018312e30")
    assert kpm.encode_kpm(h, V4) == v4
    # the columnar reader takes either, the node's version first
    for hdr, version in ((v2, V2), (v4, V4), (v2, V4), (v4, V2)):
        assert collect_start_of(hdr, version) == 1_700_000_000.0


@pytest.mark.parametrize("hdr", [b"\0" + NTP, b"\0" + NTP[:4], b"\0" * 5, b"\0" * 9])
def test_header_fast_forms_equal_the_generic_decoder(hdr: bytes) -> None:
    assert collect_start_of(hdr) == collect_start_generic(hdr)


def test_a_header_no_version_reads_is_an_error() -> None:
    for bad in (b"", b"\0" * 3, b"\0" * 7, b"\x80" + NTP):
        with pytest.raises(E2smDecodeError):
            collect_start_of(bad)


# --- v03.00: v04.00 minus extension additions ---------------------------------------------

# ActionDefinition style 2 (Format 2, one UE: gNB-UEID with AMF-UE-NGAP-ID 1, GUAMI
# 00f110/1/1/1, RAN UE ID 1), measurement "DRB.UEThpDl", granularity 1000 ms: the same bytes
# in v02.03, v03.00, v04.00 and v05.00 (asn1tools from each version's text gives these, too).
STYLE2 = bytes.fromhex(
    "000102201000010000f110010041000000000000000100000000a04452422e5545546870446c012000004003e7"
)


def test_the_same_action_definition_bytes_in_every_version() -> None:
    d = kpm.decode_kpm(kpm.KpmActionDefinition, STYLE2)
    assert d.style == 2 and isinstance(d.format, kpm.ActionFormat2)
    ue = d.format.ue_id
    assert (ue.amf_ue_ngap_id, ue.guami, ue.ran_ueid) == (
        1,
        Guami(b"\x00\xf1\x10", 1, 1, 1),
        bytes(7) + b"\x01",
    )
    assert d.format.subscription.measurements == (kpm.MeasInfo("DRB.UEThpDl"),)
    assert d.format.subscription.granularity_ms == 1000
    for v in KpmVersion:
        assert kpm.encode_kpm(d, v) == STYLE2


def test_v4_additions_are_refused_for_older_nodes() -> None:
    cgi = Cgi(b"\x00\xf1\x10", 0x123456789)
    labelled = kpm.KpmActionDefinition(
        1,
        kpm.ActionFormat1(
            (
                kpm.MeasInfo(
                    "DRB.UEThpDl", (kpm.MeasLabel(False, other={"cellGlobalID": cgi.to_asn()}),)
                ),
            ),
            10,
        ),
    )
    assert kv.needs(labelled.to_asn()) is V4
    for old in (V2, V3):
        with pytest.raises(E2smEncodeError, match=r"needs E2SM-KPM v04\.00"):
            kpm.encode_kpm(labelled, old)
    assert kpm.encode_kpm(labelled, V4) == kpm.encode_kpm(labelled, V5)
    # the cell of ActionDefinition-Format1 itself is in every version's root
    plain = kpm.action_definition_style1(["DRB.UEThpDl"], 10, cgi)
    assert kv.needs(plain.to_asn()) is V2
    not_satisfied = kpm.KpmIndicationMessage(
        kpm.IndicationFormat1((kpm.MeasRecord((kpm.NOT_SATISFIED,)),))
    )
    assert kv.needs(not_satisfied.to_asn()) is V4


# --- v05.00: jobs ------------------------------------------------------------------------------


def _format1() -> kpm.IndicationFormat1:
    return kpm.IndicationFormat1((kpm.MeasRecord((7,)),), (kpm.MeasInfo("a"),), 1000)


def test_v5_job_id_vector() -> None:
    # SEQUENCE preamble: ext 1 (jobID present), CHOICE ext 0, index 0 (Format1 of 2), pad
    # -> 0x80 ... the Format1 ... then the extension: bitmap length-1 = 0 (7 bits 0000000),
    # bit 1 (jobID present), open type: length 2, INTEGER (1..65535) = 7 -> 7-1 = 6 in 2 octets
    m = kpm.KpmIndicationMessage(_format1(), job_id=7)
    b = kpm.encode_kpm(m, V5)
    f1 = kpm.encode_kpm(kpm.KpmIndicationMessage(_format1()), V4)
    assert b[0] == f1[0] | 0x80
    assert b[1:-4] == f1[1:]
    assert b[-4:] == bytes.fromhex("01020006")
    assert kpm.decode_kpm(kpm.KpmIndicationMessage, b) == m
    with pytest.raises(E2smEncodeError, match=r"needs E2SM-KPM v05\.00"):
        kpm.encode_kpm(m, V4)


def test_v5_format255_message_and_columns() -> None:
    inner = kpm.IndicationFormat3(
        (kpm.UeReport(UeId.gnb(5, Guami(b"\x00\xf1\x10", 1, 1, 0)), _format1()),)
    )
    m = kpm.KpmIndicationMessage(
        kpm.IndicationFormat255(
            ((3, kpm.KpmIndicationMessage(inner)), (4, kpm.KpmIndicationMessage(_format1())))
        )
    )
    b = kpm.encode_kpm(m, V5)
    # CHOICE: ext 1, then the extension alternative's index as a normally small number:
    # 0 (index) + 1 (Format255 is the 2nd addition) -> 0b1_0_000001 then open type
    assert b[0] >> 6 == 0b01  # SEQUENCE ext 0, CHOICE ext 1
    assert kpm.decode_kpm(kpm.KpmIndicationMessage, b) == m
    for older in (V2, V3, V4):  # the v04 check reads the top only; older ones walk it all
        with pytest.raises(E2smEncodeError, match=r"needs E2SM-KPM v05\.00"):
            kpm.encode_kpm(m, older)
    cols = parse_indication(b"\0" + ntp_timestamp(UNIX), b)
    assert [u.amf_ue_ngap_id if u else None for u in cols.ue_ids] == [5, None]
    assert np.array_equal(cols.values[:, 0, 0], [7.0, 7.0])


def test_v5_ran_function_definition_is_announced_as_v5() -> None:
    base = kpm.octoric_ran_function_definition()
    d = kpm.KpmRanFunctionDefinition(
        RanFunctionName("ORAN-E2SM-KPM", kv.OID_V3, "KPM Monitor"),
        base.event_trigger_styles,
        base.report_styles,
        (
            kpm.IntegratedReportStyle(
                6, "jobs", other={"ric-CommonActionDefinitionSupport": "true"}
            ),
        ),
    )
    b = kpm.encode_kpm(d, V5)
    with pytest.raises(E2smEncodeError):
        kpm.encode_kpm(d, V4)
    back = kpm.decode_kpm(kpm.KpmRanFunctionDefinition, b)
    assert back == d
    assert kv.announced(kv.OID_V3, back) is V5
    # a v4 definition differs only by the extension bit and what follows it
    v4 = kpm.encode_kpm(
        kpm.KpmRanFunctionDefinition(d.name, d.event_trigger_styles, d.report_styles)
    )
    assert b[0] == v4[0] | 0x80


# --- what a node announces --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("oid", "short", "expected"),
    [
        (kv.OID_V2, "ORAN-E2SM-KPM", V2),  # v02.0x nodes (and srsRAN_Project, which writes v04)
        (kv.OID_V3, "ORAN-E2SM-KPM", V3),  # v03.00 and later
        (kv.OID_V2, "ORAN-E2SM-KPM-v02.03", V2),  # FlexRIC's short names
        (kv.OID_V3, "ORAN-E2SM-KPM-v03.00", V3),
        (kv.OID_V3, "ORAN-E2SM-KPM-v05.00", V5),
    ],
)
def test_announced_version(oid: str, short: str, expected: KpmVersion) -> None:
    d = kpm.KpmRanFunctionDefinition(RanFunctionName(short, oid, "KPM Monitor"))
    assert (
        kv.announced(oid, kpm.decode_kpm(kpm.KpmRanFunctionDefinition, kpm.encode_kpm(d)))
        is expected
    )
    assert kv.is_kpm(oid)


def test_version_parse() -> None:
    assert KpmVersion.parse("2.03") is V2 and KpmVersion.parse("v02.03") is V2
    assert KpmVersion.parse("v5") is V5 and KpmVersion.parse("4.00") is V4
    with pytest.raises(ValueError, match="unknown E2SM-KPM version"):
        KpmVersion.parse("6.00")
    assert V2 < V3 < V4 < V5


# --- a whole RIC indication of a v02.03 node --------------------------------------------------


def test_v2_ric_indication_through_the_native_and_python_paths() -> None:
    from octoric.e2sm.fastenc import Format3Encoder, encode_indication_header
    from octoric.e2sm.indication import default_decoder, parse_ric_indication
    from octoric.xapps.occ.kpm_input import engine_input

    ues = [UeId.gnb(100 + i, Guami(b"\x00\xf1\x10", 1, 1, 0)) for i in range(3)]

    values = np.arange(3 * 10 * len(kpm.OCC_MEASUREMENTS), dtype=np.float64).reshape(
        3, 10, len(kpm.OCC_MEASUREMENTS)
    )  # (UEs, granules, measurements)
    msg = Format3Encoder(kpm.OCC_MEASUREMENTS, 1).encode(ues, values)
    for octets, start in ((4, 1_700_000_000.0), (8, UNIX)):
        hdr = encode_indication_header(NTP, octets)
        pdu = e2ap.encode_e2ap(e2ap.RicIndication(e2ap.RicRequestId(1, 1), 2, 1, hdr, msg, sn=1))
        _, cols = parse_ric_indication(pdu)
        assert cols.collect_start == start
        native = getattr(default_decoder(), "decode_ric_indication", None)
        if native is not None:
            got = native(pdu, None)
            assert got is not None and got[1].collect_start == start
        inp = engine_input(pdu, 1, None, V2 if octets == 4 else V4)
        assert inp.t0_ms == round(start * 1000)
        assert list(inp.ue_ids) == [100, 101, 102]


# --- v03.00 against the O-RAN reference text ------------------------------------------------


@pytest.mark.skipif(
    not (REFERENCE / "e2sm-kpm-v03.00.asn").exists(), reason="../shared/reference/asn1 not here"
)
def test_v3_encodings_read_by_asn1tools_from_the_v03_00_text() -> None:
    asn1tools = pytest.importorskip("asn1tools")
    spec = asn1tools.compile_files([str(REFERENCE / "e2sm-kpm-v03.00.asn")], "per")
    guami = Guami(b"\x00\xf1\x10", 1, 1, 0)
    enc = _format3_message(guami)
    pdus = [
        ("E2SM-KPM-EventTriggerDefinition", kpm.KpmEventTrigger(10)),
        ("E2SM-KPM-ActionDefinition", kpm.action_definition_style4()),
        ("E2SM-KPM-ActionDefinition", kpm.decode_kpm(kpm.KpmActionDefinition, STYLE2)),
        ("E2SM-KPM-IndicationHeader", kpm.KpmIndicationHeader(NTP)),
        ("E2SM-KPM-IndicationMessage", enc),
        ("E2SM-KPM-RANfunction-Description", kpm.octoric_ran_function_definition()),
    ]
    for type_name, pdu in pdus:
        ours = kpm.encode_kpm(pdu, V3)
        value = spec.decode(type_name, ours)
        assert spec.encode(type_name, value) == ours, type_name


def _format3_message(guami: Guami) -> kpm.KpmIndicationMessage:
    reports = tuple(
        kpm.UeReport(
            UeId.gnb(i, guami),
            kpm.IndicationFormat1(
                (kpm.MeasRecord((i, 2.5, None)),),
                (kpm.MeasInfo("a"), kpm.MeasInfo("b"), kpm.MeasInfo("c")),
                1,
            ),
        )
        for i in (1, 2)
    )
    return kpm.KpmIndicationMessage(kpm.IndicationFormat3(reports))


def test_codec_variants_name_only_the_v2_header_types() -> None:
    assert set(codec.VARIANTS[codec.KPM_V2]) == {
        "TimeStamp",
        "E2SM-KPM-IndicationHeader",
        "E2SM-KPM-IndicationHeader-Format1",
    }
