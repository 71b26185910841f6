"""JSON over HTTP to the run's REST APIs (submgr, a1, the xApps), one request at a time.

Never through a proxy: every such API sits on loopback or in-cluster, and the xApps' environment
points ``HTTP_PROXY`` at appmgr-lite for ricxappframe's registration. An HTTP error answer is a
result (its status and body), not an exception; a connection that fails raises ``OSError``, a
2xx body that is not JSON ``ValueError``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def request_json(
    method: str,
    url: str,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 5.0,
) -> tuple[int, Any]:
    """(HTTP status, the answer's JSON; its text when an error answer is not JSON; None when
    empty)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with _OPENER.open(req, timeout=timeout_s) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw) if raw else None
        except ValueError:
            return e.code, raw.decode(errors="replace")


def request_text(url: str, headers: Mapping[str, str] | None = None, timeout_s: float = 5.0) -> str:
    """The body of a GET as text (e.g. a Prometheus /metrics page); OSError when unreachable."""
    req = urllib.request.Request(url, headers=dict(headers or {}))
    with _OPENER.open(req, timeout=timeout_s) as r:
        return str(r.read().decode())
