"""Logs in the O-RAN SC mdclog JSON shape, and the console mode."""

from __future__ import annotations

import io
import json
import logging

import pytest

from octoric import log as octolog

pytestmark = pytest.mark.unit


def test_mdclog_json_shape() -> None:
    buf = io.StringIO()
    octolog.configure("occ-xapp", fmt="json", level="INFO", stream=buf)
    logging.getLogger("octoric.test").info("hello %s", "world", extra={"mdc": {"ue": 7}})
    logging.getLogger("octoric.test").debug("not shown")
    lines = buf.getvalue().strip().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert set(rec) == {"ts", "crit", "id", "mdc", "msg"}
    assert rec["crit"] == "INFO" and rec["id"] == "occ-xapp" and rec["msg"] == "hello world"
    assert rec["mdc"]["ue"] == 7 and rec["mdc"]["logger"] == "octoric.test"
    assert isinstance(rec["ts"], int) and rec["ts"] > 1_600_000_000_000  # epoch milliseconds


def test_console_mode_is_readable() -> None:
    buf = io.StringIO()
    octolog.configure("x", fmt="console", level="DEBUG", stream=buf)
    logging.getLogger("ric.e2term").warning("node lost", extra={"mdc": {"meid": "gnb_1"}})
    line = buf.getvalue()
    assert "WARNING" in line and "ric.e2term" in line and "node lost" in line
    assert "meid=gnb_1" in line and not line.lstrip().startswith("{")


def test_exceptions_are_kept_in_one_json_line() -> None:
    buf = io.StringIO()
    octolog.configure("x", fmt="json", stream=buf)
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("t").exception("failed")
    rec = json.loads(buf.getvalue())
    assert rec["crit"] == "ERROR" and "ValueError: boom" in rec["msg"]
