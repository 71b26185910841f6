"""Issue #39: the parts of ``octoric testbed live`` that need no gNB: the gNB config a run writes,
the E2AP pcap reader, the gNB metrics reader, the test UEs from srsRAN's F1AP log, the
injector's packet encodings, and the clear errors for a missing or unpatched gNB."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from pathlib import Path

import pytest
import yaml
from redis.exceptions import TimeoutError as RedisTimeoutError

from octoric.deploy.testbed import e2_capture, gtpu
from octoric.deploy.testbed.gnb import (
    CONFIG_TEMPLATE,
    GnbOptions,
    ModeUe,
    gnb_binary,
    render_config,
    ues_from_f1ap_log,
)
from octoric.deploy.testbed.gnb_metrics import GnbMetrics
from octoric.deploy.testbed.live import (
    LiveChecks,
    abw_vs_gnb,
    e2term_counters,
    occ_delivery,
    ue_roles,
)
from octoric.e2sm import e2ap
from octoric.errors import OctoricError

pytestmark = pytest.mark.unit


def test_run_config_points_the_gnb_at_this_runs_ric(tmp_path: Path) -> None:
    cfg = render_config(GnbOptions(tmp_path, ues_per_cell=3, time_scaling=2.0), tmp_path,
                        ric_port=23456, transport="tcp", ws_port=34567)  # fmt: skip
    assert cfg["e2"]["addr"] == "127.0.0.1"
    assert (cfg["e2"]["port"], cfg["e2"]["transport"]) == (23456, "tcp")
    assert cfg["e2"]["enable_du_e2"] and cfg["e2"]["enable_cu_cp_e2"]
    assert cfg["remote_control"]["port"] == 34567
    assert cfg["test_mode"]["test_ue"]["nof_ues"] == 3
    assert cfg["ru_dummy"]["time_scaling"] == 2.0
    assert cfg["pcap"]["e2ap_enable"] is True
    assert cfg["pcap"]["e2ap_du_filename"] == str(tmp_path / "gnb-e2ap-du.pcap")
    assert cfg["log"]["filename"].startswith(str(tmp_path))
    # the template itself stays loadable YAML with two cells
    tpl = yaml.safe_load(CONFIG_TEMPLATE.read_text())
    assert len(tpl["cells"]) == 2


def test_a_cell_per_ue_layout(tmp_path: Path) -> None:
    """--cells 4 --ues 4: four cells on the template's carrier with distinct PCIs and PRACH
    roots, one test UE each; each UE's role in the summary says whether it is alone."""
    cfg = render_config(GnbOptions(tmp_path, ues_per_cell=1, cells=4), tmp_path,
                        ric_port=23456, transport="tcp", ws_port=34567)  # fmt: skip
    pcis = [c["pci"] for c in cfg["cells"]]
    roots = [c["prach"]["prach_root_sequence_index"] for c in cfg["cells"]]
    assert pcis == [1, 2, 3, 4] and len(set(roots)) == 4
    assert cfg["test_mode"]["test_ue"]["nof_ues"] == 1
    with pytest.raises(OctoricError, match=r"cells must be 1\.\.4"):
        render_config(GnbOptions(tmp_path, cells=5), tmp_path, 1, "tcp", 2)
    ues = [ModeUe(1, 0x4601), ModeUe(2, 0x4602), ModeUe(3, 0x4603), ModeUe(3, 0x4604)]
    roles = ue_roles(ues, video_rnti=0x4601)
    assert roles["0x4601"] == {"pci": 1, "alone": True, "video": True, "with_video": False}
    assert roles["0x4602"]["alone"] and not roles["0x4602"]["video"]
    assert not roles["0x4603"]["alone"] and not roles["0x4604"]["with_video"]
    shared = ue_roles([ModeUe(1, 0x4601), ModeUe(1, 0x4602)], video_rnti=0x4601)
    assert shared["0x4602"]["with_video"] and not shared["0x4602"]["alone"]


def test_a_missing_or_unpatched_gnb_is_named(tmp_path: Path) -> None:
    with pytest.raises(OctoricError, match=r"no gnb at .*build\.sh"):
        gnb_binary(tmp_path)
    exe = tmp_path / "apps" / "gnb" / "gnb"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(b"\x7fELF a gnb without the patch")
    with pytest.raises(OctoricError, match=r"no E2 over TCP .*0011"):
        gnb_binary(tmp_path)
    exe.write_bytes(b"\x7fELF ... Transport to the RIC: sctp, or tcp ...")
    assert gnb_binary(tmp_path) == exe


def _pcap(pdus: list[bytes], linktype: int = e2_capture.E2AP_DLT) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype)
    for i, p in enumerate(pdus):
        out += struct.pack("<IIII", 1700000000 + i, 500, len(p), len(p)) + p
    return out


def _delete_request() -> bytes:
    return e2ap.encode_e2ap(e2ap.RicSubscriptionDeleteRequest(e2ap.RicRequestId(1021, 1), 2))


def test_pcap_records_are_read_and_counted_by_kind(tmp_path: Path) -> None:
    req = _delete_request()
    f = tmp_path / "e2ap.pcap"
    f.write_bytes(_pcap([req, b"\x00\x01", req]) + b"\x01\x02\x03")  # a torn last record
    pdus = e2_capture.read_pdus(f)
    assert [p.data for p in pdus] == [req, b"\x00\x01", req]
    assert pdus[0].t == pytest.approx(1700000000.0005)
    assert e2_capture.tally(f) == {"RicSubscriptionDeleteRequest": 2, "undecodable": 1}
    assert set(e2_capture.samples(f)) == {"RicSubscriptionDeleteRequest"}
    assert e2_capture.tally(tmp_path / "absent.pcap") == {}


def test_a_pcap_of_another_link_type_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "f1ap.pcap"
    f.write_bytes(_pcap([b"\x00"], linktype=154))
    with pytest.raises(e2_capture.PcapError, match="link type 154"):
        e2_capture.read_pdus(f)
    (tmp_path / "x.pcap").write_bytes(b"not a pcap file at all....")
    with pytest.raises(e2_capture.PcapError, match="not a pcap"):
        e2_capture.read_pdus(tmp_path / "x.pcap")


def test_gnb_metrics_average_each_ue_over_a_window(tmp_path: Path) -> None:
    m = GnbMetrics(1, tmp_path / "m.jsonl")
    doc = {"timestamp": "x", "cells": [{"cell_metrics": {"pci": 1}, "ue_list": [
        {"rnti": 17921, "pci": 1, "dl_brate": 10e6, "dl_mcs": 27, "dl_bs": 1000}]}]}  # fmt: skip
    m.add(doc)
    doc["cells"][0]["ue_list"][0]["dl_brate"] = 20e6
    m.add(doc)
    m.add({"du": {"du_high": {}}})  # not a scheduler document
    m._flush(123.0)
    assert m.latest()[17921]["dl_brate_bps"] == pytest.approx(15e6)
    assert m.latest()[17921]["reports"] == 2
    assert (tmp_path / "m.jsonl").read_text().count("\n") == 1


def test_test_ues_and_their_f1ap_ids_come_from_srsran_log() -> None:
    t = "2026-11-28T00:40:01.000 [DU-F1   ] [I] "
    log = "\n".join([
        f"{t}ue=0 c-rnti=0x4601 du_ue=0: F1 UE context created successfully.",
        f"{t}ue=1 c-rnti=0x4603 du_ue=1: F1 UE context created successfully.",
        f"{t}Rx PDU du=0 ue=1 cu_ue=0 du_ue=1: DLRRCMessageTransfer",
        f"{t}Rx PDU du=0 ue=0 cu_ue=1 du_ue=0: DLRRCMessageTransfer",
    ])  # fmt: skip
    ues = ues_from_f1ap_log(log, cells=[1, 2], rnti0=0x4601, per_cell=2)
    assert ues == [ModeUe(1, 0x4601, 1), ModeUe(1, 0x4602, None), ModeUe(2, 0x4603, 0),
                   ModeUe(2, 0x4604, None)]  # fmt: skip


def test_abw_vs_gnb_takes_medians_after_the_start() -> None:
    rows = [{"t": float(t), "ues": {"0x4601": {"occ_frame_abw_bps": 10e6 + t,
             "occ_target_bps": 8e6, "gnb_dl_brate_bps": 20e6 if t < 5 else 11e6}}}
            for t in range(20)]  # fmt: skip
    c = abw_vs_gnb(rows)["0x4601"]
    assert c["gnb_median_bps"] == 11e6
    assert c["occ_target_median_bps"] == 8e6
    assert c["ratio"] == pytest.approx((10e6 + 12) / 11e6)
    assert c["samples"] == 15


def test_g_pdu_round_trip_and_ipv4_checksum() -> None:
    inner = gtpu.ipv4_udp(bytes([10, 45, 0, 1]), bytes([10, 45, 1, 2]), 5000, 6000, b"hello", 7)
    assert len(inner) == 20 + 8 + 5
    # a correct IPv4 header sums to 0xffff (its checksum is 0 when recomputed)
    assert gtpu._checksum(inner[:20]) == 0
    pkt = gtpu.g_pdu(0x1234, 9, inner)
    assert pkt[:2] == b"\x34\xff" and len(pkt) == gtpu.GTPU_HEADER_LEN + len(inner)
    assert gtpu.parse_g_pdu(pkt) == (0x1234, 9, inner)
    with pytest.raises(ValueError, match="QFI"):
        gtpu.g_pdu(1, 64, inner)
    with pytest.raises(ValueError, match="length field"):
        gtpu.parse_g_pdu(pkt[:-1])


def test_the_cli_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from octoric.cli import main

    monkeypatch.delenv("OCTORIC_SRSRAN_BUILD", raising=False)
    assert main(["testbed", "live"]) == 1
    assert "--srsran-build DIR or set OCTORIC_SRSRAN_BUILD" in capsys.readouterr().err
    assert main(["testbed", "live", "--srsran-build", str(tmp_path), "--ues", "3"]) == 1
    assert "--ues must be a multiple of --cells (2)" in capsys.readouterr().err


def test_srsran_log_is_read_in_whole_lines(tmp_path: Path) -> None:
    from octoric.deploy.testbed.gnb import GnbComponent

    exe = tmp_path / "apps" / "gnb" / "gnb"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(b"Transport to the RIC")
    g = GnbComponent(GnbOptions(tmp_path))
    log = tmp_path / "gnb-srsran.log"
    g.config = {"log": {"filename": str(log)}, "cells": [{"pci": 1}],
                "test_mode": {"test_ue": {"rnti": "0x4601", "nof_ues": 1}}}  # fmt: skip
    log.write_text("x [DU-F1   ] [I] ue=0 c-rnti=0x4601 du_ue=0: F1 UE context created\nx [DU-F1")
    assert g.test_ues() == [ModeUe(1, 0x4601, None)]  # the cut line waits
    with log.open("a") as f:
        f.write("   ] [I] Rx PDU du=0 ue=0 cu_ue=5 du_ue=0: DLRRCMessageTransfer\n")
    assert g.test_ues() == [ModeUe(1, 0x4601, 5)]


def _ack(instance: int, counters: tuple[int, int, int, int] | None) -> bytes:
    from octoric.contracts import rc as R
    from octoric.e2sm import rc

    values: tuple[tuple[int, rc.ParamValue], ...] = ((rc.PARAM_DRB_ID, 1), (rc.PARAM_ENABLE, True))
    if counters is not None:
        ids = (R.OUTCOME_DROPPED_PACKETS, R.OUTCOME_DROPPED_BYTES,
               R.OUTCOME_DROPPED_MSGS_BY_MESSAGE, R.OUTCOME_DROPPED_MSGS_BY_BITRATE)  # fmt: skip
        values += tuple(zip(ids, counters, strict=True))
    outcome = rc.encode_rc(rc.RcControlOutcome(values))
    return e2ap.encode_e2ap(
        e2ap.RicControlAcknowledge(e2ap.RicRequestId(1021, instance), 3, outcome=outcome)
    )


def test_control_outcomes_are_the_counters_the_gnb_acknowledged(tmp_path: Path) -> None:
    # an ACK without counters (a control switching the dropper off, patch 0004) and other PDUs
    # are skipped; the rest in capture order, with their capture times
    f = tmp_path / "gnb-e2ap-du.pcap"
    f.write_bytes(_pcap([_ack(1, (3, 300, 1, 0)), _delete_request(), _ack(2, None),
                         _ack(3, (7, 700, 2, 1))]))  # fmt: skip
    got = e2_capture.control_outcomes(f)
    seen = [(int(t), (c.packets, c.bytes, c.msgs_by_message, c.msgs_by_bitrate)) for t, c in got]
    assert seen == [(1700000000, (3, 300, 1, 0)), (1700000003, (7, 700, 2, 1))]
    assert e2_capture.control_outcomes(tmp_path / "absent.pcap") == []


class _FakeGnb:
    def __init__(self, files: list[Path]) -> None:
        self._files = files
        self.starts = len(files)

    def files(self, name: str) -> list[Path]:
        return self._files


class _FakeChecks:
    """What ``OctopusScenario.judge`` reads of the live checks."""

    def __init__(self, files: list[Path]) -> None:
        self.gnb = _FakeGnb(files)


def _scenario(tmp_path: Path, acks: list[tuple[int, tuple[int, int, int, int]]]) -> object:
    from octoric.contracts.octopus_policy import DropCounters
    from octoric.deploy.testbed.octopus_scenario import OctopusScenario

    f = tmp_path / "gnb-e2ap-du.pcap"
    # one PDU a second from 1700000000: pad with delete requests up to each ACK's second
    pdus: list[bytes] = []
    for sec, c in acks:
        while len(pdus) < sec:
            pdus.append(_delete_request())
        pdus.append(_ack(sec, c))
    f.write_bytes(_pcap(pdus))
    s = OctopusScenario(_FakeChecks([f]), ue=42)  # type: ignore[arg-type]
    t0 = 1700000000.0
    s.windows = {"overshoot_with_policy": (t0 + 1.5, t0 + 6.5), "delete_final": (t0 + 9.5, t0 + 10)}
    s.facts = {"overshoot_with_policy": {"dl_bs_peak_bytes": 1000.0, "delivered_share": 0.5},
               "delete_final": {"a1_status": 202, "state": "removed"}}  # fmt: skip
    s.xapp_samples = [
        (t0 + 2.2, DropCounters(1, 100, 1, 0)), (t0 + 8.2, DropCounters(9, 900, 3, 0)),
    ]  # fmt: skip
    s.xapp_at_delete = (t0 + 9.4, DropCounters(9, 900, 3, 0))
    return s


def test_octopus_verdicts_come_from_what_the_gnb_reported(tmp_path: Path) -> None:
    s = _scenario(tmp_path, [(1, (0, 0, 0, 0)), (2, (1, 100, 1, 0)), (8, (9, 900, 3, 0))])
    verdicts = {p: (ok, outcome) for p, outcome, ok, _ in s.judge()}  # type: ignore[attr-defined]
    ok, outcome = verdicts["overshoot_with_policy"]
    # the counters' growth over the window (+ the ACK slack): 9 - 0 packets in 3 messages
    assert ok and "dropped 9 packets (900 bytes) in 3 whole messages" in outcome
    assert verdicts["counters"][0], verdicts["counters"]
    assert verdicts["delete_final"][0]


def test_octopus_counters_the_gnb_never_reported_fail_the_check(tmp_path: Path) -> None:
    from octoric.contracts.octopus_policy import DropCounters

    s = _scenario(tmp_path, [(1, (0, 0, 0, 0)), (8, (9, 900, 3, 0))])
    s.xapp_samples.append((1700000009.0, DropCounters(5, 5, 5, 5)))  # type: ignore[attr-defined]
    verdicts = {p: ok for p, _o, ok, _f in s.judge()}  # type: ignore[attr-defined]
    assert verdicts["counters"] is False
    # no growth in the window: no drop, the overshoot check fails
    s2 = _scenario(tmp_path, [(1, (9, 900, 3, 0)), (8, (9, 900, 3, 0))])
    verdicts2 = {p: ok for p, _o, ok, _f in s2.judge()}  # type: ignore[attr-defined]
    assert verdicts2["overshoot_with_policy"] is False


def _delete_phases(s: object, peak_without: float) -> None:
    t0 = 1700000000.0
    s.windows.update(
        {
            "delete": (t0 + 3.5, t0 + 4),
            "overshoot_without_policy": (t0 + 4.5, t0 + 6),
            "policy_again": (t0 + 6.5, t0 + 7),
        }
    )  # type: ignore[attr-defined]
    s.facts.update({  # type: ignore[attr-defined]
        "overshoot_without_policy": {"dl_bs_peak_bytes": peak_without, "delivered_share": 1.0,
                                     "metrics_windows": 5},
        "overshoot_with_policy": {"dl_bs_peak_bytes": 1000.0, "delivered_share": 0.5,
                                  "metrics_windows": 5},
        "delete": {"a1_status": 202, "state": "removed"},
        "policy_again": {"a1_status": 202, "state": "enforced"},
    })  # fmt: skip


def test_delete_stops_the_drops_by_the_droppers_own_counters(tmp_path: Path) -> None:
    """The dropper's counters come in the ACK that switches it on: the first ACK after the
    policy's return at 0 (switched off at DELETE, a fresh dropper) or equal to the last before
    DELETE (nothing dropped) is "no drop while deleted", even when the overshoot fitted the
    cell and queued nothing (PF, live run 06:21); grown counters are drops while deleted."""
    s = _scenario(tmp_path, [(1, (0, 0, 0, 0)), (2, (5, 500, 2, 0)), (7, (5, 500, 2, 0))])
    _delete_phases(s, peak_without=900.0)  # no queue without the policy
    v = {p: (ok, o, f) for p, o, ok, f in s.judge()}  # type: ignore[attr-defined]
    ok, outcome, facts = v["overshoot_without_policy"]
    assert ok and facts["counters_kept"] and not facts["queued"], outcome
    assert "stayed at" in outcome
    # switched off at DELETE: the dropper comes back counting from 0 (what the live gNB does)
    s0 = _scenario(tmp_path, [(1, (0, 0, 0, 0)), (2, (5, 500, 2, 0)), (7, (0, 0, 0, 0))])
    _delete_phases(s0, peak_without=900.0)
    v0 = {p: (ok, o) for p, o, ok, _f in s0.judge()}  # type: ignore[attr-defined]
    assert v0["overshoot_without_policy"][0] and "was off" in v0["overshoot_without_policy"][1]
    # drops while deleted (the counters grew) and no queue either: not met
    s2 = _scenario(tmp_path, [(1, (0, 0, 0, 0)), (2, (5, 500, 2, 0)), (7, (8, 800, 3, 0))])
    _delete_phases(s2, peak_without=900.0)
    v2 = {p: (ok, o) for p, o, ok, _f in s2.judge()}  # type: ignore[attr-defined]
    assert v2["overshoot_without_policy"][0] is False
    assert "went from" in v2["overshoot_without_policy"][1]


def test_injector_overshoot_is_bounded_in_time() -> None:
    from octoric.deploy.testbed.injector import Injector

    inj = Injector("http://127.0.0.1:1/occ/v1/flows", ue=1)
    with pytest.raises(ValueError):
        inj.overshoot(0.0, 1.0)
    inj.overshoot(2.0, 0.0)  # already over
    assert inj._boost == 2.0 and inj._boost_until <= __import__("time").monotonic()


def test_e2terms_forwarding_counters_are_read_from_its_metrics() -> None:
    text = "\n".join([
        "# HELP octoric_e2term_indications_total indications",
        "# TYPE octoric_e2term_indications_total counter",
        "octoric_e2term_indications_total 14544.0",
        "octoric_e2term_send_failures_total 3.0",
        "octoric_e2term_gave_up_total 2.0",
        'octoric_e2term_errors_total{kind="decode"} 1.0',
        "octoric_e2term_connected_nodes 2.0",
        "octoric_e2term_indications_created 1.79e9",
    ])  # fmt: skip
    assert e2term_counters(text) == {"indications": 14544.0, "send_failures": 3.0,
                                     "gave_up": 2.0, "errors:decode": 1.0}  # fmt: skip


def _checks(timeout_s: float) -> LiveChecks:
    from types import SimpleNamespace

    c = LiveChecks(SimpleNamespace(), [], step_timeout_s=timeout_s)  # type: ignore[arg-type]
    c.ctx = SimpleNamespace(started_at=time.monotonic())  # type: ignore[assignment]
    return c


def test_a_redis_timeout_in_a_step_is_tried_again_until_the_deadline() -> None:
    """A Redis read that timed out on a loaded host killed the steps' task; the run then showed
    "waiting: E2 Setup" for its whole duration (3 live runs, 2026-11-28)."""
    c = _checks(3.0)
    calls = 0

    async def flaky() -> str | None:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise RedisTimeoutError("Timeout reading from 127.0.0.1:6379")
        return "seen"

    assert asyncio.run(c._step(0, flaky, "hint"))
    assert c.steps[0].ok and c.steps[0].detail == "seen" and calls == 3

    async def dead() -> str | None:
        raise RedisTimeoutError("Timeout reading from 127.0.0.1:6379")

    c = _checks(1.0)
    assert not asyncio.run(c._step(0, dead, "see e2term.log"))
    why = c.failed()
    assert why is not None and "TimeoutError: Timeout reading" in why and "see e2term.log" in why


def test_an_error_that_ends_the_steps_fails_the_run() -> None:
    c = _checks(1.0)

    async def crash() -> None:
        raise RuntimeError("boom")

    async def main() -> None:
        t = asyncio.create_task(crash())
        t.add_done_callback(c._ended)
        with contextlib.suppress(RuntimeError):
            await t

    assert c.failed() is None
    asyncio.run(main())
    assert c.failed() == "the checks stopped on an error: RuntimeError: boom"


def test_indications_on_an_instance_held_between_two_polls_are_counted() -> None:
    """The gated 4-cell run read lost = -99: OCC's KPM subscription churned, one instance was
    held for under the second between two status polls, and its 99 indications counted as
    received but not as sent. Counting what OCC received by instance finds it."""
    du = {3: 5000, 4: 99, 5: 12000, 9: 700}  # 9: the handover xApp's KPM subscription
    occ = {"counters": {"indications": 17099},
           "indications_by_instance": {"3": 5000, "4": 99, "5": 12000}}  # fmt: skip
    sent, received, instances, got = occ_delivery(du, occ, held={3, 5})
    assert (sent, received, instances) == (17099, 17099, {3, 4, 5})
    assert got == {3: 5000, 4: 99, 5: 12000}
    # a real loss stays a loss: 10 of instance 5's never arrived
    occ["indications_by_instance"] = {"3": 5000, "4": 99, "5": 11990}
    sent, received, _, _ = occ_delivery(du, occ, held={3, 5})
    assert sent - received == 10
    # an xApp whose status has no split: its total, over the instances seen held
    sent, received, instances, _ = occ_delivery(du, {"counters": {"indications": 17000}}, {3, 5})
    assert (sent, received, instances) == (17000, 17000, {3, 5})
