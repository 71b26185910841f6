"""Property tests: every PDU type octoric uses survives encode -> decode unchanged, through the
dataclass API and through the JSON convention."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from testkit import strategies as S

from octoric.e2sm import codec, e2ap, jsonconv, kpm, rc

pytestmark = pytest.mark.unit
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("cls", list(S.E2AP_MESSAGES), ids=lambda c: c.__name__)
def test_e2ap_round_trip(cls: type) -> None:
    @SETTINGS
    @given(S.E2AP_MESSAGES[cls])
    def run(msg: e2ap.E2apMessage) -> None:
        raw = e2ap.encode_e2ap(msg)
        back = e2ap.decode_e2ap(raw)
        assert type(back) is cls
        assert back == msg
        assert e2ap.encode_e2ap(back) == raw

    run()


def test_every_e2ap_message_has_a_strategy() -> None:
    assert set(S.E2AP_MESSAGES) == set(e2ap.MESSAGE_TYPES)


@pytest.mark.parametrize("type_name", sorted(S.KPM_PDUS))
def test_kpm_round_trip(type_name: str) -> None:
    @SETTINGS
    @given(S.KPM_PDUS[type_name])
    def run(pdu: Any) -> None:
        raw = kpm.encode_kpm(pdu)
        assert kpm.decode_kpm(type(pdu), raw) == pdu

    run()


@pytest.mark.parametrize("type_name", sorted(S.RC_PDUS))
def test_rc_round_trip(type_name: str) -> None:
    @SETTINGS
    @given(S.RC_PDUS[type_name])
    def run(pdu: Any) -> None:
        raw = rc.encode_rc(pdu)
        assert rc.decode_rc(type(pdu), raw) == pdu

    run()


@SETTINGS
@given(S.e2ap_messages)
def test_json_round_trip_e2ap(msg: e2ap.E2apMessage) -> None:
    raw = e2ap.encode_e2ap(msg)
    js = json.loads(json.dumps(jsonconv.decode_to_json("E2AP-PDU", raw)))
    assert jsonconv.encode_from_json("E2AP-PDU", js) == raw


@pytest.mark.parametrize("type_name", sorted({**S.KPM_PDUS, **S.RC_PDUS}))
def test_json_round_trip_e2sm(type_name: str) -> None:
    strategy = {**S.KPM_PDUS, **S.RC_PDUS}[type_name]

    @settings(max_examples=20, deadline=None)
    @given(strategy)
    def run(pdu: Any) -> None:
        raw = codec.encode(type_name, pdu.to_asn())
        js = json.loads(json.dumps(jsonconv.decode_to_json(type_name, raw)))
        assert jsonconv.encode_from_json(type_name, js) == raw

    run()


def test_e2sm_payloads_are_shown_decoded_in_json() -> None:
    trigger = kpm.encode_kpm(kpm.KpmEventTrigger(10))
    action = kpm.encode_kpm(kpm.action_definition_style4())
    msg = e2ap.RicSubscriptionRequest(
        e2ap.RicRequestId(1, 2),
        kpm.RAN_FUNCTION_ID,
        e2ap.RicSubscriptionDetails(trigger, (e2ap.RicActionToBeSetup(1, "report", action),)),
    )
    js = jsonconv.decode_to_json("E2AP-PDU", e2ap.encode_e2ap(msg))
    text = json.dumps(js)
    assert '["E2SM-KPM-EventTriggerDefinition", {"eventDefinition-formats"' in text
    assert '"E2SM-KPM-ActionDefinition"' in text
    assert "OCC.DlBufferBytes" in text
    assert jsonconv.encode_from_json("E2AP-PDU", js) == e2ap.encode_e2ap(msg)
