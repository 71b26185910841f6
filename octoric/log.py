"""Structured logging in the O-RAN SC mdclog shape, with a readable console mode.

mdclog lines are one JSON object each: ``{"ts": <epoch ms>, "crit": "INFO", "id": <component>,
"mdc": {...}, "msg": "..."}``; log collectors on the O-RAN SC platform parse exactly that.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any, Literal, TextIO

LogFormat = Literal["json", "console"]

_CRIT = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARNING",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "CRITICAL",
}


class MdcLogFormatter(logging.Formatter):
    """One mdclog JSON object per record. Extra context goes in ``mdc`` (``extra={"mdc": {}}``)."""

    def __init__(self, component: str) -> None:
        super().__init__()
        self.component = component

    def format(self, record: logging.LogRecord) -> str:
        mdc: dict[str, Any] = {"logger": record.name, "PID": record.process}
        extra = getattr(record, "mdc", None)
        if isinstance(extra, dict):
            mdc.update({str(k): v for k, v in extra.items()})
        msg = record.getMessage()
        if record.exc_info:
            msg = f"{msg}\n{self.formatException(record.exc_info)}"
        line = {
            "ts": int(record.created * 1000),
            "crit": _CRIT.get(record.levelno, record.levelname),
            "id": self.component,
            "mdc": mdc,
            "msg": msg,
        }
        return json.dumps(line, default=str, separators=(",", ":"))


class ConsoleFormatter(logging.Formatter):
    """Short human lines: ``12:01:02.345 INFO  ric.e2term  node connected  meid=gnb_1``."""

    def format(self, record: logging.LogRecord) -> str:
        t = time.strftime("%H:%M:%S", time.localtime(record.created))
        ms = int(record.msecs)
        extra = getattr(record, "mdc", None)
        ctx = ""
        if isinstance(extra, dict) and extra:
            ctx = "  " + " ".join(f"{k}={v}" for k, v in extra.items())
        line = f"{t}.{ms:03d} {record.levelname:<7} {record.name:<18} {record.getMessage()}{ctx}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(
    component: str = "octoric",
    fmt: LogFormat | None = None,
    level: str | int | None = None,
    stream: TextIO | None = None,
) -> None:
    """Set up the root logger once per process.

    Defaults come from the environment so child processes inherit the choice:
    ``OCTORIC_LOG_FORMAT`` (json|console; console when stderr is a TTY) and ``OCTORIC_LOG_LEVEL``.
    """
    out = stream or sys.stderr
    if fmt is None:
        env_fmt = os.environ.get("OCTORIC_LOG_FORMAT")
        fmt = "console" if out.isatty() else "json"
        if env_fmt == "json":
            fmt = "json"
        elif env_fmt == "console":
            fmt = "console"
    if level is None:
        level = os.environ.get("OCTORIC_LOG_LEVEL", "INFO")
    handler = logging.StreamHandler(out)
    handler.setFormatter(MdcLogFormatter(component) if fmt == "json" else ConsoleFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
