"""Exceptions shared across octoric. Each names what failed and where."""

from __future__ import annotations


class OctoricError(Exception):
    """Base class: an error a user can act on (printed without a traceback by the CLI)."""


class ConfigError(OctoricError):
    """A configuration file or override is invalid. ``where`` is 'file:line' or a key path."""

    def __init__(self, message: str, where: str | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
