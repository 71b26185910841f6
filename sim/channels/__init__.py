"""Per-UE channel models, one file each, and the trace readers they use.

| model | file |
|---|---|
| ``ConstantChannel`` | ``constant.py`` |
| ``PulseChannel`` | ``pulse.py`` |
| ``FadingChannel`` | ``fading.py`` |
| ``MahimahiChannel`` | ``mahimahi.py`` |
| ``CqiTraceChannel`` | ``cqi.py`` |
| ``RouteChannel`` | ``route.py`` (the OCC paper's over-the-air routes) |
| ``StepsChannel`` | ``steps.py`` (a rate re-drawn in a range every period, MORC's lab) |

``gnb_view.py``: what a gNB reports for a trace channel with ``report: gnb``.

``base.py`` holds the ``Channel`` protocol and ``ChannelContext``; ``traces.py`` the Mahimahi
and CQI-CSV readers. The engine maps a scenario's ``channel.kind`` to a model
(``octoric.sim.engine``).
"""

from __future__ import annotations

from octoric.sim.channels import gnb_view
from octoric.sim.channels.base import Channel, ChannelContext, reported_block
from octoric.sim.channels.constant import ConstantChannel
from octoric.sim.channels.cqi import CqiTraceChannel
from octoric.sim.channels.fading import FadingChannel
from octoric.sim.channels.mahimahi import MIN_PACKETS, MahimahiChannel, previous_period_mean
from octoric.sim.channels.pulse import PulseChannel
from octoric.sim.channels.route import ROUTES, RouteChannel
from octoric.sim.channels.steps import StepsChannel
from octoric.sim.channels.traces import (
    MAHIMAHI_PACKET_BYTES,
    CqiTrace,
    MahimahiTrace,
    read_cqi_csv,
    read_mahimahi,
)

__all__ = [
    "MAHIMAHI_PACKET_BYTES",
    "MIN_PACKETS",
    "ROUTES",
    "Channel",
    "ChannelContext",
    "ConstantChannel",
    "CqiTrace",
    "CqiTraceChannel",
    "FadingChannel",
    "MahimahiChannel",
    "MahimahiTrace",
    "PulseChannel",
    "RouteChannel",
    "StepsChannel",
    "gnb_view",
    "previous_period_mean",
    "read_cqi_csv",
    "read_mahimahi",
    "reported_block",
]
