"""What a real srsRAN gNB's two E2 nodes offer E2SM-KPM, as the OCC xApp reads it (issue #39's
recorded vectors, tests/e2sm/vectors/srsran-live): the DU lists OCC's measurements in report
style 4 and gets OCC's subscription; the CU-CP's KPM RAN function definition decodes and lists
no report style at all (srsRAN's CU-CP has no KPM measurement), so it refuses every KPM
subscription (the recorded RIC Subscription Failure, cause misc / control-processing-overload,
the first value of CauseMisc: srsRAN sets the group only). OCC does not ask it: said once in the
log and in the status, instead of a request refused and asked again and again.

Stand-ins, said plainly: the R-NIB entries are built from the recorded E2 Setup Requests as
e2term writes them (ric/nodes.py: the same protobufs, definitions as hex) and handed to
discovery through a fake ``RMRXapp`` (ricxappframe's R-NIB reads need an RMR context); submgr
is a recording fake.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from ricsdl.syncstorage import SyncStorage

from octoric.e2sm import e2ap, kpm
from octoric.e2sm.node_id import meid_of
from octoric.redis_server import free_port
from octoric.ric.nodes import NodeRecord, rnib_nodeb_info
from octoric.xapps.base.discovery import E2Node, rnib_nodes
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.subscription import SubscriptionRequest
from octoric.xapps.occ.xapp import OccXapp

pytestmark = [
    pytest.mark.unit,
    # ricxappframe's generated R-NIB protobufs use an API protobuf deprecates (not ours)
    pytest.mark.filterwarnings("ignore:Call to deprecated create function:DeprecationWarning"),
]
VECTORS = Path(__file__).parents[2] / "e2sm" / "vectors" / "srsran-live"


def _setup(node: str) -> e2ap.E2SetupRequest:
    raw = bytes.fromhex("".join((VECTORS / f"{node}-E2SetupRequest.hex").read_text().split()))
    msg = e2ap.decode_e2ap(raw)
    assert isinstance(msg, e2ap.E2SetupRequest)
    return msg


class FakeRnib:
    """ricxappframe's ``get_list_gnb_ids`` / ``GetNodeb`` over R-NIB entries written as
    e2term writes them (ric/nodes.py ``_write_rnib``)."""

    def __init__(self, *setups: e2ap.E2SetupRequest) -> None:
        self.infos: dict[str, Any] = {}
        for setup in setups:
            rec = NodeRecord.from_setup(setup.global_e2node_id, setup.ran_functions, "", "tcp")
            self.infos[rec.meid] = rnib_nodeb_info(rec)

    def get_list_gnb_ids(self) -> list[Any]:
        from ricxappframe.entities.rnib import nb_identity_pb2

        return [nb_identity_pb2.NbIdentity(inventory_name=m, connection_status=1)
                for m in self.infos]  # fmt: skip

    def GetNodeb(self, name: str) -> Any:  # ricxappframe's name
        return self.infos.get(name)


class RecordingSubmgr:
    def __init__(self) -> None:
        self.posted: list[SubscriptionRequest] = []
        self.deleted: list[str] = []

    def subscribe(self, req: SubscriptionRequest) -> str:
        self.posted.append(req)
        return req.subscription_id or ""

    def delete(self, subscription_id: str, timeout_s: float | None = None) -> bool:
        self.deleted.append(subscription_id)
        return True

    def list(self) -> list[dict[str, Any]]:
        return []


@pytest.fixture
def xapp() -> OccXapp:
    sdl = SdlStore("occ", storage=SyncStorage(fake_db_backend="dict"))
    return OccXapp(free_port(), free_port(), sdl=sdl)


def _nodes() -> tuple[E2Node, E2Node]:
    du, cu_cp = _setup("du"), _setup("cu-cp")
    by_meid = {n.meid: n for n in rnib_nodes(FakeRnib(du, cu_cp))}
    return by_meid[meid_of(du.global_e2node_id)], by_meid[meid_of(cu_cp.global_e2node_id)]


def test_the_cu_cps_kpm_function_offers_no_report_style() -> None:
    du, cu_cp = _nodes()
    assert cu_cp.has_kpm() and cu_cp.kpm_definition_read and cu_cp.kpm_offer_known()
    assert cu_cp.kpm_styles == () and cu_cp.kpm_measurements(4) == ()
    assert [s for s, _ in du.kpm_styles] == [1, 2, 3, 4, 5]
    assert set(kpm.OCC_MEASUREMENTS) <= set(du.kpm_measurements(4))
    # a node whose definition was not read still says nothing about its offer
    assert not E2Node("x", True, ((kpm.RAN_FUNCTION_ID, kpm.OID),)).kpm_offer_known()


def test_the_recorded_refusal_is_for_kpm_with_srsrans_generic_cause() -> None:
    raw = (VECTORS / "cu-cp-RicSubscriptionFailure.hex").read_text()
    fail = e2ap.decode_e2ap(bytes.fromhex("".join(raw.split())))
    assert isinstance(fail, e2ap.RicSubscriptionFailure)
    assert fail.ran_function_id == kpm.RAN_FUNCTION_ID
    assert (fail.cause.group, fail.cause.value) == ("misc", "control-processing-overload")


def test_occ_does_not_want_the_cu_cp_and_says_so_once(
    xapp: OccXapp, caplog: pytest.LogCaptureFixture
) -> None:
    du, cu_cp = _nodes()
    with caplog.at_level(logging.WARNING, logger="xapps.occ"):
        for _ in range(5):  # discovery asks every round
            assert xapp._wants(cu_cp) == []
    said = [r.getMessage() for r in caplog.records if cu_cp.meid in r.getMessage()]
    assert len(said) == 1, said
    assert "offers no KPM measurement in report style 4" in said[0]
    assert "no report style" in said[0] and "not subscribing" in said[0]
    status = xapp.status()
    assert status["unsupported_nodes"][cu_cp.meid] == list(xapp.cfg.measurements)
    assert "not subscribing" in status["unsupported_reasons"][cu_cp.meid]
    assert cu_cp.meid not in status["degraded_nodes"]
    # the DU gets OCC's subscription as before
    (want,) = xapp._wants(du)
    assert want.measurements == (*kpm.OCC_MEASUREMENTS, "OCC.PrbTotalDl")
    assert du.meid not in xapp.status()["unsupported_nodes"]


def test_discovery_subscribes_the_du_only(xapp: OccXapp, monkeypatch: pytest.MonkeyPatch) -> None:
    submgr = RecordingSubmgr()
    xapp.submgr = submgr  # type: ignore[assignment]
    rnib = FakeRnib(_setup("du"), _setup("cu-cp"))
    monkeypatch.setattr(xapp.shell, "xapp", rnib)
    du, _ = _nodes()
    for _ in range(3):
        xapp.node_subs.discover_once()
    assert [r.meid for r in submgr.posted] == [du.meid]
    assert sorted(xapp.subs) == [f"kpm.{du.meid}"]
    assert xapp.counters["subscription_errors"] == 0
