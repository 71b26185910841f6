"""The Octopus sender library: marking, the case studies' message policies, and Algorithm 1 in
the transport buffer fed by the bandwidth estimate (SEC'23 §4.2, §6)."""

from __future__ import annotations

import pytest

from octoric.contracts.octopus_header import HEADER_LEN, OctopusHeader, parse
from octoric.sim.video import temporal_role
from octoric.xapps.octopus.sender import (
    MessageMarker,
    Role,
    SpatialSvc,
    TemporalSvc,
    TransportBuffer,
    Volumetric,
)


def test_marker_cuts_a_message_and_marks_first_and_last() -> None:
    m = MessageMarker(stream_id=7, mtu=100, first_msg_id=41)
    dgs = m.datagrams(bytes(range(200)), Role(priority=2, drop=True, priority_threshold=1))
    assert [len(d) for d in dgs] == [100, 100, 200 - 2 * 84 + HEADER_LEN]  # 84 bytes per chunk
    hs = [parse(d) for d in dgs]
    assert [(h.first, h.last) for h in hs] == [(True, False), (False, False), (False, True)]
    assert {h.msg_id for h in hs} == {42} and {h.stream_id for h in hs} == {7}
    assert all(h.priority == 2 and h.drop and h.priority_threshold == 1 for h in hs)
    assert b"".join(d[HEADER_LEN:] for d in dgs) == bytes(range(200))
    (single,) = m.datagrams(b"x")
    assert parse(single) == OctopusHeader(7, 43, True, True)  # defaults: no adaptation


def test_marker_ids_wrap_and_bad_arguments_are_refused() -> None:
    m = MessageMarker(1, first_msg_id=0xFFFFFFFF)
    assert parse(m.datagrams(b"a")[0]).msg_id == 0
    with pytest.raises(ValueError):
        MessageMarker(70000)
    with pytest.raises(ValueError):
        MessageMarker(1, mtu=16)
    with pytest.raises(ValueError):
        Role(priority=8)


def test_temporal_roles_are_the_simulators() -> None:
    svc = TemporalSvc(gop=300)
    for j in range(0, 600):
        _, prio, thr, _ = temporal_role(j % 300)
        r = svc.role(j)
        assert (r.priority, r.priority_threshold, r.drop) == (prio, thr, True), j


def test_spatial_roles_follow_section_6_2() -> None:
    first, later = SpatialSvc().roles(0, 10e6), SpatialSvc().roles(3, 10e6)
    assert [r.bitrate_threshold_kbps for r in first] == [0, 5000, 10000]
    assert [r.drop for r in first] == [True, False, False]  # the GoP's first Q0 message
    assert [r.drop for r in later] == [False, False, False]
    assert [r.priority for r in later] == [0, 1, 2]


def test_volumetric_roles() -> None:
    v = Volumetric()
    thr = [v.roles(f)[0][0].priority_threshold for f in range(8)]
    assert thr == [3, 2, 1, 0, 3, 2, 1, 0]
    r = v.roles(0)
    assert all(r[0][0].drop for _ in range(1)) and not any(x.drop for x in r[1])
    assert r[1][4].priority == 4 and r[2][0].priority == 3 and r[3][4].priority == 7


def _frames(buf: TransportBuffer, marker: MessageMarker, svc: TemporalSvc, n: int, t0: int) -> int:
    t = t0
    for f in range(n):
        for d in marker.datagrams(bytes(3000), svc.role(f)):
            buf.push(d, t)
        t += 33_000
    return t


def test_buffer_drops_stale_frames_when_the_pacer_falls_behind() -> None:
    """The encoder produces 10 frames while the pacer sends nothing: the buffer keeps the
    newest frames of each importance, the I-frame and what newer frames do not supersede."""
    buf = TransportBuffer()
    m, svc = MessageMarker(1), TemporalSvc(gop=300)
    _frames(buf, m, svc, 10, 0)
    sent = []
    while (d := buf.pop(400_000)) is not None:
        sent.append(parse(d))
    kept = sorted({h.msg_id for h in sent})
    # frames 0..9 are messages 1..10; priorities 0,3,2,3,1,3,2,3,1,3
    # TL0 (frame 8, thr 2) supersedes queued TL1/TL2 before it; TL2 frame 9 drops none newer
    assert kept == [1, 5, 9, 10], kept
    assert buf.stats.dropped > 0 and buf.dropper_stats.dropped_msgs_by_msg == 6
    assert all(sum(1 for h in sent if h.msg_id == k) == 3 for k in kept)  # whole messages


def test_buffer_drop_by_bitrate_uses_the_transport_estimate() -> None:
    buf = TransportBuffer()
    m = MessageMarker(2)
    for role in SpatialSvc().roles(0, 10e6):
        for d in m.datagrams(bytes(500), role):
            buf.push(d, 0)
    buf.set_estimate(6e6)  # the estimate fell below Q2's 10 Mbit/s but not Q1's 5 Mbit/s
    sent = [parse(d).priority for d in iter(lambda: buf.pop(1000), None)]
    assert sent == [0, 1] and buf.dropper_stats.dropped_msgs_by_bitrate == 1
    buf2 = TransportBuffer()
    for role in SpatialSvc().roles(0, 10e6):
        for d in MessageMarker(2).datagrams(bytes(500), role):
            buf2.push(d, 0)
    assert len([d for d in iter(lambda: buf2.pop(1000), None)]) == 3  # no estimate: no drops


def test_buffer_forwards_a_datagram_without_a_header() -> None:
    buf = TransportBuffer()
    buf.push(b"plain", 0)
    assert buf.pop(0) == b"plain" and buf.stats.header.malformed == 1
