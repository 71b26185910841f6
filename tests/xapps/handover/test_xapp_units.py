"""The handover xApp's parts in process: 30501s that find no route yet are sent later in
order, or given up after ``event_retry_s``; controls; the descriptor and its schema."""

from __future__ import annotations

import json
import time
from dataclasses import fields
from pathlib import Path

import jsonschema
import pytest
from ricsdl.syncstorage import SyncStorage

from octoric.contracts.ho_event import HoEvent, parse_ho_event
from octoric.redis_server import free_port
from octoric.xapps.base.config import typed_controls
from octoric.xapps.base.errors import XappConfigError
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.handover.xapp import HandoverXapp
from octoric.xapps.handover.xapp_config import HandoverXappConfig

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def ho() -> HandoverXapp:
    sdl = SdlStore("handover", storage=SyncStorage(fake_db_backend="dict"))
    return HandoverXapp(free_port(), free_port(), sdl=sdl, clock=lambda: 1000)


def test_events_without_a_route_are_sent_later_in_order(
    ho: HandoverXapp, monkeypatch: pytest.MonkeyPatch
) -> None:
    out: list[tuple[int, str]] = []
    route = {"up": False}

    def send(
        mtype: int, payload: bytes, meid: str | None = None, retries: int = 3, xact: bool = True
    ) -> bool:
        if not route["up"]:
            return False
        ev = parse_ho_event(payload)
        out.append((ev.ue, ev.event))
        return True

    monkeypatch.setattr(ho.shell, "send", send)
    assert not ho.publish(HoEvent(1, "start", 1000), "gnb_a")
    assert not ho.publish(HoEvent(1, "complete", 1000), "gnb_a")
    assert ho.counters["events_unsent"] == 2 and ho.status()["events_waiting"] == 2
    route["up"] = True  # the receivers registered: the next event takes the queue along
    assert ho.publish(HoEvent(2, "start", 1000), "gnb_a")
    assert out == [(1, "start"), (1, "complete"), (2, "start")] and ho.counters["events_sent"] == 3
    # too old: given up, never sent out of date
    route["up"] = False
    ho.cfg = HandoverXappConfig(event_retry_s=0.01)
    ho.publish(HoEvent(2, "complete", 1000), "gnb_a")
    time.sleep(0.02)
    route["up"] = True
    with ho._send_lock:
        assert ho._send_unsent()
    assert ho.counters["events_dropped"] == 1 and out[-1] == (2, "start")
    assert ho.events == {"start": 2, "complete": 2}


def test_controls() -> None:
    c = typed_controls(HandoverXappConfig, {"nodes": ["gnb_a"], "forget_s": 5})
    assert c.nodes == ("gnb_a",) and c.forget_s == 5.0
    for bad in ({"forget_s": 0}, {"discovery_period_s": 0.0}, {"event_retry_s": -1},
                {"subscription_timeout_s": 0}, {"colour": 1}, {"detection": "both"},
                {"kpm_period_ms": 100, "kpm_granularity_ms": 30}, {"ping_pong_s": 0}):  # fmt: skip
        with pytest.raises(XappConfigError):
            typed_controls(HandoverXappConfig, bad)


def test_apply_config(ho: HandoverXapp) -> None:
    d = json.loads((REPO / "xapps/handover/config-file.json").read_text())
    d["controls"]["forget_s"] = 2.5
    ho.apply_config(d)
    assert ho.detector.forget_ms == 2500 and ho.node_subs.period_s == 1.0


def test_descriptor_against_oran_sc_schema(shared_dir: Path) -> None:
    schema = json.loads(
        (shared_dir / "reference/oran-sc/xapp-descriptor-embedded-schema.json").read_text()
    )
    controls = json.loads((REPO / "xapps/handover/schema.json").read_text())
    schema["properties"]["controls"] = controls
    d = json.loads((REPO / "xapps/handover/config-file.json").read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [e.message for e in validator.iter_errors(d)] == []
    assert set(controls["properties"]) == {f.name for f in fields(HandoverXappConfig)}
    rmr = next(p for p in d["messaging"]["ports"] if p["name"] == "rmr-data")
    assert rmr["rxMessages"] == ["RIC_INDICATION"] and rmr["txMessages"] == ["OCTORIC_HO_EVENT"]


def test_run_gives_the_xapp_its_controls_and_event_log(tmp_path: Path) -> None:
    """``octoric run``: ``xapps.controls.<name>`` over the descriptor's, the event log in the
    run folder; controls for an xApp that is not enabled are a clear error."""
    from octoric import config
    from octoric.deploy.xapps_component import KNOWN, components, descriptor_for
    from octoric.errors import OctoricError
    from octoric.supervisor import RunContext

    spec = KNOWN["handover"]
    d = descriptor_for(spec, 5000, 5002, {"detection": "kpm", "event_log": "/x/e.jsonl"})
    assert d["controls"]["detection"] == "kpm" and d["controls"]["forget_s"] == 60.0
    c = typed_controls(HandoverXappConfig, d["controls"])
    assert (c.detection, c.event_log) == ("kpm", "/x/e.jsonl")
    assert dict(spec.run_files) == {"event_log": "handover-events.jsonl"}
    cfg = config.load(overrides=["xapps.enabled=[occ]", "xapps.controls.handover.detection=kpm"])
    with pytest.raises(OctoricError, match=r"xapps\.controls\.handover: no such xApp"):
        components(RunContext(cfg, tmp_path))


def test_event_log_appends_json_lines_and_counts_failures(ho: HandoverXapp, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    ho.cfg = HandoverXappConfig(event_log=str(path))
    evs = [HoEvent(1, "start", 1000, path="kpm"), HoEvent(1, "complete", 1090, path="kpm")]
    ho._log_events(evs)
    ho._log_events(evs[:1])
    lines = [parse_ho_event(x.encode()) for x in path.read_text().splitlines()]
    assert lines == [*evs, evs[0]]
    ho.cfg = HandoverXappConfig(event_log=str(tmp_path / "no" / "such" / "dir.jsonl"))
    ho._log_events(evs)  # never raised into detection
    assert ho.counters["event_log_errors"] == 1
