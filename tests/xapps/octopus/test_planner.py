"""The octopus xApp's pure core: scope checks, conflicts, targets and the policy verdict."""

from __future__ import annotations

from octoric.contracts.octopus_policy import DropPolicy, PolicyError
from octoric.xapps.octopus import planner
from octoric.xapps.octopus.planner import PolicyState, Target, TargetState


def pol(**kw: object) -> DropPolicy:
    return DropPolicy.from_json({"enable": True, **kw})


def test_scope_needs_ues_and_refuses_slices() -> None:
    assert "scope.ues is required" in (planner.unsupported(pol()) or "")
    assert "slices" in (planner.unsupported(pol(scope={"ues": [1], "slices": [{"sst": 1}]})) or "")
    assert planner.unsupported(pol(scope={"ues": [1]})) is None


def test_contract_parse_refuses_non_objects() -> None:
    for bad in (None, [], {"enable": "yes"}):
        try:
            DropPolicy.from_json(bad)
        except PolicyError as e:
            assert e.reason == "schema"
        else:
            raise AssertionError(bad)


def test_conflicts_only_on_overlap_with_other_settings() -> None:
    a = PolicyState("a", pol(scope={"ues": [1, 2]}), seq=1)
    same = PolicyState("b", pol(scope={"ues": [2]}), seq=2)
    other = PolicyState("c", pol(scope={"ues": [2]}, drop_by_bitrate=False), seq=3)
    apart = PolicyState("d", pol(scope={"ues": [3]}, drop_by_bitrate=False), seq=4)
    other_drb = PolicyState("e", pol(scope={"ues": [2], "drb_ids": [2]}, enable=False), seq=5)
    other_node = PolicyState(
        "f", pol(scope={"ues": [2], "meids": ["x"]}, drop_by_bitrate=False), seq=6
    )
    a_on_y = PolicyState("g", pol(scope={"ues": [2], "meids": ["y"]}), seq=0)
    all_ = [a, same, other, apart, other_drb]
    assert planner.conflict(same, all_) is None
    assert "conflicts with policy 'a'" in (planner.conflict(other, all_) or "")
    assert planner.conflict(apart, all_) is None and planner.conflict(other_drb, all_) is None
    assert planner.conflict(other_node, [a_on_y, other_node]) is None  # disjoint nodes
    assert planner.conflict(a, all_) is None  # the older one wins


def test_targets_and_verdict() -> None:
    p = PolicyState("a", pol(scope={"ues": [1, 2]}), seq=1)
    assert planner.verdict(p)[0] == planner.NOT_ENFORCED  # nowhere to send it
    ts = planner.targets(p.policy, ["n1", "n2"])
    assert ts == [Target("n1", 1, 1), Target("n1", 2, 1), Target("n2", 1, 1), Target("n2", 2, 1)]
    p.targets = {t: TargetState() for t in ts}
    assert planner.verdict(p) == (planner.PENDING, None)
    # UE 1 at n1, UE 2 at n2: each acknowledged where it is, refused where it is not
    for t in ts:
        here = (t.meid, t.ue) in (("n1", 1), ("n2", 2))
        p.targets[t] = TargetState(planner.ENFORCED if here else planner.NOT_ENFORCED,
                                   None if here else "gNB refused", answered=True)  # fmt: skip
    assert planner.verdict(p) == (planner.ENFORCED, None)
    p.targets[Target("n2", 2, 1)] = TargetState(planner.NOT_ENFORCED, "timeout", answered=True)
    state, why = planner.verdict(p)
    assert (
        state == planner.NOT_ENFORCED
        and "UE 2 DRB 1" in (why or "")
        and "n2: timeout" in (why or "")
    )
    assert planner.targets(pol(scope={"ues": [5], "meids": ["z"]}), ["n1"]) == [Target("z", 5, 1)]


def test_a_du_s_ue_key_goes_to_its_du_only() -> None:
    """A UE srsRAN's DU names by F1AP ID only is keyed by that DU (contracts.ue_key): the
    policy goes to that DU, whose control names the UE by UEID-GNB-DU; a key whose DU is not
    connected is reported, not silently skipped."""
    from octoric.contracts import ue_key
    from octoric.e2sm import rc
    from octoric.e2sm.common import Guami
    from octoric.xapps.octopus.xapp import control_ue_id

    du_ue = ue_key.du_key("du1", 5)
    p = PolicyState("a", pol(scope={"ues": [7, du_ue]}), seq=1)
    ts = planner.targets(p.policy, ["du1", "du2"])
    assert ts == [Target("du1", 7, 1), Target("du1", du_ue, 1), Target("du2", 7, 1)]
    header, _ = rc.octopus_control(
        control_ue_id(du_ue, Guami(b"\x00\xf1\x10", 1, 1, 0)), rc.OctopusAdaptation(1, True)
    )
    ue = rc.decode_rc(rc.RcControlHeader, header).ue_id
    assert (ue.kind, ue.f1ap_ids) == ("gNB-DU-UEID", (5,))
    assert control_ue_id(7, Guami(b"\x00\xf1\x10", 1, 1, 0)).amf_ue_ngap_id == 7
    p.targets = {
        t: TargetState(planner.ENFORCED, answered=True) for t in planner.targets(p.policy, ["du2"])
    }
    state, reason = planner.verdict(p)
    assert state == planner.NOT_ENFORCED and f"UE {du_ue}: its DU is not among" in (reason or "")
    p.targets = {t: TargetState(planner.ENFORCED, answered=True) for t in ts}
    assert planner.verdict(p) == (planner.ENFORCED, None)
