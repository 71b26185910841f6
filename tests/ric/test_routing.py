"""Route tables from the platform, xApp descriptors and subscriptions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octoric.contracts import message_types as mt
from octoric.ric.routing import (
    PlatformEndpoints,
    Route,
    SubscriptionRoute,
    XappRoutes,
    build_routes,
    render,
)

pytestmark = pytest.mark.unit


def test_route_line_grammar() -> None:
    r = Route(12050, (("a:1", "b:2"), ("c:3",)), sub_id=7, sender="e2t:1")
    assert r.line() == "mse|12050,e2t:1|7|a:1,b:2;c:3"


def test_descriptor_routes_and_subscriptions() -> None:
    port = {
        "name": "rmr-data",
        "port": 4560,
        "rxMessages": ["RIC_INDICATION", "OCTORIC_HO_EVENT", "RIC_SUB_RESP"],
        "txMessages": ["OCTORIC_ABW_REPORT"],
        "policies": [30500],
    }
    desc = {"xapp_name": "occ", "messaging": {"ports": [port]}}
    occ = XappRoutes.from_descriptor(desc, "127.0.0.1:4560")
    assert occ.rx == [mt.RIC_SUB_RESP, mt.RIC_INDICATION, mt.OCTORIC_HO_EVENT]
    assert occ.policies == [30500]
    other = XappRoutes("listener", "127.0.0.1:4600", rx=[mt.OCTORIC_HO_EVENT])
    routes = build_routes(
        PlatformEndpoints(), [occ, other], [SubscriptionRoute(5, ("127.0.0.1:4560",))]
    )
    text = render(routes, "t1")
    lines = text.splitlines()
    assert lines[0] == "newrt|start|t1" and lines[-1] == f"newrt|end|{len(routes)}"
    # fan-out: one group per xApp that receives the type
    assert "mse|30501|-1|127.0.0.1:4560;127.0.0.1:4600" in lines
    assert "mse|20010|30500|127.0.0.1:4560" in lines
    assert "mse|12050|5|127.0.0.1:4560" in lines
    # platform-only types are not routed to the xApp by its descriptor
    assert not any(line.startswith("mse|12011|-1|127.0.0.1:4560") for line in lines)
    assert "mse|12011|-1|127.0.0.1:4570" in lines


def test_example_descriptor_from_oran_sc(shared_dir: Path) -> None:
    desc = json.loads((shared_dir / "reference/oran-sc/xapp-descriptor-example.json").read_text())
    x = XappRoutes.from_descriptor(desc, "10.0.0.1:4560")
    assert x.name == "mcxapp" and x.policies == [1, 2]
    assert mt.RIC_INDICATION in x.rx and mt.RIC_SUB_REQ in x.tx


def test_unknown_message_name_is_named() -> None:
    with pytest.raises(KeyError, match="NOT_A_TYPE"):
        XappRoutes.from_descriptor({"rmr": {"rxMessages": ["NOT_A_TYPE"]}}, "h:1")
