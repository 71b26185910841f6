"""A1-P through a1-lite to an unmodified ricxappframe xApp, and a1-lite's bad-input handling."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from testkit.rest import token_header

from octoric.deploy.xapp_env import descriptor, xapp_environment
from octoric.redis_server import free_port

from .conftest import RicStack, free_pair

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
PROGRAM = Path(__file__).parent / "programs" / "policy_xapp.py"
TYPE_ID = 30500
POLICY_TYPE = {
    "name": "octopus-drop-policy",
    "description": "test",
    "policy_type_id": TYPE_ID,
    "create_schema": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "priority_threshold": {"type": "integer", "minimum": 0, "maximum": 7},
            "reject": {"type": "boolean"},
        },
        "required": ["priority_threshold"],
        "additionalProperties": False,
    },
}


def http(method: str, url: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **token_header()},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, json.loads(text) if text else None


def test_policy_reaches_xapp_and_status_follows_its_answer(
    ric_stack: RicStack, tmp_path: Path
) -> None:
    base = ric_stack.url("a1_rest_port", "/A1-P/v2")
    rmr_port = free_pair()
    cfg = tmp_path / "cfg.json"
    cfg.write_text(
        json.dumps(
            descriptor(
                "policyx", rmr_port, ["A1_POLICY_REQ"], ["A1_POLICY_RESP"], policies=[TYPE_ID]
            )
        )
    )
    env = xapp_environment(ric_stack.rt, "policyx", rmr_port, free_port(), cfg)
    proc = subprocess.Popen(
        [sys.executable, str(PROGRAM), str(rmr_port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    events: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            events.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    try:
        # wait for ricxappframe's own registration with appmgr-lite (it waits 2 s first)
        deadline = time.monotonic() + 30
        while http("GET", ric_stack.url("appmgr_port", "/ric/v1/xapps"))[1] == []:
            assert time.monotonic() < deadline, "the xApp never registered"
            time.sleep(0.2)

        assert http("PUT", f"{base}/policytypes/{TYPE_ID}", POLICY_TYPE)[0] == 201
        assert http("GET", f"{base}/policytypes")[1] == [TYPE_ID]
        code, err = http(
            "PUT", f"{base}/policytypes/{TYPE_ID}/policies/p1", {"priority_threshold": 9}
        )
        assert code == 400 and "does not match" in err["error"]

        assert (
            http("PUT", f"{base}/policytypes/{TYPE_ID}/policies/p1", {"priority_threshold": 3})[0]
            == 202
        )
        status_url = f"{base}/policytypes/{TYPE_ID}/policies/p1/status"
        deadline = time.monotonic() + 10
        while http("GET", status_url)[1]["instance_status"] != "IN EFFECT":
            assert time.monotonic() < deadline, f"never in effect; xApp saw {events}"
            time.sleep(0.1)
        pol = [e for e in events if e["event"] == "policy"]
        assert pol[0]["operation"] == "CREATE" and pol[0]["sub_id"] == TYPE_ID
        assert pol[0]["payload"] == {"priority_threshold": 3}

        # an xApp answering ERROR leaves the instance not in effect
        assert (
            http(
                "PUT",
                f"{base}/policytypes/{TYPE_ID}/policies/p2",
                {"priority_threshold": 1, "reject": True},
            )[0]
            == 202
        )
        time.sleep(1.0)
        st = http("GET", f"{base}/policytypes/{TYPE_ID}/policies/p2/status")[1]
        assert st["instance_status"] == "NOT IN EFFECT" and st["handlers"] == {
            "policy_xapp": "ERROR"
        }

        # delete: the xApp confirms, the instance disappears
        assert http("DELETE", f"{base}/policytypes/{TYPE_ID}/policies/p1")[0] == 202
        deadline = time.monotonic() + 10
        while http("GET", status_url)[0] != 404:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert http("GET", f"{base}/policytypes/{TYPE_ID}/policies")[1] == ["p2"]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(
    "method, path, raw, code, words",
    [
        ("PUT", "/policytypes/5", b"{not json", 400, "not valid JSON"),
        ("PUT", "/policytypes/5", b'{"name": "x"}', 400, "missing field"),
        ("PUT", "/policytypes/abc", b"{}", 400, "integer"),
        (
            "PUT",
            "/policytypes/5",
            json.dumps({**POLICY_TYPE, "policy_type_id": 6}).encode(),
            400,
            "URL",
        ),
        (
            "PUT",
            "/policytypes/5",
            json.dumps(
                {**POLICY_TYPE, "policy_type_id": 5, "create_schema": {"type": 12}}
            ).encode(),
            400,
            "invalid policy type",
        ),
        ("GET", "/policytypes/77", None, 404, "not found"),
        ("PUT", "/policytypes/77/policies/x", b"{}", 404, "not found"),
    ],
)
def test_bad_a1_requests_get_clear_errors(
    shared_ric: RicStack, method: str, path: str, raw: bytes | None, code: int, words: str
) -> None:
    got, body = http(method, shared_ric.url("a1_rest_port", "/A1-P/v2" + path), raw=raw)
    assert got == code and words in body["error"]
    with urllib.request.urlopen(shared_ric.url("a1_rest_port", "/metrics"), timeout=5) as r:
        assert "octoric_a1_bad_requests" in r.read().decode()
