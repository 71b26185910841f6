"""JSON values in an xApp's SDL namespace ``octoric.<xapp>``, through ricsdl (the O-RAN SC
SDL client ricxappframe uses, reading ``DBAAS_SERVICE_HOST``/``PORT``), so the data sits in
Redis in the platform's key layout (``{octoric.occ},flow.1``) and survives the xApp."""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("xapps.sdl")


class SdlStore:
    """get/set/delete/find of JSON (or raw bytes) under one namespace. Thread-safe as ricsdl
    (each call is one Redis command or pipeline)."""

    def __init__(self, xapp: str, storage: Any | None = None) -> None:
        self.ns = f"octoric.{xapp}"
        if storage is None:
            from ricsdl.syncstorage import SyncStorage

            storage = SyncStorage()
        self._s = storage

    def set_json(self, key: str, value: Any) -> None:
        self._s.set(self.ns, {key: json.dumps(value).encode()})

    def set_many(self, items: dict[str, bytes]) -> None:
        if items:
            self._s.set(self.ns, items)

    def set_many_json(self, items: dict[str, Any]) -> None:
        self.set_many({k: json.dumps(v).encode() for k, v in items.items()})

    def get(self, key: str) -> bytes | None:
        v = self._s.get(self.ns, {key}).get(key)
        return None if v is None else bytes(v)

    def get_json(self, key: str) -> Any:
        v = self.get(key)
        return None if v is None else json.loads(v)

    def find(self, prefix: str) -> dict[str, bytes]:
        """Every key starting with ``prefix`` (glob characters in it are escaped)."""
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
        return {k: bytes(v) for k, v in self._s.find_and_get(self.ns, pattern).items()}

    def find_json(self, prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.find(prefix).items():
            try:
                out[k] = json.loads(v)
            except ValueError:
                log.warning("SDL %s,%s is not JSON; ignored", self.ns, k)
        return out

    def delete(self, *keys: str) -> None:
        if keys:
            self._s.remove(self.ns, set(keys))

    def healthy(self) -> bool:
        try:
            return bool(self._s.is_active())
        except Exception:  # any backend failure means "not healthy", never a crash
            return False
