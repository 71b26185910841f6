"""The handover check lives in ``deploy.handover_check`` (the run report checks every run
with it); its names, for the experiments that import them from here."""

from octoric.deploy.handover_check import (
    ENDS,
    CheckResult,
    GtHandover,
    check,
    check_run,
    ground_truth,
)

__all__ = ["ENDS", "CheckResult", "GtHandover", "check", "check_run", "ground_truth"]
