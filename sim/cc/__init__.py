"""Sender rate-control schemes: one file per scheme, found by name in one registry.

A scheme is a ``RateController`` built by a factory registered with ``register_scheme("name")``;
the engine only calls the interface, so a new scheme (Copa, RoCC, Dumbo, BBR, BBR-H, MORC,
Octopus transport, ...) is one new file here, started from ``_template.py``, plus one import
line below. The imports are explicit (no plugin discovery) so the scheme graph stays readable.
"""

from __future__ import annotations

# Each import registers its scheme (module-level ``register_scheme`` or
# ``register_window_scheme`` call: window schemes drive the packet-level transport).
from octoric.sim.cc import awstream, dumbo, octobbr, salsify  # video on the transport
from octoric.sim.cc.base import (
    SCHEMES,
    RateController,
    SchemeContext,
    SchemeFactory,
    build_scheme,
    register_scheme,
)
from octoric.sim.cc.bbr import Bbr, BbrH, BbrPlus
from octoric.sim.cc.copa import Copa
from octoric.sim.cc.cubic import Cubic
from octoric.sim.cc.fixed import FixedRate
from octoric.sim.cc.gcc import Gcc, GccNoProbe
from octoric.sim.cc.morc import Morc
from octoric.sim.cc.occ_fed import OccFed
from octoric.sim.cc.pbe import PbeStyle
from octoric.sim.cc.rocc import Rocc
from octoric.sim.transport import WINDOW_SCHEMES, WindowScheme
from octoric.sim.video import ProbeCluster, SentBatch

__all__ = [
    "SCHEMES",
    "WINDOW_SCHEMES",
    "Bbr",
    "BbrH",
    "BbrPlus",
    "Copa",
    "Cubic",
    "FixedRate",
    "Gcc",
    "GccNoProbe",
    "Morc",
    "OccFed",
    "PbeStyle",
    "ProbeCluster",
    "RateController",
    "Rocc",
    "SchemeContext",
    "SchemeFactory",
    "SentBatch",
    "WindowScheme",
    "awstream",
    "build_scheme",
    "dumbo",
    "octobbr",
    "register_scheme",
    "salsify",
]
