"""Errors of the simulator: each names the file and line (or the key) at fault."""

from __future__ import annotations

from octoric.errors import OctoricError


class SimError(OctoricError):
    """A simulator input (scenario, trace, option) is invalid."""


class TraceError(SimError):
    """A channel trace file is unreadable or malformed; the message starts with file:line."""

    def __init__(self, message: str, path: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class ScenarioError(SimError):
    """A scenario file or name is invalid; the message starts with file:line or the key."""

    def __init__(self, message: str, where: str | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
