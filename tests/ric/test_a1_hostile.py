"""a1-lite against hostile policy types and bodies (issue #17): no file read, no outbound
connection, no regex blow-up, no 500. Each test fails on the a1-lite before ric/a1_schema.py."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .conftest import RicStack
from .test_a1 import http

pytestmark = [pytest.mark.integration]
TID = 31000


def _type(schema: dict[str, Any], tid: int = TID) -> dict[str, Any]:
    return {"name": "hostile", "description": "t", "policy_type_id": tid, "create_schema": schema}


def test_a_file_ref_is_refused_and_nothing_is_read(ric_stack: RicStack, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "string", "description": "SECRET-7f3a"}')
    base = ric_stack.url("a1_rest_port", "/A1-P/v2")
    code, body = http("PUT", f"{base}/policytypes/{TID}", _type({"$ref": f"file://{secret}"}))
    assert code == 400, body
    assert "only references inside the schema" in str(body)
    assert "SECRET-7f3a" not in str(body)
    assert http("GET", f"{base}/policytypes/{TID}")[0] == 404


def test_a_remote_ref_is_refused_without_connecting(ric_stack: RicStack) -> None:
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            time.sleep(15)  # what a hostile server would do: hold the validator

        def log_message(self, *args: Any) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        base = ric_stack.url("a1_rest_port", "/A1-P/v2")
        ref = f"http://127.0.0.1:{srv.server_address[1]}/schema.json"
        schema = {"type": "object", "properties": {"x": {"$ref": ref}}}
        t0 = time.monotonic()
        code, body = http("PUT", f"{base}/policytypes/{TID}", _type(schema))
        assert code == 400, body
        assert time.monotonic() - t0 < 2.0
        assert hits == []
    finally:
        srv.shutdown()


def test_a_backtracking_pattern_does_not_block_the_api(ric_stack: RicStack) -> None:
    base = ric_stack.url("a1_rest_port", "/A1-P/v2")
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    assert http("PUT", f"{base}/policytypes/{TID}", _type(schema))[0] == 201
    t0 = time.monotonic()
    code, body = http("PUT", f"{base}/policytypes/{TID}/policies/p1", {"s": "a" * 60 + "!"})
    assert code == 400, body
    assert "does not match" in str(body)
    assert time.monotonic() - t0 < 1.0  # Python's re would take longer than the universe
    assert http("PUT", f"{base}/policytypes/{TID}/policies/p2", {"s": "aaaa"})[0] == 202
    assert http("GET", f"{base}/policytypes")[0] == 200


def test_patterns_re2_cannot_run_are_refused_at_upload(ric_stack: RicStack) -> None:
    base = ric_stack.url("a1_rest_port", "/A1-P/v2")
    for pattern in ("(a)\\1", "^(?=a)b"):
        schema = {"type": "string", "pattern": pattern}
        code, body = http("PUT", f"{base}/policytypes/{TID}", _type(schema))
        assert code == 400, (pattern, body)
        assert "RE2" in str(body)


def test_deep_json_is_a_400_not_a_500(ric_stack: RicStack) -> None:
    base = ric_stack.url("a1_rest_port", "/A1-P/v2")
    code, body = http("PUT", f"{base}/policytypes/{TID}", raw=b"[" * 200_000 + b"]" * 200_000)
    assert code in (400, 413), body
    deep: Any = {"type": "object"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"a": deep}}
    code, body = http("PUT", f"{base}/policytypes/{TID}", _type(deep))
    assert code == 400, body
    assert "deeper than" in str(body)
