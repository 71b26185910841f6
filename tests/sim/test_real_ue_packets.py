"""The real-UE path's packet handling on arbitrary bytes (no root needed): finding the Octopus
header in an IPv4/UDP packet, mapping addresses to real UEs, building the relay datagram."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from octoric.contracts.octopus_header import OctopusHeader
from octoric.sim.realue.netns import MAX_UES, ue_addr, ue_index
from octoric.sim.realue.path import octopus_payload, udp_datagram


def _checksum_ok(hdr: bytes) -> bool:
    s = sum(struct.unpack("!10H", hdr[:20]))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


@given(st.binary(max_size=200))
def test_any_bytes_give_a_payload_or_none_never_an_error(data: bytes) -> None:
    p = octopus_payload(data)
    assert p is None or p[:2] == b"OC"


@given(st.binary(max_size=100), st.integers(0, 65535), st.integers(0, 65535))
def test_relay_datagrams_are_valid_ipv4_udp_that_carry_the_octopus_header_through(
    payload: bytes, sport: int, dport: int
) -> None:
    pkt = udp_datagram("10.77.0.254", sport, "10.77.0.1", dport, payload)
    assert len(pkt) == 28 + len(payload) and _checksum_ok(pkt)
    assert pkt[12:16] == socket.inet_aton("10.77.0.254")
    assert struct.unpack("!HHH", pkt[20:26]) == (sport, dport, 8 + len(payload))
    assert octopus_payload(pkt) is None or payload[:2] == b"OC"
    h = OctopusHeader(stream_id=1, msg_id=7, first=True, last=False).encode()
    marked = udp_datagram("10.77.0.1", 1, "10.77.1.1", 2, h + payload)
    assert octopus_payload(marked) == h + payload


def test_ue_addresses_round_trip_and_others_are_not_ues() -> None:
    for i in (0, 1, MAX_UES - 1):
        assert ue_index(socket.inet_aton(ue_addr(i))) == i
    for other in ("10.77.0.1", "10.77.0.254", "10.77.1.0", "10.77.2.1", "127.0.0.1"):
        assert ue_index(socket.inet_aton(other)) == -1


def test_octoric_run_passes_real_ues_to_the_simulator_and_they_keep_the_occ_scheme(
    tmp_path: Path,
) -> None:
    from octoric.config import load as load_config
    from octoric.deploy.sim_component import live_argv
    from octoric.sim.overrides import apply_real_ues
    from octoric.sim.scenario import load
    from octoric.supervisor import RunContext

    cfg = load_config(None, ["sim.real_ues=2"])
    argv = live_argv(RunContext(cfg, tmp_path), "http://127.0.0.1:1/occ/v1/flows")
    assert argv[argv.index("--real-ues") + 1] == "2"
    assert "--real-ues" not in live_argv(RunContext(load_config(None, []), tmp_path))
    sc = load("multi-ue")
    for u in sc.ues:
        for f in u.flows:
            f.scheme = "occ"  # as --scheme occ does before the real UEs are chosen
    apply_real_ues(sc, 3)
    flows = [f for u in sc.ues for _ in range(u.count) for f in u.flows]
    assert [f.traffic for f in flows[:4]] == ["real", "real", "real", "video"]
    assert all(f.scheme == "occ" for f in flows[:3]) and sum(u.count for u in sc.ues) == 8
