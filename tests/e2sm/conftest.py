"""Fixtures of the e2sm suite: the reference codecs compiled from ../shared/reference/asn1."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


@pytest.fixture(scope="session")
def vectors_dir(shared_dir: Path) -> Path:
    d = shared_dir / "vectors" / "srsran"
    if not (d / "index.json").is_file():
        pytest.skip(f"{d}/index.json not found: no srsRAN vectors to check against")
    return d


@pytest.fixture(scope="session")
def reference_asn1(shared_dir: Path) -> Path:
    d = shared_dir / "reference" / "asn1"
    if not d.is_dir():
        pytest.skip(f"{d} not found: no reference ASN.1 modules")
    return d


@pytest.fixture(scope="session")
def asn1tools_kpm(reference_asn1: Path) -> Any:
    """asn1tools (aligned PER) compiled from the O-RAN E2SM v05.00 + KPM v04.00 modules."""
    import asn1tools

    files = [reference_asn1 / "e2sm-v5.00.asn", reference_asn1 / "e2sm-kpm-v4.00.asn"]
    return asn1tools.compile_files([str(f) for f in files], "per")


@pytest.fixture(scope="session")
def asn1tools_rc(reference_asn1: Path) -> Any:
    """asn1tools (aligned PER) compiled from the O-RAN E2SM v05.00 + RC v05.00 modules."""
    import asn1tools

    files = [reference_asn1 / "e2sm-v5.00.asn", reference_asn1 / "e2sm-rc-v5.00.asn"]
    return asn1tools.compile_files([str(f) for f in files], "per")


@pytest.fixture(scope="session")
def reference_e2ap(reference_asn1: Path, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """pycrate compiled from the O-RAN E2AP v03.01 module, with its two known defects fixed
    in a temporary copy (RICtimeToWait not imported; RICQuery* misspelled)."""
    from pycrate_asn1c.asnproc import PycrateGenerator, compile_text, generate_modules
    from pycrate_asn1c.glob import GLOBAL

    text = (reference_asn1 / "e2ap-v03.01.asn").read_text()
    text = re.sub(r"\bRICQuery(Request|Response|Failure)\b", r"RICquery\1", text)
    text = text.replace("\tTimeToWait,\n", "\tTimeToWait,\n\tRICtimeToWait,\n", 1)
    tmp = tmp_path_factory.mktemp("e2ap-ref")
    (tmp / "e2ap.asn").write_text(text)
    GLOBAL.clear()
    compile_text([text], filenames=[str(tmp / "e2ap.asn")])
    out = tmp / "ref_e2ap.py"
    generate_modules(PycrateGenerator, str(out))
    GLOBAL.clear()
    spec = importlib.util.spec_from_file_location("octoric_test_ref_e2ap", out)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["octoric_test_ref_e2ap"] = mod
    spec.loader.exec_module(mod)
    return mod
