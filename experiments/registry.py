"""Every paper reproduction, registered by importing its module (each ends with
``register(...)``): the list ``octoric eval`` builds its subcommands from. Explicit imports,
no plugin discovery, so the set of papers stays readable (as ``sim/cc``'s schemes)."""

from __future__ import annotations

from octoric.experiments import (
    dumbo_eval,
    morc_eval,
    occ_eval,
    sec23_eval,
    ton22_eval,
    webrtc_eval,
)  # fmt: skip
from octoric.experiments.experiment import EXPERIMENTS, Experiment

__all__ = ["EXPERIMENTS", "Experiment", "dumbo_eval", "morc_eval", "occ_eval", "sec23_eval",
           "ton22_eval", "webrtc_eval"]  # fmt: skip
