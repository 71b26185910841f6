"""docs/testbed.md, the testbed runbook, says only what the repository holds.

- Every repository path it names in inline code, code blocks or links exists (brace lists are
  expanded: ``open5gs_config/{amf,smf}.yaml``). A path is a token that starts with one of the
  repository's top-level folders; ``build/`` (made by the tools) and absolute paths are not.
- Every call of a project script (``srsran_agent/build.sh``, ``open5gs_config/provision.sh``,
  ``examples/*.py``, ...) uses only flags that the script's ``--help`` names.
- Every gNB config it names exists, and its two tables agree with the configs: the testbed
  identity (PLMN, TAC, S-NSSAI, DNN, 5QI, AMF and E2 endpoints, UE subnet, GUAMI) and, per gNB
  config, ``gnb_id``, ``pci``, ``dl_arfcn`` and the E2 node name (meid) the RIC gives it.

Open5GS, the gNB, UHD, AT commands, kubectl and helm are not run here.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from octoric.contracts import ports
from octoric.e2sm.e2ap_ies import GlobalE2NodeId
from octoric.e2sm.node_id import meid_of

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "testbed.md"
GNB_DIR = REPO / "srsran_agent" / "configs"
CORE_DIR = REPO / "open5gs_config"
# the top-level folders a repository path starts with (build/ is made by make and octoric)
TOP = sorted(
    p.name for p in REPO.iterdir() if p.is_dir() and p.name[0] not in "._" and p.name != "build"
)

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(rf"(?<![\w./~$-])((?:{'|'.join(map(re.escape, TOP))})/[\w./{{}},*-]*)")
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
SHELL_END = re.compile(r"\s(?:&&|\|\||[|;&#])|;")
NOT_PATHS = {"octoric/patches"}  # the git branch build.sh applies the series on


# ----------------------------------------------------------------------------------- reading


def code_spans(doc: str) -> list[str]:
    """The code blocks (continuation lines joined) and the inline code of the prose."""
    blocks = [b.replace("\\\n", " ") for b in FENCE.findall(doc)]
    return blocks + INLINE.findall(FENCE.sub("", doc))


def expand(token: str) -> list[str]:
    """Shell brace lists: ``a/{b,c}.yaml`` -> ``a/b.yaml``, ``a/c.yaml``."""
    m = re.search(r"\{([^{}]*)\}", token)
    if not m:
        return [token]
    return [x for alt in m.group(1).split(",") for x in expand(token.replace(m.group(0), alt, 1))]


def repo_paths(doc: str) -> set[str]:
    found = {t.rstrip(".,") for span in code_spans(doc) for t in PATH.findall(span)}
    return {p for t in found for p in expand(t)} - NOT_PATHS


@functools.cache
def accepted_flags(script: str) -> frozenset[str]:
    """The flags ``script --help`` names (bash for .sh, this Python for .py)."""
    path = REPO / script
    run = ["bash"] if path.suffix == ".sh" else [sys.executable]
    r = subprocess.run([*run, str(path), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"{script} --help: {r.stderr[-300:]}"
    return frozenset(FLAG.findall(r.stdout)) | {"-h", "--help"}


def script_calls(doc: str) -> list[tuple[str, list[str]]]:
    """(script, the flags it is given) for every call of a repository script."""
    calls = []
    for span in code_spans(doc):
        for line in span.splitlines():
            for m in PATH.finditer(line):
                script = m.group(1)
                if script.endswith((".sh", ".py")) and (REPO / script).is_file():
                    args = SHELL_END.split(line[m.end() :], maxsplit=1)[0]
                    calls.append((script, FLAG.findall(args)))
    return calls


def table_rows(doc: str) -> list[list[str]]:
    return [
        [c.strip() for c in ln.strip().strip("|").split("|")]
        for ln in doc.splitlines()
        if ln.startswith("| ")
    ]


def ticked(cell: str) -> list[str]:
    return INLINE.findall(cell)


# --------------------------------------------------------------------------- what configs say


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def plmn_bytes(mcc: str, mnc: str) -> bytes:
    """TS 38.413 9.3.3.5: BCD digits, F in place of a 2-digit MNC's third digit."""
    m1, m2, m3 = (int(c) for c in mcc)
    n = [int(c) for c in mnc]
    n3 = n[2] if len(n) == 3 else 0xF
    return bytes([m2 << 4 | m1, n3 << 4 | m3, n[1] << 4 | n[0]])


def config_identity() -> dict[str, set[tuple[str, ...]]]:
    """Doc table row name -> the values the configs hold (a doc row must give exactly one)."""
    out: dict[str, set[tuple[str, ...]]] = {}

    def add(row: str, *value: object) -> None:
        out.setdefault(row, set()).add(tuple(str(v) for v in value))

    for path in sorted(GNB_DIR.glob("gnb_*.yml")):
        g = _yaml(path)
        cell, amf, e2 = g["cell_cfg"], g["cu_cp"]["amf"], g["e2"]
        add("PLMN", cell["plmn"])
        add("TAC", cell["tac"])
        for s in cell["slicing"]:
            add("S-NSSAI", s["sst"], f"{s['sd']:06x}")
        for q in g["qos"]:
            if q.get("rlc", {}).get("mode") == "um-bidir":  # the RTC bearer (not 5QI 9: AM)
                add("RTC bearer 5QI", q["five_qi"])
        add("AMF (NGAP, SCTP)", f"{amf['addr']}:{amf['port']}")
        if path.name != "gnb_rfless.yml":  # one machine, E2 over TCP on loopback: not the lab's RIC
            add("E2 termination (SCTP)", f"{e2['addr']}:{e2['port']}")
            add("E2 termination (SCTP)", f"{e2['addr']}:{ports.E2}")  # octoric's E2 port
    a = _yaml(CORE_DIR / "amf.yaml")["amf"]
    for item in a["plmn_support"]:
        add("PLMN", item["plmn_id"]["mcc"] + item["plmn_id"]["mnc"])
        for s in item["s_nssai"]:
            add("S-NSSAI", s["sst"], s["sd"])
    for t in a["tai"]:
        add("TAC", t["tac"])
    for srv in a["ngap"]["server"]:
        add("AMF (NGAP, SCTP)", f"{srv['address']}:38412")  # NGAP's port (TS 38.412)
    for gu in a["guami"]:
        plmn = plmn_bytes(gu["plmn_id"]["mcc"], gu["plmn_id"]["mnc"]).hex()
        aid = gu["amf_id"]
        add("GUAMI", f"{plmn}:{aid['region']}:{aid['set']}:{aid.get('pointer', 0)}")
    for sess in _yaml(CORE_DIR / "smf.yaml")["smf"]["session"]:
        add("DNN", sess["dnn"])
        add("UE addresses", sess["subnet"])
    return out


def gnb_row(path: Path) -> list[str]:
    """What the gNB table must say for one config: gnb_id, pci, dl_arfcn, the DU's meid (its
    E2 setup carries the gNB-DU-ID, 0 unless the config sets one)."""
    g = _yaml(path)
    cell, plmn = g["cell_cfg"], g["cell_cfg"]["plmn"]
    node = GlobalE2NodeId(plmn_bytes(plmn[:3], plmn[3:]), g["gnb_id"], g["gnb_id_bit_length"],
                          du_id=int(g.get("gnb_du_id", 0)))  # fmt: skip
    pci = cell.get("pci", (g.get("cells") or [{}])[0].get("pci"))  # per-cell PCIs: the first
    return [str(g["gnb_id"]), str(pci), str(cell["dl_arfcn"]), meid_of(node)]


# ----------------------------------------------------------------------------------- checks


def check(doc: str) -> list[str]:
    problems = []
    for p in sorted(repo_paths(doc)):
        if not (list(REPO.glob(p)) if "*" in p else (REPO / p).exists()):
            problems.append(f"no such path in the repository: {p}")
    for target in LINK.findall(FENCE.sub("", doc)):
        target = target.split("#")[0]
        if target and "://" not in target and not (DOC.parent / target).exists():
            problems.append(f"broken link: {target}")
    for script, flags in script_calls(doc):
        for flag in flags:
            if flag.split("=")[0] not in accepted_flags(script):
                problems.append(f"{script} does not accept {flag}")
    for span in code_spans(doc):
        for name in re.findall(r"\bgnb_\w+\.yml\b", span):
            if not (GNB_DIR / name).exists():
                problems.append(f"no gNB config {name} in {GNB_DIR.relative_to(REPO)}")

    rows = table_rows(doc)
    expected = config_identity()
    for name, values in expected.items():
        if len(values) != 1:
            problems.append(f"{name}: the configs disagree ({sorted(values)})")
        doc_rows = [tuple(ticked(r[1])) for r in rows if r[0] == name and len(r) > 1]
        if not doc_rows:
            problems.append(f"{name}: no row in the identity table")
        elif doc_rows[0] not in values:
            problems.append(f"{name}: the doc says {doc_rows[0]}, the configs {sorted(values)}")
    for path in sorted(GNB_DIR.glob("gnb_*.yml")):
        rel = str(path.relative_to(REPO))
        mine = [r for r in rows if ticked(r[0]) == [rel]]
        if not mine:
            problems.append(f"{rel}: no row in the gNB table")
        elif [v for c in mine[0][1:] for v in ticked(c)] != gnb_row(path):
            problems.append(f"{rel}: gNB row {mine[0][1:]}, the config gives {gnb_row(path)}")
    return problems


# ----------------------------------------------------------------------------------- tests


def test_the_runbook_agrees_with_the_repository() -> None:
    assert check(DOC.read_text()) == []


def test_the_runbook_shows_the_project_scripts() -> None:
    called = {s for s, _ in script_calls(DOC.read_text())}
    assert {"srsran_agent/build.sh", "open5gs_config/provision.sh"} <= called


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        ("--jobs 8 ../srsRAN_Project ../", "--job 8 ../srsRAN_Project ../", "--job"),
        ("provision.sh --dry-run", "provision.sh --dryrun", "--dryrun"),
        ("handover_server.py --stream", "handover_server.py --streams", "--streams"),
        ("configs/quectel_rm520n.md`", "configs/quectel_rm500.md`", "quectel_rm500.md"),
        ("{amf,smf,upf,nrf,nssf}", "{amf,smf,upf,nrf,nsf}", "nsf.yaml"),
        ("](occ.md)", "](occ2.md)", "occ2.md"),
        ("`gnb_zmq.yml` first", "`gnb_zmq2.yml` first", "gnb_zmq2.yml"),
        ("| TAC | `7` |", "| TAC | `8` |", "TAC"),
        ("| DNN | `rtc` |", "| DNN | `internet` |", "DNN"),
        ("`10.53.1.3:36421` |", "`10.53.1.3:36422` |", "E2"),
        ("| GUAMI | `00f110:2:1:0`", "| GUAMI | `00f110:1:1:0`", "GUAMI"),
        ("`630000` | `gnb_001_001_00019c_0`", "`630000` | `gnb_001_001_00019d_0`", "100mhz"),
    ],
)
def test_a_wrong_runbook_is_caught(old: str, new: str, expect: str) -> None:
    doc = DOC.read_text()
    assert doc.count(old) == 1, old
    problems = check(doc.replace(old, new))
    assert any(expect in p for p in problems), problems


def test_the_runbook_is_linked() -> None:
    for readme in ("docs/README.md", "srsran_agent/README.md", "open5gs_config/README.md"):
        assert "testbed.md" in (REPO / readme).read_text(), readme
