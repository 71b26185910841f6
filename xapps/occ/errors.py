"""Exceptions of the OCC engine: one type for bad configuration, one for bad input."""

from __future__ import annotations

from collections.abc import Sequence

from octoric.errors import OctoricError


class OccError(OctoricError):
    """Base class of the OCC engine's errors."""


class OccConfigError(OccError):
    """An ``OccConfig`` field is out of range; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"occ config {field}: {message}")


class OccInputError(OccError):
    """A KPM batch was rejected; no UE's state was touched.

    ``reason`` is a short stable key (used as the counter name), ``bad_ue_ids`` the UEs whose
    rows are at fault when the fault is per UE (empty when the whole batch is malformed), so a
    caller may drop those rows and ingest the rest.
    """

    def __init__(self, reason: str, message: str, bad_ue_ids: Sequence[int] = ()) -> None:
        self.reason = reason
        self.bad_ue_ids = tuple(int(u) for u in bad_ue_ids)
        super().__init__(f"occ input rejected ({reason}): {message}")
