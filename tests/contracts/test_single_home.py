"""Issue #11, done-when 2: every cross-process fact is defined in ``contracts/`` only.

Scans the product's Python sources (not tests: they pin values on purpose) token by token, so
docstrings and comments may still name a number; code may not. What counts as a copy:

- an RMR message type (>= 10000), a default port or an E2SM-RC parameter id of contracts written
  as an integer literal;
- a KPM measurement name (``RRU.*``, ``OCC.*``, ``DRB.*``) or a RAN function OID as a string;
- the feedback wire format: its RTCP identifiers (``b"REMB"``, ``b"OCCF"``), or a function or
  class that encodes, parses or listens for it;
- an A1-P path (a string with ``/A1-P/``: ``contracts.a1`` builds them);
- a copy of a list of KPM measurements that ``contracts.kpm`` defines (OCC_MEASUREMENTS,
  OCC_ENGINE_INPUTS, STANDARD_MEASUREMENTS, UE_LEVEL, ...): a tuple, list or set literal of its
  measurement constants with the same members.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

from octoric.contracts import kpm, message_types, ports, rc

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("octoric", "e2sm", "rmr", "ric", "sim", "xapps", "experiments", "deploy", "examples")

# the RIC and octoric types (10000+); the platform's low ones (100, 1100, ...) look like sizes
MESSAGE_TYPES = {v for v in message_types.BY_NAME.values() if v >= 10000}
PORTS = {v for k, v in vars(ports).items() if k.isupper() and isinstance(v, int)}
RC_PARAMS = {rc.PARAM_NR_CELL, rc.PARAM_HO_PHASE, rc.PARAM_SOURCE_CELL}
NUMBERS = {
    **{n: "RMR message type" for n in MESSAGE_TYPES},
    **{n: "default port" for n in PORTS},
    **{n: "E2SM-RC parameter id" for n in RC_PARAMS},
}
STRINGS = re.compile(
    r"""^[rbu]*["'](?:(?:RRU|OCC|DRB)\.[A-Za-z]+|1\.3\.6\.1\.4\.1\.53148\.[\d.]+|REMB|OCCF)["']$"""
)
A1_PATH = re.compile(r"""^[rbfuRBFU]*(?!"{3}|'{3})["'].*/A1-P/""")  # code, not a docstring
MEASUREMENT_CONSTANTS = {
    k: v for k, v in vars(kpm).items() if k.isupper() and STRINGS.match(repr(v))
}
# the lists of measurements contracts.kpm defines (OCC_MEASUREMENTS, OCC_ENGINE_INPUTS, ...)
MEASUREMENT_SETS = {
    frozenset(v): k for k, v in vars(kpm).items()
    if k.isupper() and isinstance(v, tuple | frozenset | dict) and len(v) >= 3
    and all(isinstance(m, str) and m in MEASUREMENT_CONSTANTS.values() for m in v)
}  # fmt: skip
DEFINITIONS = re.compile(
    r"^\s*(?:def|class)\s+(\w*(?:parse_feedback|encode_\w*feedback|encode_remb|FeedbackListener)\w*)",
    re.M,
)


def product_files() -> list[Path]:
    argv = ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--"]
    argv += [f"{d}/*.py" for d in PRODUCT]
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    skip = ("contracts/", "e2sm/_generated/")
    return [REPO / p for p in out if not p.startswith(skip) and (REPO / p).is_file()]


def copies_in(text: str) -> list[str]:
    found: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        line = tok.start[0]
        if tok.type == tokenize.NUMBER and "_" not in tok.string:  # 10_000 is a quantity
            try:
                value = int(tok.string, 0)
            except ValueError:
                continue
            if value in NUMBERS:
                found.append(f"{line}: {NUMBERS[value]} {value}")
        elif tok.type == tokenize.STRING and STRINGS.match(tok.string):
            found.append(f"{line}: {tok.string}")
        elif tok.type == tokenize.STRING and A1_PATH.match(tok.string):
            found.append(f"{line}: A1 path {tok.string}")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            attrs = [e.attr for e in node.elts if isinstance(e, ast.Attribute)]
            named = frozenset(MEASUREMENT_CONSTANTS[a] for a in attrs if a in MEASUREMENT_CONSTANTS)
            if len(named) == len(node.elts) and named in MEASUREMENT_SETS:
                found.append(f"{node.lineno}: a copy of contracts.kpm.{MEASUREMENT_SETS[named]}")
    for m in DEFINITIONS.finditer(text):
        found.append(f"{text.count(chr(10), 0, m.start()) + 1}: feedback format {m.group(1)}")
    return found


def test_no_contract_is_written_outside_contracts() -> None:
    files = product_files()
    assert len(files) > 100, "the product sources were not found"
    copies = {str(p.relative_to(REPO)): c for p in files if (c := copies_in(p.read_text()))}
    assert not copies, "define these in contracts/ and import them:\n" + "\n".join(
        f"  {f}:{c}" for f, cs in sorted(copies.items()) for c in cs
    )


@pytest.mark.parametrize(
    "source",
    [
        "RIC_INDICATION = 12050\n",
        "def run(port: int = 8090) -> None: ...\n",
        "params = [RanParam(17011, x)]\n",
        'MEAS = ("OCC.McsDl",)\n',
        'name = b"REMB"\n',
        "def parse_feedback(data: bytes) -> int: ...\n",
        "class FeedbackListener: ...\n",
        'url = f"http://{host}:{port}/A1-P/v2/policytypes/30500"\n',
        "STANDARD = (K.PRB_USED_DL, K.PRB_AVAIL_DL,\n    K.UE_THP_DL)\n",
        "wanted = [kpm.PRB_USED_DL, kpm.MCS_DL, kpm.BITS_PER_PRB_DL, kpm.DL_BUFFER_BYTES,\n"
        "          kpm.DL_ARRIVED_BYTES, kpm.UE_THP_DL]\n",
    ],
)
def test_the_scan_finds_a_copy(source: str) -> None:
    assert copies_in(source), f"not caught: {source!r}"


def test_the_scan_leaves_prose_and_quantities_alone() -> None:
    text = '"""Sends RIC_INDICATION (12050) on port 8090 (PUT /A1-P/v2/...)."""\nRATE = 10_000\n'
    assert copies_in(text) == []
    # a list of one's own choosing is not a copy of a contract's (examples/kpm_subscriber.py)
    mine = "MEASUREMENTS = [K.PRB_USED_DL, K.MCS_DL, K.UE_THP_DL, K.DL_BUFFER_BYTES]\n"
    assert copies_in(mine + "pair = (K.PRB_USED_DL, K.MCS_DL)\nx = (a.b, c.d, e.f)\n") == []


def test_contracts_hold_what_the_scan_looks_for() -> None:
    assert kpm.MCS_DL == "OCC.McsDl" and kpm.ACTIVE_UES_DL in kpm.AGGREGATION
    assert message_types.OCTORIC_HO_EVENT == 30501 and ports.OCC_HTTP == 8090
