"""The shared per-node subscription manager (xapps.base.node_subscriptions) in process.

Stand-ins, said plainly: submgr is a recording fake (the REST body itself is checked against
submgr's own parser in test_base.py and end to end in the xApps' e2e tests); the R-NIB node
list is given directly (ricxappframe's R-NIB reads need a running RMR context); the SDL is
ricsdl's in-memory backend."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest
from ricsdl.syncstorage import SyncStorage

from octoric.xapps.base.discovery import E2Node
from octoric.xapps.base.errors import RestError, SubmgrError
from octoric.xapps.base.node_subscriptions import NodeSubscriptions, Wanted
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import XappShell
from octoric.xapps.base.subscription import (
    SubscriptionInstance,
    SubscriptionRequest,
    SubscriptionResponse,
)

pytestmark = pytest.mark.unit
KPM_OID, RC_OID = "1.3.6.1.4.1.53148.1.2.2.2", "1.3.6.1.4.1.53148.1.1.2.3"


class FakeSubmgr:
    def __init__(self) -> None:
        self.held: dict[str, SubscriptionRequest] = {}
        self.posted: list[SubscriptionRequest] = []
        self.deleted: list[str] = []
        self.down = False
        self.ids = itertools.count(1)
        self.respond_first: Any = None

    def subscribe(self, req: SubscriptionRequest) -> str:
        if self.down:
            raise SubmgrError("submgr unreachable")
        # as O-RAN SC's submgr: a new subscription carries no id, submgr names it
        assert req.subscription_id is None
        self.posted.append(req)
        sid = f"sm-{next(self.ids)}"
        self.held[sid] = req
        if self.respond_first is not None:  # the outcome overtakes the POST's answer
            self.respond_first(sid)
        return sid

    def delete(self, subscription_id: str, timeout_s: float | None = None) -> bool:
        if self.down:
            raise SubmgrError("submgr unreachable")
        self.deleted.append(subscription_id)
        return self.held.pop(subscription_id, None) is not None

    def list(self) -> list[dict[str, Any]]:  # as the embedded submgr lists them
        return [
            {"SubscriptionId": s, "Endpoint": [f"{r.host}:{r.rmr_port}"]}
            for s, r in self.held.items()
        ]


def _node(meid: str, connected: bool = True, rc: bool = True, meas: tuple[str, ...] = ("a",)
          ) -> E2Node:  # fmt: skip
    funcs = ((2, KPM_OID), (3, RC_OID)) if rc else ((2, KPM_OID),)
    return E2Node(meid, connected, funcs, ((4, meas),))


def _wants(node: E2Node) -> list[Wanted]:
    out = [Wanted("kpm", 2, b"\x01", b"\x02", node.kpm_measurements(4))]
    if node.has_function(RC_OID):
        out.append(Wanted("rc", 3, b"\x03", b"\x04"))
    return out


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> tuple[NodeSubscriptions, FakeSubmgr, list[E2Node]]:
    shell = XappShell(
        "test", 4999, 8999, sdl=SdlStore("test", storage=SyncStorage(fake_db_backend="dict"))
    )
    nodes: list[E2Node] = []
    monkeypatch.setattr(shell, "xapp", object())
    monkeypatch.setattr(shell, "rnib_nodes", lambda: list(nodes))
    submgr = FakeSubmgr()
    m = NodeSubscriptions(shell, _wants, submgr, sdl_prefix="sub.")  # type: ignore[arg-type]
    m.configure((), 0.05, 10.0)
    return m, submgr, nodes


def _respond(m: NodeSubscriptions, sid: str, instance: int, error: str = "") -> None:
    m.on_response(SubscriptionResponse(sid, (SubscriptionInstance(1, instance, error, ""),)))


def test_subscribes_what_each_node_offers(env: Any) -> None:
    m, submgr, nodes = env
    nodes[:] = [_node("gnb_a"), _node("gnb_b", rc=False), _node("gnb_c", connected=False)]
    m.discover_once()
    assert sorted(m.subs) == ["kpm.gnb_a", "kpm.gnb_b", "rc.gnb_a"]
    req = submgr.posted[0]
    assert (req.meid, req.ran_function_id, req.host, req.http_port, req.rmr_port) == (
        "gnb_a", 2, "127.0.0.1", 8999, 4999)  # fmt: skip
    assert req.subscription_id is None  # submgr names it (O-RAN SC's submgr: 404 otherwise)
    assert m.subs["kpm.gnb_a"].subscription_id in submgr.held
    sdl = m.shell.sdl
    assert set(sdl.find("sub.")) == {"sub.kpm.gnb_a", "sub.kpm.gnb_b", "sub.rc.gnb_a"}
    sid = m.subs["rc.gnb_a"].subscription_id
    _respond(m, sid, 9)
    assert m.subs["rc.gnb_a"].state == "active" and m.subs["rc.gnb_a"].e2_instance_id == 9
    assert sdl.get_json("sub.rc.gnb_a")["e2_instance_id"] == 9
    _respond(m, m.subs["kpm.gnb_b"].subscription_id, 0, "function-not-supported")
    assert m.subs["kpm.gnb_b"].state == "failed"
    assert m.states() == Counter(requesting=1, active=1, failed=1)
    with pytest.raises(RestError) as e:
        _respond(m, "nope", 1)
    assert e.value.status == 404 and m.counters["unknown_subscription_responses"] == 1
    m.discover_once()  # nothing changed: nothing asked again (the failure waits 2 periods)
    assert len(submgr.posted) == 3


def test_offer_change_failure_retry_and_unwanted(env: Any) -> None:
    import time

    m, submgr, nodes = env
    submgr.down = True
    nodes[:] = [_node("gnb_a")]
    m.discover_once()
    assert {s.state for s in m.subs.values()} == {"failed"}
    assert m.counters["subscription_errors"] == 2
    submgr.down = False
    time.sleep(0.11)  # two discovery periods
    m.discover_once()
    assert {s.state for s in m.subs.values()} == {"requesting"} and len(submgr.posted) == 2
    first = m.subs["kpm.gnb_a"]
    nodes[:] = [_node("gnb_a", meas=("a", "b"))]  # set up again with another offer
    m.discover_once()
    assert m.counters["resubscriptions_offer_changed"] == 1
    assert m.subs["kpm.gnb_a"].measurements == ("a", "b")
    assert first.subscription_id in submgr.deleted
    nodes[:] = [_node("gnb_a", meas=("a", "b"), rc=False)]  # no RC any more: deleted
    m.discover_once()
    assert sorted(m.subs) == ["kpm.gnb_a"] and "sub.rc.gnb_a" not in m.shell.sdl.find("sub.")
    m.configure(("gnb_z",), 0.05, 10.0)  # the configuration leaves gnb_a out
    m.discover_once()
    assert m.subs == {} and m.shell.sdl.find("sub.") == {}


def test_reconnect_resubscribes_what_submgr_dropped(env: Any) -> None:
    m, submgr, nodes = env
    nodes[:] = [_node("gnb_a"), _node("gnb_b")]
    m.discover_once()
    before = {k: s.subscription_id for k, s in m.subs.items()}
    nodes[:] = [_node("gnb_a", connected=False), _node("gnb_b", connected=False)]
    m.discover_once()
    assert {k: s.subscription_id for k, s in m.subs.items()} == before  # kept while away
    # gnb_a's subscriptions are gone at submgr (as a platform may drop them); gnb_b's stand
    for k in ("kpm.gnb_a", "rc.gnb_a"):
        submgr.held.pop(before[k])
    nodes[:] = [_node("gnb_a"), _node("gnb_b")]
    m.discover_once()
    assert m.counters["resubscriptions_node_reconnect"] == 2
    for k in ("kpm.gnb_b", "rc.gnb_b"):
        assert m.subs[k].subscription_id == before[k]
    for k in ("kpm.gnb_a", "rc.gnb_a"):
        assert m.subs[k].subscription_id != before[k] and m.subs[k].subscription_id in submgr.held


def test_stop_deletes_and_next_run_clears_what_is_left(env: Any) -> None:
    m, submgr, nodes = env
    nodes[:] = [_node("gnb_a")]
    m.discover_once()
    m.stop()
    assert m.subs == {} and submgr.held == {} and m.shell.sdl.find("sub.") == {}
    assert m.counters["subscriptions_deleted_at_stop"] == 2
    # a run killed with -9 leaves its records: the next run deletes them at submgr
    m.discover_once()
    left = {s.subscription_id for s in m.subs.values()}
    m.subs.clear()
    m.resubscribe_all()
    m.clear_stale()
    assert m.counters["stale_subscriptions_deleted"] == 2 and left <= set(submgr.deleted)
    assert m.shell.sdl.find("sub.") == {} and submgr.held == {}
    m.discover_once()  # resubscribe_all: nothing held to delete, both asked again
    assert len(m.subs) == 2


def test_a_restarted_process_adopts_what_submgr_holds_for_it(env: Any) -> None:
    """kill -9 of the xApp (issue #17's soak): the new process, on the same RMR endpoint,
    adopts every active subscription submgr still holds for it (no gap in the indications,
    nothing asked again); one still waiting for its outcome is deleted and asked again; a
    process on another endpoint adopts nothing."""
    m, submgr, nodes = env
    nodes[:] = [_node("gnb_a"), _node("gnb_b")]
    m.discover_once()
    for i, k in enumerate(("kpm.gnb_a", "rc.gnb_a", "kpm.gnb_b")):
        _respond(m, m.subs[k].subscription_id, 10 + i)
    before = {k: s.subscription_id for k, s in m.subs.items()}
    posted = len(submgr.posted)

    again = NodeSubscriptions(m.shell, _wants, submgr, sdl_prefix="sub.")  # type: ignore[arg-type]
    again.configure((), 0.05, 10.0)
    again.adopt_or_clear()
    assert again.counters["subscriptions_adopted"] == 3
    assert {k: (s.subscription_id, s.state) for k, s in again.subs.items()} == {
        k: (before[k], "active") for k in ("kpm.gnb_a", "rc.gnb_a", "kpm.gnb_b")
    }
    assert again.subs["kpm.gnb_b"].e2_instance_id == 12
    assert again.subs["kpm.gnb_a"].measurements == ("a",)
    assert submgr.deleted == [before["rc.gnb_b"]]  # no outcome yet: not adoptable
    again.discover_once()
    assert len(submgr.posted) == posted + 1 and submgr.posted[-1].meid == "gnb_b"
    assert again.counters["resubscriptions_offer_changed"] == 0

    # another endpoint (a new deployment reusing the SDL): delete everything, ask again
    other = XappShell("test", 5999, 8999, sdl=m.shell.sdl)
    third = NodeSubscriptions(other, _wants, submgr, sdl_prefix="sub.")  # type: ignore[arg-type]
    third.adopt_or_clear()
    assert third.subs == {} and third.counters["subscriptions_adopted"] == 0
    assert set(before.values()) - {before["rc.gnb_b"]} <= set(submgr.deleted)
    assert m.shell.sdl.find("sub.") == {}


def test_a_damaged_record_is_never_adopted(env: Any) -> None:
    m, submgr, nodes = env
    nodes[:] = [_node("gnb_a", rc=False)]
    m.discover_once()
    sid = m.subs["kpm.gnb_a"].subscription_id
    _respond(m, sid, 7)
    rec = m.shell.sdl.get_json("sub.kpm.gnb_a")
    for bad in ({**rec, "e2_instance_id": "7"}, {**rec, "meid": "gnb_b"},
                {**rec, "measurements": [1]}, ["not", "a", "record"]):  # fmt: skip
        m.shell.sdl.set_json("sub.kpm.gnb_a", bad)
        again = NodeSubscriptions(m.shell, _wants, submgr, sdl_prefix="sub.")  # type: ignore[arg-type]
        again.adopt_or_clear()
        assert again.subs == {}, bad
        assert m.shell.sdl.find("sub.") == {}
        submgr.held[sid] = submgr.posted[-1]  # put it back for the next damaged record


class Clock:
    """The manager's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    from octoric.xapps.base import node_subscriptions

    c = Clock()
    monkeypatch.setattr(node_subscriptions, "time", c)
    return c


REFUSED = "misc: control-processing-overload"  # what srsRAN's CU-CP answers KPM (issue #39)


def _refuse_new(m: NodeSubscriptions, key: str, submgr: FakeSubmgr, seen: set[str]) -> bool:
    """The node refuses a request it has not answered yet; True if there was one."""
    sub = m.subs[key]
    if sub.state != "requesting" or sub.subscription_id in seen:
        return False
    seen.add(sub.subscription_id)
    _respond(m, sub.subscription_id, 0, REFUSED)
    return True


def test_the_retry_delay_doubles_up_to_its_cap(env: Any) -> None:
    m, _, _ = env
    m.configure((), 1.0, 10.0)
    assert [m.retry_delay_s(n) for n in range(1, 9)] == [2, 4, 8, 16, 32, 60, 60, 60]
    assert m.retry_delay_s(10**6) == 60.0  # no overflow after a long refusal
    m.retry_max_s = 10.0
    assert [m.retry_delay_s(n) for n in range(1, 6)] == [2, 4, 8, 10, 10]
    m.retry_max_s = 0.5  # never below two rounds
    assert m.retry_delay_s(3) == 2.0
    m.configure((), 0.05, 10.0)
    m.retry_max_s = 60.0
    assert m.retry_delay_s(1) == pytest.approx(0.1) and m.retry_delay_s(40) == 60.0


def test_a_refused_request_backs_off_instead_of_every_two_rounds(env: Any, clock: Clock) -> None:
    """issue #39: srsRAN's CU-CP refuses every KPM subscription. Ten minutes of discovery at
    one round a second ask it 14 times (after 2, 4, 8, 16, 32, then every 60 s), not 300."""
    m, submgr, nodes = env
    m.configure((), 1.0, 10.0)
    nodes[:] = [_node("gnb_a")]
    key, seen, asked_at = "kpm.gnb_a", set[str](), []
    start = clock.t
    for second in range(600):
        clock.t = start + second
        m.discover_once()
        if _refuse_new(m, key, submgr, seen):
            asked_at.append(second)
        if second == 0:
            _respond(m, m.subs["rc.gnb_a"].subscription_id, 5)  # RC is accepted
    gaps = [b - a for a, b in itertools.pairwise(asked_at)]
    assert gaps == [2, 4, 8, 16, 32] + [60] * 8
    kpm_posted = [r for r in submgr.posted if r.ran_function_id == 2]
    assert len(kpm_posted) == len(asked_at) == 14
    assert m.counters["subscription_errors"] == 14
    assert m.counters["subscription_retries_backed_off"] == 13  # all but the first failure
    # visible: how many in a row, and when it is asked again
    snap = {(s["meid"], s["kind"]): s for s in m.snapshot()}
    kpm_sub = snap[("gnb_a", "kpm")]
    assert kpm_sub["state"] == "failed" and kpm_sub["error"] == REFUSED
    assert kpm_sub["failures"] == 14 and kpm_sub["retry_at"] == start + 542 + 60
    assert kpm_sub["retry_in_s"] == 60 - (599 - 542)
    rc_sub = snap[("gnb_a", "rc")]
    assert rc_sub["state"] == "active" and rc_sub["failures"] == 0
    assert rc_sub["retry_at"] is None and rc_sub["retry_in_s"] is None


def _fail_times(m: NodeSubscriptions, submgr: FakeSubmgr, clock: Clock, n: int) -> None:
    """Refuse ``n`` requests of kpm.gnb_a in a row, moving the clock to each retry."""
    seen: set[str] = set()
    for _ in range(n):
        m.discover_once()
        assert _refuse_new(m, "kpm.gnb_a", submgr, seen)
        at = m.subs["kpm.gnb_a"].retry_at
        assert at is not None
        clock.t = at
    assert m.subs["kpm.gnb_a"].failures == n


def test_success_ends_the_backoff(env: Any, clock: Clock) -> None:
    m, submgr, nodes = env
    m.configure((), 1.0, 10.0)
    nodes[:] = [_node("gnb_a", rc=False)]
    _fail_times(m, submgr, clock, 4)  # next one after 16 s
    m.discover_once()
    sub = m.subs["kpm.gnb_a"]
    assert sub.state == "requesting" and sub.failures == 4  # the row goes on while asked
    _respond(m, sub.subscription_id, 3)
    assert (sub.state, sub.failures, sub.retry_at) == ("active", 0, None)
    # submgr drops it while the node is away; asked again after the reconnect and refused:
    # two rounds, as a first failure
    submgr.held.clear()
    nodes[:] = [_node("gnb_a", connected=False, rc=False)]
    m.discover_once()
    nodes[:] = [_node("gnb_a", rc=False)]
    m.discover_once()
    sub = m.subs["kpm.gnb_a"]
    _respond(m, sub.subscription_id, 0, REFUSED)
    assert sub.failures == 1 and sub.retry_at == clock.t + 2


def test_an_offer_change_ends_the_backoff(env: Any, clock: Clock) -> None:
    m, submgr, nodes = env
    m.configure((), 1.0, 10.0)
    nodes[:] = [_node("gnb_a", rc=False)]
    _fail_times(m, submgr, clock, 5)
    clock.t -= 20  # 12 s of its 32 s wait gone
    posted = len(submgr.posted)
    m.discover_once()
    assert len(submgr.posted) == posted  # still waiting
    nodes[:] = [_node("gnb_a", rc=False, meas=("a", "b"))]  # set up again, another offer
    m.discover_once()
    assert len(submgr.posted) == posted + 1 and m.counters["resubscriptions_offer_changed"] == 1
    sub = m.subs["kpm.gnb_a"]
    assert sub.measurements == ("a", "b") and sub.failures == 0
    _respond(m, sub.subscription_id, 0, REFUSED)
    assert sub.failures == 1 and sub.retry_at == clock.t + 2


def test_a_reconnect_ends_the_backoff(env: Any, clock: Clock) -> None:
    m, submgr, nodes = env
    m.configure((), 1.0, 10.0)
    nodes[:] = [_node("gnb_a", rc=False)]
    _fail_times(m, submgr, clock, 6)  # next one after 60 s
    clock.t -= 50
    nodes[:] = [_node("gnb_a", connected=False, rc=False)]
    m.discover_once()
    posted = len(submgr.posted)
    nodes[:] = [_node("gnb_a", rc=False)]  # back: asked again at once, the row starts over
    m.discover_once()
    assert len(submgr.posted) == posted + 1
    sub = m.subs["kpm.gnb_a"]
    assert sub.state == "requesting" and sub.failures == 0
    _respond(m, sub.subscription_id, 0, REFUSED)
    assert sub.failures == 1 and sub.retry_at == clock.t + 2


def test_a_request_without_outcome_counts_in_the_row(env: Any, clock: Clock) -> None:
    m, submgr, nodes = env
    m.configure((), 1.0, 10.0)
    nodes[:] = [_node("gnb_a", rc=False)]
    _fail_times(m, submgr, clock, 2)
    m.discover_once()
    first = m.subs["kpm.gnb_a"]
    assert first.state == "requesting"
    clock.t += 10.5  # no outcome within timeout_s: asked again at once, as before
    m.discover_once()
    again = m.subs["kpm.gnb_a"]
    assert again.subscription_id != first.subscription_id and again.failures == 3
    _respond(m, again.subscription_id, 0, REFUSED)
    assert again.failures == 4 and again.retry_at == clock.t + 16


def test_outcome_before_the_post_returns(env: Any) -> None:
    """submgr may POST the outcome before its 201 names the subscription: it is kept and
    applied once the name is known; an unknown one with nothing pending is still a 404."""
    m, submgr, nodes = env
    submgr.respond_first = lambda sid: _respond(m, sid, 7)
    nodes[:] = [_node("gnb_a", rc=False)]
    m.discover_once()
    sub = m.subs["kpm.gnb_a"]
    assert sub.subscription_id in submgr.held
    assert (sub.state, sub.e2_instance_id) == ("active", 7)
    assert m.counters["early_subscription_responses"] == 1
    assert m.shell.sdl.get_json("sub.kpm.gnb_a")["subscription_id"] == sub.subscription_id
    with pytest.raises(RestError):
        _respond(m, "nope", 1)
