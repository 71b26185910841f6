"""OCC xApp pieces without processes: flow validation, 30500/30501 payloads against their
schemas, controls, indication -> engine input, and engine checkpoints."""

from __future__ import annotations

import io
import json
import zlib
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from octoric.contracts import ue_key
from octoric.contracts.ho_event import HoEvent, HoEventError, parse_ho_event
from octoric.contracts.schemas import load as load_schema
from octoric.e2sm import e2ap
from octoric.e2sm.e2ap_ies import RicRequestId
from octoric.xapps.base.config import typed_controls
from octoric.xapps.base.errors import RestError, XappConfigError
from octoric.xapps.occ import OccConfig, OccEngine
from octoric.xapps.occ.flows import Flow, parse_flow
from octoric.xapps.occ.kpm_input import IndicationError, engine_input, without_rows
from octoric.xapps.occ.messages import abw_report
from octoric.xapps.occ.persist import fingerprint, pack_state, unpack_state
from octoric.xapps.occ.synthetic import random_batch
from octoric.xapps.occ.xapp_config import OccXappConfig

from .kpm_source import OccIndications

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[3]


def test_flow_parse_ok_and_round_trip() -> None:
    f = parse_flow(
        {
            "ue": 5,
            "address": "127.0.0.1:6000",
            "format": "remb",
            "ssrcs": [1, 2],
            "guami": "00F110:1:1:0",
        }
    )
    assert (f.ue, f.host, f.port, f.ssrcs, f.guami) == (
        5,
        "127.0.0.1",
        6000,
        (1, 2),
        "00f110:1:1:0",
    )
    assert Flow.from_json(json.loads(json.dumps(f.to_json()))) == f
    g = parse_flow({"id": "x-1", "ue": 5, "address": "[::1]:6000", "format": "json"})
    assert g.host == "::1" and g.address == "[::1]:6000"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ([], "bad_flow_body"),
        ({"ue": 1, "address": "h:1", "format": "json", "x": 1}, "bad_flow_body"),
        ({"ue": True, "address": "h:1", "format": "json"}, "bad_flow_ue"),
        ({"ue": ue_key.UE_KEY_MAX + 1, "address": "h:1", "format": "json"}, "bad_flow_ue"),
        ({"ue": 1, "address": "h", "format": "json"}, "bad_flow_address"),
        ({"ue": 1, "address": "bad host!:1", "format": "json"}, "bad_flow_address"),
        ({"ue": 1, "address": "h:0", "format": "json"}, "bad_flow_address"),
        ({"ue": 1, "address": "h:1", "format": "JSON"}, "bad_flow_format"),
        ({"ue": 1, "address": "h:1", "format": "remb", "ssrcs": [2**32]}, "bad_flow_ssrcs"),
        ({"ue": 1, "address": "h:1", "format": "json", "guami": "x"}, "bad_flow_guami"),
        ({"id": "no spaces", "ue": 1, "address": "h:1", "format": "json"}, "bad_flow_id"),
        (
            {"ue": 1, "address": "h:1", "format": "remb", "ssrcs": [1], "sender_ssrc": -1},
            "bad_flow_sender_ssrc",
        ),
    ],
)
def test_flow_parse_rejects(body: object, reason: str) -> None:
    with pytest.raises(RestError) as e:
        parse_flow(body)
    assert e.value.status == 400 and e.value.reason == reason


def test_abw_report_matches_schema() -> None:
    eng = OccEngine()
    rng = np.random.default_rng(1)
    ids = np.array([3, 4, 5])
    for i in range(20):
        batch = eng.ingest(ids, 1000 + 10 * i, random_batch(rng, 3, 10))
    rep = abw_report(batch, "gnb_001_001_00019b", 7, 19, 10, ["00f110:1:1:0", None, None], 1.0)
    jsonschema.validate(rep, load_schema("abw_report"))
    assert (
        rep["t0_ms"] == 1190 and rep["t_ms"] == 1199 and [u["ue"] for u in rep["ues"]] == [3, 4, 5]
    )
    json.dumps(rep, allow_nan=False)


def test_ho_event_parse() -> None:
    for ev in (
        HoEvent(9, "start", 123, source_meid="a", target_meid="b", id="9:123:start", path="rc"),
        HoEvent(9, "failure", 200, cause="radio-link-failure-reestablished", interruption_ms=1.5,
                started_ms=123),
    ):  # fmt: skip
        jsonschema.validate(ev.to_json(), load_schema("ho_event"))
        assert parse_ho_event(json.dumps(ev.to_json()).encode()) == ev
    for payload, reason in [
        (b"nope", "not_json"),
        (b"[]", "not_object"),
        (b'{"version": 1, "ue": 1, "event": "start"}', "version"),
        (b'{"version": 2, "ue": -1, "event": "start"}', "ue"),
        (b'{"version": 2, "ue": 1, "event": "begin"}', "event"),
        (b'{"version": 2, "ue": 1, "event": "end"}', "event"),  # version 1's; now complete
        (b'{"version": 2, "ue": 1, "event": "complete", "t_ms": "x"}', "t_ms"),
        (b'{"version": 2, "ue": 1, "event": "complete", "guami": 5}', "guami"),
        (b'{"version": 2, "ue": 1, "event": "failure", "path": "x2"}', "path"),
        (b'{"version": 2, "ue": 1, "event": "complete", "interruption_ms": -1}', "interruption_ms"),
    ]:
        with pytest.raises(HoEventError) as e:
            parse_ho_event(payload)
        assert e.value.reason == reason


def test_controls() -> None:
    d = json.loads((REPO / "xapps/occ/config-file.json").read_text())
    cfg = typed_controls(OccXappConfig, d["controls"])
    assert cfg.reporting_period_ms == 10 and cfg.occ_config().beta == 0.1
    for bad, field in [
        ({"reporting_period_ms": "10"}, "controls.reporting_period_ms"),
        ({"granularity_ms": 10}, "controls.granularity_ms"),
        ({"report_style": 1}, "controls.report_style"),
        ({"measurements": ["DRB.UEThpDl"]}, "controls.measurements"),
        ({"engine": {"beta": 2}}, "controls.engine.beta"),
        ({"engine": {"gamma": 2}}, "controls.engine"),
        ({"colour": 1}, "controls.colour"),
    ]:
        with pytest.raises(XappConfigError) as e:
            typed_controls(OccXappConfig, bad)
        assert e.value.field == field, (bad, e.value)


class _Sub:
    request_id = RicRequestId(123, 5)


def _pdu(header: bytes, message: bytes, sn: int, ranf: int = 2) -> bytes:
    return e2ap.encode_e2ap(
        e2ap.RicIndication(RicRequestId(123, 5), ranf, 1, header, message, sn=sn)
    )


def test_engine_input_and_rejections() -> None:
    src = OccIndications([11, 12], pool_periods=2)
    h, m = src(_Sub, 0)
    inp = engine_input(_pdu(h, m, 0))
    assert (
        inp.ue_ids.tolist() == [11, 12]
        and inp.n_granules == 10
        and inp.metrics["RRU.PrbUsedDl"].shape == (2, 10)
    )
    assert inp.guamis == ["00f110:1:1:0"] * 2
    assert without_rows(inp, (11,), "x").ue_ids.tolist() == [12]  # type: ignore[union-attr]
    assert without_rows(inp, (11, 12), "x") is None
    for mode in ("missing_metric", "granularity", "unknown_ue"):
        src.malformed(mode, 1)
        with pytest.raises(IndicationError) as e:
            engine_input(_pdu(*src(_Sub, 1), 1))
        assert e.value.reason == mode
    with pytest.raises(IndicationError) as e:
        engine_input(b"\x00\x01garbage")
    assert e.value.reason == "undecodable"
    with pytest.raises(IndicationError) as e:
        engine_input(_pdu(h, m, 0, ranf=3))
    assert e.value.reason == "not_kpm"


def test_ues_a_du_names_by_f1ap_id_are_keyed_by_node() -> None:
    """srsRAN's DU names UEs by gNB-CU-UE-F1AP-ID only (UEID-GNB-DU): each row gets the key
    of its node and F1AP ID, so two DUs' UE 0 are two UEs, and a flow can name that key."""
    header, msg = OccIndications([0, 1], ue_kind="gNB-DU-UEID")(_Sub, 0)
    a = engine_input(_pdu(header, msg, 0), meid="gnb_001_001_00019b")
    b = engine_input(_pdu(header, msg, 0), meid="gnb_001_001_00019c")
    assert a.ue_ids.tolist() == [ue_key.du_key("gnb_001_001_00019b", i) for i in (0, 1)]
    assert set(a.ue_ids.tolist()).isdisjoint(b.ue_ids.tolist()) and a.guamis == [None, None]
    assert not a.dropped and min(a.ue_ids.tolist()) > ue_key.AMF_UE_NGAP_ID_MAX
    assert ue_key.du_parts(int(a.ue_ids[1])) == (ue_key.tag("gnb_001_001_00019b"), 1)
    assert ue_key.on_node(int(a.ue_ids[1]), "gnb_001_001_00019b")
    assert not ue_key.on_node(int(a.ue_ids[1]), "gnb_001_001_00019c")
    flow = parse_flow({"ue": int(a.ue_ids[1]), "address": "h:1", "format": "json"})
    assert flow.ue == int(a.ue_ids[1])
    assert max(ue_key.du_key(m, ue_key.F1AP_ID_MAX) for m in ("a", "b", "c")) < 2**53


def test_checkpoint_resume_is_exact() -> None:
    """A UE restored from a checkpoint continues exactly as if nothing had happened."""
    rng = np.random.default_rng(7)
    ids = np.array([1, 2, 3])
    data = [random_batch(rng, 3, 10) for _ in range(120)]
    a = OccEngine()
    for i in range(60):
        a.ingest(ids, 10 * i, data[i])
    fp = fingerprint(a.config)
    b = OccEngine()
    for u in ids.tolist():
        state = unpack_state(pack_state(a.export_ue(u), fp), fp)  # type: ignore[arg-type]
        assert state is not None
        b.import_ue(u, state)
    assert b.latest(2) == a.latest(2)
    for i in range(60, 120):
        ra, rb = a.ingest(ids, 10 * i, data[i]), b.ingest(ids, 10 * i, data[i])
        np.testing.assert_array_equal(ra.target_bps_granules, rb.target_bps_granules)
        np.testing.assert_array_equal(ra.fallback, rb.fallback)
    # another configuration's checkpoint is not used
    other = fingerprint(OccConfig(beta=0.2))
    assert unpack_state(pack_state(a.export_ue(1), fp), other) is None  # type: ignore[arg-type]
    assert unpack_state(b"garbage", fp) is None
    # export_states (the checkpoint's) holds exactly export_ue of every UE, row by row
    ues, states = a.export_states()
    assert sorted(ues) == [1, 2, 3]
    for i, u in enumerate(ues):
        one = a.export_ue(u)
        assert one is not None and set(one) == set(states)
        for k, v in one.items():
            np.testing.assert_array_equal(states[k][i], v)
        back = unpack_state(pack_state({k: v[i] for k, v in states.items()}, fp), fp)
        assert back is not None
        for k, v in one.items():
            np.testing.assert_array_equal(back[k], v)
            assert back[k].dtype == v.dtype
    # a damaged blob is refused, never half read
    import lz4.block

    packed = pack_state(one, fp)
    raw = lz4.block.decompress(packed[4:])
    for cut in (10, 30, len(raw) - 1):
        assert unpack_state(packed[:4] + lz4.block.compress(raw[:cut]), fp) is None
    assert unpack_state(packed[:4] + lz4.block.compress(raw + b"x"), fp) is None
    assert unpack_state(packed[:-5], fp) is None  # truncated LZ4
    assert unpack_state(packed[:4] + (1 << 30).to_bytes(4, "little") + packed[8:], fp) is None
    # the npz checkpoints of before read as another configuration's: the UE starts afresh
    buf = io.BytesIO()
    np.savez(buf, _fingerprint=np.array(fp), **one)
    assert unpack_state(zlib.compress(buf.getvalue(), 1), fp) is None


def test_descriptor_against_oran_sc_schema(shared_dir: Path) -> None:
    """config-file.json validates against the O-RAN SC descriptor schema, with our controls
    schema (schema.json) in the place the onboarder puts it; every field in schema.json is a
    field the xApp reads."""
    from dataclasses import fields

    from octoric.xapps.occ.config import OccConfig

    schema = json.loads(
        (shared_dir / "reference/oran-sc/xapp-descriptor-embedded-schema.json").read_text()
    )
    controls = json.loads((REPO / "xapps/occ/schema.json").read_text())
    schema["properties"]["controls"] = controls
    d = json.loads((REPO / "xapps/occ/config-file.json").read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [e.message for e in validator.iter_errors(d)] == []
    assert set(controls["properties"]) == {f.name for f in fields(OccXappConfig)}
    assert set(controls["properties"]["engine"]["properties"]) == {
        f.name for f in fields(OccConfig)
    }


def test_run_plugin_picks_free_ports_when_defaults_are_busy() -> None:
    import socket

    from octoric.deploy.xapps_component import XappSpec, pick_ports, port_free
    from octoric.redis_server import free_port

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        spec = XappSpec("x", "m", free_port(), taken, "/s")
        assert not port_free(taken)
        rmr, http = pick_ports(spec)
        assert http != taken and port_free(rmr) and port_free(rmr + 1) and port_free(http)


def test_ue_record_json_is_asdict() -> None:
    """``UeRecord.to_json`` (written by hand for speed) is exactly ``asdict``: every field,
    in order; and ``from_json`` reads it back."""
    from dataclasses import asdict, fields

    from octoric.xapps.occ.records import UeRecord

    vals = [7, "00f110:2:1:1", "gnb_1", 123, 1.5e6, True, False, "radio", 2e6, 3e6, 4e6, 33,
            1.7e9]  # fmt: skip
    rec = UeRecord(*vals)
    assert list(rec.to_json().items()) == list(asdict(rec).items())
    assert [f.name for f in fields(UeRecord)] == list(rec.to_json())
    assert UeRecord.from_json(rec.to_json()) == rec


def test_sdl_record_bytes_read_back_as_json_dumps_would() -> None:
    import json
    import math

    from octoric.xapps.occ.records import UeRecord
    from octoric.xapps.occ.xapp import _record_bytes

    base = [7, None, "gnb_1", 123, 1.5e6, True, False, "radio", 2e6, 3e6, 4e6, 33, 1.7e9]
    for odd in (None, math.nan, math.inf):
        vals = list(base)
        if odd is not None:
            vals[4] = odd  # target_bps
        rec = UeRecord(*vals).to_json()
        back = json.loads(_record_bytes(rec))
        want = json.loads(json.dumps(rec))
        assert back.keys() == want.keys()
        for k in want:
            a, b = back[k], want[k]
            assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), k
