"""Plain HTTP for tests of the xApps' and the RIC's REST APIs: no proxy, JSON in and out."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from octoric.contracts import auth

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def token_header() -> dict[str, str]:
    """The session's API token (tests/conftest.py sets it) as the RIC's REST wants it."""
    return auth.bearer(os.environ.get(auth.TOKEN_ENV, ""))


def http(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    """(status, JSON or raw bytes); ``body``: JSON-able, or bytes sent as they are."""
    data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=token_header())
    try:
        with NO_PROXY.open(req, timeout=5) as r:
            raw = r.read()
            if raw and r.headers.get_content_type() == "application/json":
                return r.status, json.loads(raw)
            return r.status, raw
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def wait_until(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """``fn()``'s first truthy value (OSError counts as not yet), or AssertionError naming
    ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            v = fn()
        except OSError:
            v = None
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
