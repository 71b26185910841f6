"""The Octopus dropper's served rate (drop-by-bitrate's BW): the queue's dequeue rate within its
busy period, between departures, over 50 ms but at least 5 departures, as the SEC'23 authors'
reference queue measures it; liboctopus must agree (tests/liboctopus)."""

from __future__ import annotations

import pytest

from octoric.contracts.octopus_dropper import MIN_DEPARTURES, OctopusDropper
from octoric.contracts.octopus_header import OctopusHeader


class _Pkt:
    def __init__(self, hdr: OctopusHeader, size: int) -> None:
        self.hdr, self.size = hdr, size


def test_rate_between_departures_with_waiting_slots_counted() -> None:
    d = OctopusDropper(1000)
    assert d.served_bps() is None
    d.on_slot(1500, True)
    assert d.served_bps() is None, "one departure is no rate"
    for _ in range(3):  # waiting with data: time passes, nothing leaves
        d.on_slot(0, True)
    d.on_slot(1500, True)
    # 1500 B after the first departure over the 4 slots (4 ms) from it to the second
    assert d.served_bps() == pytest.approx(1500 * 8 / 4e-3)


def test_a_slot_that_ends_empty_restarts_the_measurement() -> None:
    d = OctopusDropper(1000)
    for _ in range(10):
        d.on_slot(1000, True)
    assert d.served_bps() == pytest.approx(8e6)
    d.on_slot(200, False)  # drained: the busy period is over
    assert d.served_bps() is None
    d.on_slot(500, True)
    assert d.served_bps() is None
    d.on_slot(500, True)
    assert d.served_bps() == pytest.approx(4e6), "the old period still counts"


def test_window_is_50_ms_but_at_least_five_departures() -> None:
    d = OctopusDropper(1000)
    for _ in range(100):  # 100 ms at 8 Mbit/s, then 100 ms at 4 Mbit/s
        d.on_slot(1000, True)
    for _ in range(100):
        d.on_slot(500, True)
    assert d.served_bps() == pytest.approx(4e6), "departures older than 50 ms are forgotten"
    # a slow link: one departure every 40 ms; the window stretches to 5 departures (160 ms)
    for _ in range(10):
        for _ in range(39):
            d.on_slot(0, True)
        d.on_slot(1500, True)
    assert len(d.departures) == MIN_DEPARTURES
    assert d.served_bps() == pytest.approx(4 * 1500 * 8 / 160e-3)


def test_bitrate_drops_only_while_the_queue_stays_busy() -> None:
    """A 3 Mbit/s layer over a link serving 2 Mbit/s while backlogged is dropped; the same
    layer after the queue drained (sparse departures, no busy period) is not."""
    d = OctopusDropper(1000)
    for _ in range(20):
        d.on_slot(250, True)  # 2 Mbit/s, data always waiting
    hdr = OctopusHeader(1, 7, True, True, 2, False, 0, 3000)
    assert d.should_drop(_Pkt(hdr, 1200), 20_000)
    d.on_slot(1200, False)
    hdr2 = OctopusHeader(1, 8, True, True, 2, False, 0, 3000)
    assert not d.should_drop(_Pkt(hdr2, 1200), 21_000)
