"""Errors of the xApp shell: bad descriptors/controls, submgr failures, REST input."""

from __future__ import annotations

from octoric.errors import OctoricError


class XappError(OctoricError):
    """Base class of the xApp shell's errors."""


class XappConfigError(XappError):
    """The descriptor or a ``controls`` field is invalid; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"xApp config {field}: {message}")


class SubmgrError(XappError):
    """submgr refused or could not be reached."""


class RestError(XappError):
    """A REST request is rejected: ``status`` is the HTTP status, ``reason`` a counter key."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status, self.reason = status, reason
        super().__init__(message)
