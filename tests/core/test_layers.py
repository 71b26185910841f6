"""The layers contract (pyproject.toml ``[tool.importlinter]``, docs/architecture.md) holds, and
import-linter really catches what it is there for: a sibling importing a sibling, and a cycle.

The failing cases run import-linter on a copy of the package (symlinks resolved, one import
added), never on the tree itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def lint_imports(root: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "OCTORIC_RMR_NO_PRELOAD": "1"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_tree_keeps_every_contract() -> None:
    r = lint_imports(REPO, REPO / "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The ``octoric`` package copied with its symlinked areas as real folders."""
    shutil.copytree(
        REPO / "octoric", tmp_path / "octoric",
        ignore=shutil.ignore_patterns("__pycache__", "target", "_generated", "*.so"),
    )  # fmt: skip
    (tmp_path / "octoric/e2sm/_generated").mkdir()
    (tmp_path / "octoric/e2sm/_generated/__init__.py").write_text("")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + "\n" + line + "\n")


def test_a_sibling_importing_a_sibling_breaks_the_layers(copy: Path) -> None:
    _append(copy / "octoric/sim/clock.py", "import octoric.xapps.occ.engine  # noqa")
    r = lint_imports(copy, copy / "pyproject.toml")
    assert r.returncode != 0
    assert "octoric.sim is not allowed to import octoric.xapps" in r.stdout
    assert "octoric.sim.clock -> octoric.xapps.occ.engine" in r.stdout


def test_a_cycle_breaks_the_acyclic_contract(copy: Path) -> None:
    # rc already imports kpm; kpm importing rc closes a cycle between two e2sm siblings
    _append(copy / "octoric/e2sm/kpm.py", "import octoric.e2sm.rc  # noqa")
    r = lint_imports(copy, copy / "pyproject.toml")
    assert r.returncode != 0
    assert "No cycles are allowed in octoric.e2sm" in r.stdout


def test_the_core_importing_an_area_breaks_its_contract(copy: Path) -> None:
    _append(copy / "octoric/config.py", "import octoric.sim.engine  # noqa")
    r = lint_imports(copy, copy / "pyproject.toml")
    assert r.returncode != 0
    assert "octoric.config is not allowed to import octoric.sim" in r.stdout
