"""The e2sm error types: one for bytes that do not decode, one for values that do not encode."""

from __future__ import annotations

from octoric.errors import OctoricError


class E2smError(OctoricError):
    """Base of the e2sm errors."""


class E2smDecodeError(E2smError):
    """Bytes (or a decoded value) that are not a valid PDU of the expected type.

    ``type_name`` is the ASN.1 type being decoded, ``where`` says where it failed (a field path
    such as ``E2AP-PDU.initiatingMessage.value`` or ``byte 17``), ``reason`` what was wrong.
    """

    def __init__(self, type_name: str, reason: str, where: str | None = None) -> None:
        self.type_name = type_name
        self.reason = reason
        self.where = where
        at = f" at {where}" if where else ""
        super().__init__(f"cannot decode {type_name}{at}: {reason}")


class E2smEncodeError(E2smError):
    """A value that cannot be encoded as the requested type (out of range, missing field...)."""

    def __init__(self, type_name: str, reason: str) -> None:
        self.type_name = type_name
        self.reason = reason
        super().__init__(f"cannot encode {type_name}: {reason}")
