"""Webhook subscriptions: what an application server registers, validated strictly.

``POST /handover/v1/subscriptions`` with ``{"url": "http://...", "secret"?: str,
"filters"?: {"ues"?: [int], "cells"?: [str], "events"?: [kind]}, "ttl_s"?: number}``.
Unknown fields, a non-http(s) URL, oversized lists or strings are refused with a reason
(a counter key). The secret, given or generated, is returned once, at creation.
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from octoric.contracts.ho_event import KINDS

MAX_URL = 2048
MAX_LIST = 1024
MAX_SECRET = 256
MIN_SECRET = 16
MAX_TTL_S = 365 * 86400


class SubscriptionError(ValueError):
    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


@dataclass(frozen=True)
class Filters:
    ues: frozenset[int] = frozenset()  # empty: every UE
    cells: frozenset[str] = frozenset()  # source or target NR CGI; empty: every cell
    events: frozenset[str] = frozenset()  # empty: every kind

    def match(self, ev: dict[str, Any]) -> bool:
        if self.ues and ev.get("ue") not in self.ues:
            return False
        if self.events and ev.get("event") not in self.events:
            return False
        return not self.cells or bool({ev.get("source_cell"), ev.get("target_cell")} & self.cells)

    def to_json(self) -> dict[str, list[Any]]:
        return {"ues": sorted(self.ues), "cells": sorted(self.cells), "events": sorted(self.events)}


@dataclass
class WebhookSubscription:
    id: str
    url: str
    secret: str
    filters: Filters
    created: float = field(default_factory=time.time)
    expires_at: float | None = None  # ttl_s given: gone after this (unix s)

    def public(self) -> dict[str, Any]:
        """What GET shows: never the secret."""
        return {"id": self.id, "url": self.url, "filters": self.filters.to_json(),
                "created": self.created, "expires_at": self.expires_at}  # fmt: skip

    def to_sdl(self) -> dict[str, Any]:
        d = asdict(self)
        d["filters"] = self.filters.to_json()
        return d

    @classmethod
    def from_sdl(cls, d: dict[str, Any]) -> WebhookSubscription:
        f = d["filters"]
        return cls(
            str(d["id"]), str(d["url"]), str(d["secret"]),
            Filters(frozenset(f["ues"]), frozenset(f["cells"]), frozenset(f["events"])),
            float(d["created"]), None if d.get("expires_at") is None else float(d["expires_at"]),
        )  # fmt: skip


def _list(v: Any, name: str, kind: type) -> list[Any]:
    if not isinstance(v, list):
        raise SubscriptionError("bad_filters", f"filters.{name} must be a list")
    if len(v) > MAX_LIST:
        raise SubscriptionError("too_large", f"filters.{name}: at most {MAX_LIST} entries")
    for x in v:
        if not isinstance(x, kind) or isinstance(x, bool):
            raise SubscriptionError("bad_filters", f"filters.{name}: {x!r} is not {kind.__name__}")
    return v


def parse(body: Any, now: float | None = None) -> WebhookSubscription:
    """A new subscription from a request body (``SubscriptionError`` with a reason)."""
    if not isinstance(body, dict):
        raise SubscriptionError("not_object", "the body must be a JSON object")
    unknown = set(body) - {"url", "secret", "filters", "ttl_s"}
    if unknown:
        raise SubscriptionError("unknown_field", f"unknown fields: {', '.join(sorted(unknown))}")
    url = body.get("url")
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        raise SubscriptionError("bad_url", f"url must be a string of 1..{MAX_URL} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SubscriptionError("bad_url", "url must be http:// or https:// with a host")
    if any(c in url for c in "\r\n\t "):
        raise SubscriptionError("bad_url", "url must not contain whitespace")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as e:
        raise SubscriptionError("bad_url", f"url: {e}") from None
    secret = body.get("secret")
    if secret is None:
        secret = secrets.token_hex(32)
    elif not isinstance(secret, str) or not MIN_SECRET <= len(secret) <= MAX_SECRET:
        raise SubscriptionError(
            "bad_secret", f"secret must be a string of {MIN_SECRET}..{MAX_SECRET} characters"
        )
    f = body.get("filters") or {}
    if not isinstance(f, dict) or set(f) - {"ues", "cells", "events"}:
        raise SubscriptionError("bad_filters", "filters may hold ues, cells and events only")
    ues = _list(f.get("ues", []), "ues", int)
    cells = _list(f.get("cells", []), "cells", str)
    events = _list(f.get("events", []), "events", str)
    bad = [e for e in events if e not in KINDS]
    if bad:
        raise SubscriptionError("bad_filters", f"unknown event kinds {bad}; known: {list(KINDS)}")
    ttl = body.get("ttl_s")
    if ttl is not None and (
        not isinstance(ttl, int | float) or isinstance(ttl, bool) or not 0 < ttl <= MAX_TTL_S
    ):
        raise SubscriptionError("bad_ttl", f"ttl_s must be a number in (0, {MAX_TTL_S}]")
    t = time.time() if now is None else now
    return WebhookSubscription(
        uuid.uuid4().hex, url, secret, Filters(frozenset(ues), frozenset(cells), frozenset(events)),
        t, None if ttl is None else t + float(ttl),
    )  # fmt: skip
